//! Timed dispatch: a chain runs on a worker thread, handed over once per event, while the
//! dispatching thread watches the handler in progress. A handler that overruns its limit
//! (time spent in UI dialogs excluded) is abandoned: reported, its plugin marked busy until
//! the call returns, and the rest of the chain continues on a fresh worker.
//!
//! The hand-off is all a timed event costs beyond its handlers, so it is kept cheap: each
//! worker keeps one [`Handoff`] slot for its whole life (no channel per event), and both sides
//! wait with a bounded [`Spin`] before they park. Back-to-back events then pass without a
//! sleeping thread to wake on either side; once the spin window has passed both sides park,
//! so an idle host burns no CPU.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::{Chain, ExtensionError, Flow, Slot, step};
use crate::host_api::context::CallScope;

/// How long a waiting side keeps looking before it parks: longer than the gap between
/// back-to-back events and than a chain of quick handlers, short enough to cost an idle host
/// nothing.
const SPIN_WINDOW: Duration = Duration::from_micros(50);

/// Spin hints before a [`Spin`] starts yielding. Few: on a loaded machine the other side
/// often waits for this very core, and longer pure spinning measured slower (see
/// loader/host/benches/dispatch.rs, `emit_timed`).
const SPIN_HINTS: u32 = 4;

/// The shortest a watching dispatcher parks before it looks at the handler's clock again (a
/// handler paused in a dialog is polled at this pace).
const MIN_WAIT: Duration = Duration::from_millis(1);

/// A bounded busy wait: a few spin hints, then `yield_now` (which lets the other side run if
/// it shares this core) until [`SPIN_WINDOW`] has passed.
struct Spin {
    until: Instant,
    hints: u32,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            until: Instant::now() + SPIN_WINDOW,
            hints: 0,
        }
    }

    /// Waits a moment; false once the window is over (the caller parks then).
    fn pause(&mut self) -> bool {
        if self.hints < SPIN_HINTS {
            self.hints += 1;
            std::hint::spin_loop();
            return true;
        }
        if Instant::now() >= self.until {
            return false;
        }
        thread::yield_now();
        true
    }
}

/// One event's dispatch as a worker runs it: the chain from `start`, as job `generation`.
trait Job: Send + Sync {
    fn run(&self, generation: u64, start: usize);
}

/// A job handed to a worker.
struct Posted {
    job: Arc<dyn Job>,
    generation: u64,
    start: usize,
}

/// Where a worker receives its jobs, one at a time, for its whole life.
#[derive(Default)]
struct Handoff {
    posted: Mutex<Option<Posted>>,
    /// Whether `posted` holds a job: the worker spins on this without taking the lock.
    has_job: AtomicBool,
    /// The worker's owner is gone: the thread ends after the job it may still be running.
    closed: AtomicBool,
}

impl Handoff {
    /// The worker's side: waits for the next job (spinning for a while after the last one,
    /// then parked); `None` once the worker is closed.
    fn wait_for_job(&self) -> Option<Posted> {
        let mut spin = Spin::new();
        loop {
            if self.has_job.swap(false, Ordering::Acquire)
                && let Some(posted) = lock(&self.posted).take()
            {
                return Some(posted);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            if !spin.pause() {
                // A post or a close unparks this thread; a wake-up without either loops.
                thread::park();
            }
        }
    }
}

/// A worker thread and its hand-off slot. Dropping it closes the slot: the thread ends when
/// it is next idle (an abandoned worker ends once its stuck call returns).
struct Worker {
    handoff: Arc<Handoff>,
    thread: Thread,
}

impl Worker {
    fn spawn() -> Worker {
        let handoff = Arc::new(Handoff::default());
        let serving = handoff.clone();
        let thread = thread::Builder::new()
            .name("pi-hooks-dispatch".into())
            .spawn(move || {
                // Each job is dropped before the next wait, so an idle worker keeps no
                // dispatch (and none of its plugins) alive.
                while let Some(Posted {
                    job,
                    generation,
                    start,
                }) = serving.wait_for_job()
                {
                    job.run(generation, start);
                }
            })
            .expect("spawn a dispatch worker thread")
            .thread()
            .clone();
        Worker { handoff, thread }
    }

    /// Hands `posted` to the worker, waking it if it parked (a cheap no-op while it spins).
    fn post(&self, posted: Posted) {
        *lock(&self.handoff.posted) = Some(posted);
        self.handoff.has_job.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.handoff.closed.store(true, Ordering::Release);
        self.thread.unpark();
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
    /// How many handlers were called (for the hook trace's summary).
    called: usize,
    finished: bool,
    /// A panic of the host code in the current job, resumed on the dispatcher's thread (as
    /// an untimed dispatch would have raised it there).
    panic: Option<Box<dyn Any + Send>>,
}

/// One event's dispatch, shared by the dispatcher and the job on a worker. An abandoned job
/// may outlive the dispatch; its generation is stale then and it touches nothing.
struct Dispatch<C> {
    state: Mutex<Shared<C>>,
    slots: Arc<[Slot]>,
    scope: Arc<CallScope>,
    event: String,
    /// The current job has returned. Set under the state lock by a job whose generation is
    /// current, cleared under it before a job is posted; the dispatcher spins on it lock-free.
    returned: OwnLine<AtomicBool>,
    /// The dispatching thread, unparked when the job returns.
    dispatcher: Thread,
}

/// A value on a cache line of its own, so that a thread spinning on it does not slow down the
/// thread writing the data next to it (each write would pull the line back across cores).
#[repr(align(128))]
struct OwnLine<T>(T);

/// How a watched job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// It returned: its worker can take the next job.
    Returned,
    /// Its handler in progress overran and was abandoned with its worker.
    Abandoned,
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

    /// Runs `chain` over `slots` with `limit` per handler; also returns how many handlers
    /// were called.
    pub(crate) fn run<C: Chain>(
        &self,
        event: &str,
        slots: Arc<[Slot]>,
        scope: Arc<CallScope>,
        chain: C,
        limit: Duration,
    ) -> (C, Vec<ExtensionError>, usize) {
        let dispatch = Arc::new(Dispatch {
            state: Mutex::new(Shared {
                chain: Some(chain),
                errors: Vec::new(),
                generation: 0,
                current: None,
                next: 0,
                called: 0,
                finished: false,
                panic: None,
            }),
            slots,
            scope,
            event: event.to_owned(),
            returned: OwnLine(AtomicBool::new(false)),
            dispatcher: thread::current(),
        });
        while let Some((generation, start)) = dispatch.next_job() {
            let worker = self.take();
            worker.post(Posted {
                job: dispatch.clone(),
                generation,
                start,
            });
            if watch(&dispatch, limit) == Watched::Returned {
                self.give_back(worker);
                dispatch.resume_panic();
            }
        }
        dispatch.finish()
    }
}

impl<C: Chain> Dispatch<C> {
    /// The generation and first handler of the next job, or `None` when the chain is done.
    fn next_job(&self) -> Option<(u64, usize)> {
        let s = lock(&self.state);
        if s.finished || s.next >= self.slots.len() {
            return None;
        }
        self.returned.0.store(false, Ordering::Relaxed);
        Some((s.generation, s.next))
    }

    /// Spins a while for the job to return; true if it did.
    fn spin_until_returned(&self) -> bool {
        let mut spin = Spin::new();
        loop {
            if self.returned.0.load(Ordering::Acquire) {
                return true;
            }
            if !spin.pause() {
                return false;
            }
        }
    }

    /// Parks until the job returns or `wait` has passed; true if it returned.
    fn park_until_returned(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            if self.returned.0.load(Ordering::Acquire) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // The job unparks this thread when it returns; an early wake-up loops.
            thread::park_timeout(deadline - now);
        }
    }

    /// Raises on this thread a panic the job caught.
    fn resume_panic(&self) {
        let panic = lock(&self.state).panic.take();
        if let Some(payload) = panic {
            panic::resume_unwind(payload);
        }
    }

    /// Ends the dispatch: the chain, the errors in the order they happened, and how many
    /// handlers were called.
    fn finish(&self) -> (C, Vec<ExtensionError>, usize) {
        let mut s = lock(&self.state);
        // Abandoned jobs may still hold the Arc, but their generation is stale: they never
        // touch the state again.
        s.generation += 1;
        let chain = s.chain.take().expect("the chain is taken once");
        (chain, std::mem::take(&mut s.errors), s.called)
    }
}

impl<C: Chain> Job for Dispatch<C> {
    /// Runs the chain, then tells the dispatcher, unless it moved on without this job.
    fn run(&self, generation: u64, start: usize) {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_job(self, generation, start);
        }));
        let mut s = lock(&self.state);
        if s.generation != generation {
            return;
        }
        if let Err(payload) = outcome {
            s.panic = Some(payload);
        }
        self.returned.0.store(true, Ordering::Release);
        drop(s);
        self.dispatcher.unpark();
    }
}

/// Waits for the job on a worker; abandons its handler in progress when that overruns.
fn watch<C: Chain>(dispatch: &Dispatch<C>, limit: Duration) -> Watched {
    if dispatch.spin_until_returned() {
        return Watched::Returned;
    }
    let scope = &*dispatch.scope;
    loop {
        let wait = match lock(&dispatch.state).current {
            Some((_, started, paused_at_start)) => {
                let paused = scope.pause_clock().paused().saturating_sub(paused_at_start);
                (started + limit + paused).saturating_duration_since(Instant::now())
            }
            None => limit,
        };
        if dispatch.park_until_returned(wait.max(MIN_WAIT)) {
            return Watched::Returned;
        }
        let mut s = lock(&dispatch.state);
        let Some((index, started, paused_at_start)) = s.current else {
            continue;
        };
        let paused = scope.pause_clock().paused().saturating_sub(paused_at_start);
        let now = Instant::now();
        if scope.pause_clock().in_dialog() || now < started + limit + paused {
            continue;
        }
        // Abandon: the job may no longer touch the state; its plugin is busy until the
        // call returns (the job clears the mark then).
        s.generation += 1;
        s.current = None;
        s.next = index + 1;
        let slot = &dispatch.slots[index];
        slot.state.mark_stuck_if_busy();
        let message = format!("timed out after {}ms", limit.as_millis());
        let Shared { chain, errors, .. } = &mut *s;
        let chain = chain
            .as_mut()
            .expect("the chain is present while dispatching");
        let traced = crate::observe::trace::on()
            .then(|| crate::observe::trace::Decision::timeout(&message, &dispatch.event));
        if chain.fail(slot, message, errors, &dispatch.event, scope) == Flow::Stop {
            s.finished = true;
        }
        drop(s);
        if let Some(decision) = traced {
            let ran = now
                .saturating_duration_since(started)
                .saturating_sub(paused);
            crate::observe::trace::handler(&dispatch.event, &slot.state, ran, &decision);
        }
        return Watched::Abandoned;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worker's side: call handlers from `start` while this job's generation is current.
fn run_job<C: Chain>(dispatch: &Dispatch<C>, generation: u64, start: usize) {
    let (shared, scope, event) = (&dispatch.state, &*dispatch.scope, &*dispatch.event);
    let traced = crate::observe::trace::on();
    for (index, slot) in dispatch.slots.iter().enumerate().skip(start) {
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
        let mut began = None;
        let outcome = slot.call(&payload, scope, || {
            let now = Instant::now();
            began = Some(now);
            let mut s = lock(shared);
            if s.generation == generation {
                s.current = Some((index, now, scope.pause_clock().paused()));
                s.called += 1;
            }
        });
        let traced = traced.then(|| {
            let elapsed = began.map_or(Duration::ZERO, |began| began.elapsed());
            (
                elapsed,
                crate::observe::trace::Decision::of(event, &outcome),
            )
        });
        let mut s = lock(shared);
        if s.generation != generation {
            // The dispatcher gave up on this call and moved on (the call cleared its plugin's
            // "stuck" mark when it returned).
            drop(s);
            if let Some((elapsed, _)) = traced {
                crate::observe::trace::handler(
                    event,
                    &slot.state,
                    elapsed,
                    &crate::observe::trace::Decision::late(),
                );
            }
            return;
        }
        if let Some((elapsed, decision)) = &traced {
            crate::observe::trace::handler(event, &slot.state, *elapsed, decision);
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
