//! Timed dispatch: a chain runs on a worker thread, handed over once per event, while the
//! dispatching thread watches the handler in progress. A handler that overruns its limit
//! (time spent in UI dialogs excluded) is abandoned: reported, its plugin marked busy until
//! the call returns, and the rest of the chain continues on a fresh worker.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Chain, ExtensionError, Flow, Slot, step};
use crate::host_api::context::CallScope;

type Job = Box<dyn FnOnce() + Send>;

/// A worker thread waiting for jobs; it ends when its sender is dropped.
struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    fn spawn() -> Worker {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("pi-hooks-dispatch".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })
            .expect("spawn a dispatch worker thread");
        Worker { jobs }
    }
}

/// Idle workers kept for the next timed dispatch.
#[derive(Default)]
pub(crate) struct Workers {
    idle: Mutex<Vec<Worker>>,
}

/// What the dispatcher and the worker share, under one lock.
struct Shared<C> {
    /// Taken out by the dispatcher at the end (an abandoned job may still hold the `Arc`).
    chain: Option<C>,
    errors: Vec<ExtensionError>,
    /// The job allowed to touch the state; the dispatcher bumps it to abandon a job.
    generation: u64,
    /// The handler in progress: index, start, paused time at start.
    current: Option<(usize, Instant, Duration)>,
    /// Index of the next handler to call.
    next: usize,
    finished: bool,
}

impl Workers {
    fn take(&self) -> Worker {
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(Worker::spawn)
    }

    fn give_back(&self, worker: Worker) {
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(worker);
    }

    /// Runs `chain` over `slots` with `limit` per handler.
    pub(crate) fn run<C: Chain>(
        &self,
        event: &str,
        slots: Arc<[Slot]>,
        scope: Arc<CallScope>,
        chain: C,
        limit: Duration,
    ) -> (C, Vec<ExtensionError>) {
        let shared = Arc::new(Mutex::new(Shared {
            chain: Some(chain),
            errors: Vec::new(),
            generation: 0,
            current: None,
            next: 0,
            finished: false,
        }));
        loop {
            let (generation, start) = {
                let s = lock(&shared);
                if s.finished || s.next >= slots.len() {
                    break;
                }
                (s.generation, s.next)
            };
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let job = {
                let (shared, slots, scope, event) = (
                    shared.clone(),
                    slots.clone(),
                    scope.clone(),
                    event.to_owned(),
                );
                Box::new(move || {
                    run_job(&shared, &slots, &scope, &event, generation, start);
                    let _ = done_tx.send(());
                })
            };
            let worker = self.take();
            if worker.jobs.send(job).is_err() {
                // The worker thread died (it never should); run on a new one next round.
                continue;
            }
            if self.watch(event, &slots, &scope, &shared, &done_rx, limit) {
                self.give_back(worker);
            }
        }
        let mut s = lock(&shared);
        // Abandoned jobs may still hold the Arc, but their generation is stale: they never
        // touch the state again.
        s.generation += 1;
        let chain = s.chain.take().expect("the chain is taken once");
        (chain, std::mem::take(&mut s.errors))
    }

    /// Waits for the job; returns true when it finished (the worker can be reused), false when
    /// the handler in progress was abandoned for overrunning.
    fn watch<C: Chain>(
        &self,
        event: &str,
        slots: &[Slot],
        scope: &CallScope,
        shared: &Arc<Mutex<Shared<C>>>,
        done: &mpsc::Receiver<()>,
        limit: Duration,
    ) -> bool {
        loop {
            let wait = match lock(shared).current {
                Some((_, started, paused_at_start)) => {
                    let paused = scope.pause_clock().paused().saturating_sub(paused_at_start);
                    (started + limit + paused).saturating_duration_since(Instant::now())
                }
                None => limit,
            };
            match done.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return true,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let mut s = lock(shared);
            let Some((index, started, paused_at_start)) = s.current else {
                continue;
            };
            let paused = scope.pause_clock().paused().saturating_sub(paused_at_start);
            if scope.pause_clock().in_dialog() || Instant::now() < started + limit + paused {
                continue;
            }
            // Abandon: the job may no longer touch the state; its plugin is busy until the
            // call returns (the job clears the mark then).
            s.generation += 1;
            s.current = None;
            s.next = index + 1;
            let slot = &slots[index];
            slot.state.mark_stuck_if_busy();
            let message = format!("timed out after {}ms", limit.as_millis());
            let Shared { chain, errors, .. } = &mut *s;
            let chain = chain
                .as_mut()
                .expect("the chain is present while dispatching");
            if chain.fail(slot, message, errors, event, scope) == Flow::Stop {
                s.finished = true;
            }
            return false;
        }
    }
}

fn lock<C>(shared: &Mutex<Shared<C>>) -> std::sync::MutexGuard<'_, Shared<C>> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worker's side: call handlers from `start` while this job's generation is current.
fn run_job<C: Chain>(
    shared: &Mutex<Shared<C>>,
    slots: &[Slot],
    scope: &CallScope,
    event: &str,
    generation: u64,
    start: usize,
) {
    for (index, slot) in slots.iter().enumerate().skip(start) {
        let payload = {
            let mut s = lock(shared);
            if s.generation != generation {
                return;
            }
            s.chain
                .as_mut()
                .expect("the chain is present while dispatching")
                .payload()
                .clone()
        };
        // The clock starts when the plugin is free and the call begins.
        let outcome = slot.call(&payload, scope, || {
            let mut s = lock(shared);
            if s.generation == generation {
                s.current = Some((index, Instant::now(), scope.pause_clock().paused()));
            }
        });
        let mut s = lock(shared);
        if s.generation != generation {
            // The dispatcher gave up on this call and moved on (the call cleared its plugin's
            // "stuck" mark when it returned).
            return;
        }
        s.current = None;
        s.next = index + 1;
        let Shared { chain, errors, .. } = &mut *s;
        let chain = chain
            .as_mut()
            .expect("the chain is present while dispatching");
        if step(chain, slot, outcome, scope, errors, event) == Flow::Stop {
            s.finished = true;
            return;
        }
    }
}
