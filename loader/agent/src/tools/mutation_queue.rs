//! pi 1.6's `core/tools/file-mutation-queue.js`: `write` and `edit` calls that change the same
//! file run one at a time, in the order the calls were queued; calls on different files still
//! run in parallel.
//!
//! The file is keyed as pi keys it: its real path, or the resolved path when it does not exist
//! yet. pi queues a call when its `execute` starts, and its agent loop starts the calls of one
//! message in source order, so same-file calls run in source order. Here the agent loop takes a
//! [`Ticket`] for each call in source order before the calls run concurrently
//! ([`crate::tools::Tool::mutated_file`]), and the tool waits for its turn with
//! [`Ticket::wait`]; a tool called without a ticket queues itself when it runs
//! ([`Ticket::reserve`] then [`Ticket::into_turn`]). A ticket dropped unused (the call was
//! aborted, or a `tool_call` handler changed the path) gives its place up.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The line of one file: the next ticket to hand out, the one being served, and tickets
/// finished (or given up) out of order.
#[derive(Default)]
struct Line {
    next: u64,
    serving: u64,
    finished: BTreeSet<u64>,
}

#[derive(Default)]
struct Queue {
    line: Mutex<Line>,
    turn: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_for(&self, number: u64) {
        let mut line = self.lock();
        while line.serving != number {
            line = self.turn.wait(line).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn finish(&self, number: u64) {
        let mut line = self.lock();
        line.finished.insert(number);
        let mut serving = line.serving;
        while line.finished.remove(&serving) {
            serving += 1;
        }
        line.serving = serving;
        drop(line);
        self.turn.notify_all();
    }
}

/// pi's `getMutationQueueKey`: the real path, else (a missing file) the path itself.
pub fn queue_key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A place in the line of one file.
pub struct Ticket {
    key: PathBuf,
    queue: Arc<Queue>,
    number: u64,
    used: AtomicBool,
}

/// The turn of one call: the file is its own until this is dropped.
pub struct Turn {
    queue: Arc<Queue>,
    number: u64,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.queue.finish(self.number);
    }
}

impl Ticket {
    /// Queues a change of `path` (an absolute path) after those queued before.
    pub fn reserve(path: &Path) -> Ticket {
        static QUEUES: Mutex<Option<HashMap<PathBuf, Arc<Queue>>>> = Mutex::new(None);
        let key = queue_key(path);
        let mut queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
        let queues = queues.get_or_insert_with(HashMap::new);
        // A line nobody holds a ticket for is done with.
        queues.retain(|_, queue| Arc::strong_count(queue) > 1);
        let queue = queues.entry(key.clone()).or_default().clone();
        let number = {
            let mut line = queue.lock();
            line.next += 1;
            line.next - 1
        };
        Ticket {
            key,
            queue,
            number,
            used: AtomicBool::new(false),
        }
    }

    /// Whether this ticket is for `path`.
    pub fn is_for(&self, path: &Path) -> bool {
        self.key == queue_key(path)
    }

    /// Waits for this ticket's turn. A ticket serves one turn: waiting again queues anew.
    pub fn wait(&self) -> Turn {
        if self.used.swap(true, Ordering::SeqCst) {
            return Ticket::reserve(&self.key).into_turn();
        }
        self.queue.wait_for(self.number);
        Turn {
            queue: self.queue.clone(),
            number: self.number,
        }
    }

    /// Waits for this ticket's turn.
    pub fn into_turn(self) -> Turn {
        self.wait()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.used.swap(true, Ordering::SeqCst) {
            self.queue.finish(self.number);
        }
    }
}

/// The turn to change `path` (absolute): with the call's `ticket` when it is for that file, else
/// queued now.
pub fn turn_for(ticket: Option<&Ticket>, path: &Path) -> Turn {
    match ticket {
        Some(ticket) if ticket.is_for(path) => ticket.wait(),
        _ => Ticket::reserve(path).into_turn(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn turns_come_in_ticket_order_and_unused_tickets_give_way() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let order = Mutex::new(Vec::new());
        let tickets: Vec<Ticket> = (0..4).map(|_| Ticket::reserve(&file)).collect();
        let mut tickets = tickets.into_iter();
        let (t0, t1, t2, t3) = (
            tickets.next().unwrap(),
            tickets.next().unwrap(),
            tickets.next().unwrap(),
            tickets.next().unwrap(),
        );
        std::thread::scope(|s| {
            // Started in reverse order: each still waits for those before it.
            s.spawn(|| {
                let _turn = t3.wait();
                order.lock().unwrap().push(3);
            });
            s.spawn(|| {
                let _turn = t1.wait();
                order.lock().unwrap().push(1);
            });
            std::thread::sleep(Duration::from_millis(50));
            s.spawn(move || drop(t2));
            s.spawn(|| {
                let _turn = t0.wait();
                std::thread::sleep(Duration::from_millis(50));
                order.lock().unwrap().push(0);
            });
        });
        assert_eq!(*order.lock().unwrap(), [0, 1, 3]);
        // Another file is not held up by a turn on this one.
        let _held = Ticket::reserve(&file).into_turn();
        drop(Ticket::reserve(&dir.path().join("g")).into_turn());
    }
}
