//! The `serve` end of the ring transport (`serve --ring-fd N`, as `--isolate` starts its
//! children on Linux; see `crate::isolate::transport`): the protocol's messages, the same
//! JSON objects as the lines of `docs/serve-protocol.md`, come and go as frames in two
//! shared-memory rings instead of lines on stdin and stdout.
//!
//! Reading: whoever waits for something from the host reads the ring itself (the worker
//! waiting for its next request, a plugin call waiting for the answer to its `request`); the
//! first of them takes the reading turn, and what it reads for another goes to that one (a
//! condition variable), so the worker reads its requests without a thread in between, and a
//! reader is always there while anyone waits (a timer's request answered while the worker
//! runs a call that waits on the same plugin). The host sends one request at a time and
//! reads everything this side sends while it waits for the answer; what this side sends while
//! the host is not reading rings the doorbell (a blank line on the protocol descriptor).
//! Stdin stays open, carrying nothing: its end is the host's end.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::LineWriter;
use crate::isolate::transport::ring::{Consumer, Direction, Producer, Region, RingError};

/// How long a reader spins for the next message before it sleeps: the host's next request
/// often follows the last answer within microseconds.
const SPIN: Duration = Duration::from_micros(50);

/// Why a wait ended without what it waited for (the same as over stdin).
pub use super::stdin_link::Stopped;

/// What the readers share.
#[derive(Default)]
struct Inbound {
    /// A thread reads the ring now.
    reading: bool,
    /// Threads waiting on the condition variable.
    waiters: usize,
    /// Requests from the host, in order.
    jobs: VecDeque<Value>,
    /// Responses awaited by request id; `Some` once arrived.
    awaited: HashMap<String, Option<Result<Value, String>>>,
    closed: bool,
}

/// The child's end of the rings.
pub struct ChildRing {
    region: Arc<Region>,
    to_host: Mutex<Producer>,
    from_host: Mutex<Consumer>,
    inbound: Mutex<Inbound>,
    changed: Condvar,
    /// The last frame read (up to [`REHEARSED_BYTES`]), which the reader rehearses decoding
    /// while it waits for a request the host said is coming.
    last_frame: Arc<Mutex<Vec<u8>>>,
}

/// The longest frame kept for the reader's rehearsal.
const REHEARSED_BYTES: usize = 64 * 1024;

/// Maps the rings from the inherited descriptor `fd` (closed once mapped) for a child whose
/// protocol descriptor is `doorbell` (its `hello` goes there, then only doorbells).
pub fn ring_on_fd(fd: i32, doorbell: LineWriter) -> Result<Arc<ChildRing>, String> {
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open.
    if fd <= 2 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(format!(
            "--ring-fd {fd}: not an open file descriptor above 2"
        ));
    }
    // SAFETY: `fd` is open (checked above) and handed to this process by its parent for this
    // use alone; the OwnedFd owns it from now on (and closes it once the ring is mapped).
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let region = Region::open(&fd).map_err(|e| format!("--ring-fd: {e}"))?;
    drop(fd);
    let doorbell_region = Arc::clone(&region);
    let to_host =
        Producer::new(Arc::clone(&region), Direction::ToHost, SPIN).after_publish(move || {
            if doorbell_region.doorbell_due() {
                doorbell.text("");
            }
        });
    let last_frame: Arc<Mutex<Vec<u8>>> = Arc::default();
    let rehearsed = Arc::clone(&last_frame);
    let from_host = Consumer::new(Arc::clone(&region), Direction::ToChild).warming(move || {
        // What the host's next request makes this side do first: decode a message and
        // encode one (the last frame read stands in for both).
        if let Ok(frame) = rehearsed.try_lock()
            && let Ok(message) = serde_json::from_slice::<Value>(&frame)
        {
            std::hint::black_box(serde_json::to_vec(&message).ok());
        }
    });
    Ok(Arc::new(ChildRing {
        from_host: Mutex::new(from_host),
        last_frame,
        to_host: Mutex::new(to_host),
        region,
        inbound: Mutex::new(Inbound::default()),
        changed: Condvar::new(),
    }))
}

impl ChildRing {
    fn inbound(&self) -> MutexGuard<'_, Inbound> {
        self.inbound.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A writer whose every line is one frame to the host.
    pub fn writer(self: &Arc<Self>) -> LineWriter {
        LineWriter::to(Box::new(FrameWriter {
            ring: Arc::clone(self),
            buffer: Vec::new(),
        }))
    }

    /// The host's next request; `None` once the host has gone.
    pub fn next_job(&self) -> Option<Value> {
        self.wait_for(None, |inbound| inbound.jobs.pop_front()).ok()
    }

    /// Says that a response to `id` will be awaited (before the request goes out, so an
    /// answer read by another thread is kept).
    pub fn expect(&self, id: &str) {
        self.inbound().awaited.insert(id.to_owned(), None);
    }

    /// Waits for the response to `id` ([`ChildRing::expect`]ed), at most `timeout`.
    pub fn response(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Result<Value, String>, Stopped> {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let answer = self.wait_for(deadline, |inbound| {
            inbound.awaited.get_mut(id).and_then(Option::take)
        });
        self.inbound().awaited.remove(id);
        answer
    }

    /// The host has gone: every wait ends, now and later.
    pub fn close(&self) {
        self.region.close();
        self.inbound().closed = true;
        self.changed.notify_all();
    }

    /// Waits until `take` finds what it wants, reading the ring while no other thread does.
    fn wait_for<T>(
        &self,
        deadline: Option<Instant>,
        mut take: impl FnMut(&mut Inbound) -> Option<T>,
    ) -> Result<T, Stopped> {
        let mut inbound = self.inbound();
        loop {
            if let Some(found) = take(&mut inbound) {
                return Ok(found);
            }
            if inbound.closed {
                return Err(Stopped::Closed);
            }
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Err(Stopped::TimedOut);
            }
            if inbound.reading {
                inbound.waiters += 1;
                inbound = match deadline {
                    Some(deadline) => {
                        self.changed
                            .wait_timeout(inbound, deadline - now)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                    None => self
                        .changed
                        .wait(inbound)
                        .unwrap_or_else(|e| e.into_inner()),
                };
                inbound.waiters -= 1;
                continue;
            }
            inbound.reading = true;
            drop(inbound);
            let received = self
                .from_host
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .receive(deadline, SPIN);
            inbound = self.inbound();
            inbound.reading = false;
            match received {
                Ok(Some(frame)) => {
                    if frame.len() <= REHEARSED_BYTES
                        && let Ok(mut last) = self.last_frame.try_lock()
                    {
                        last.clear();
                        last.extend_from_slice(&frame);
                    }
                    sort(&mut inbound, &frame)
                }
                Ok(None) => {}
                Err(RingError::Closed) => inbound.closed = true,
                Err(RingError::Broken(why)) => {
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "pi-hooks serve: the host's ring is garbled ({why}); stopping"
                    );
                    inbound.closed = true;
                }
            }
            if inbound.waiters > 0 {
                self.changed.notify_all();
            }
        }
    }
}

/// Puts one message from the host where its reader finds it: a `response` with its request,
/// anything else in the request queue (the worker answers what it does not understand).
fn sort(inbound: &mut Inbound, frame: &[u8]) {
    let message = match serde_json::from_slice::<Value>(frame) {
        Ok(message) => message,
        Err(error) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "pi-hooks serve: a message from the host is not JSON ({error}); ignored"
            );
            return;
        }
    };
    if message.get("type").and_then(Value::as_str) == Some("response") {
        let id = message
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(slot) = inbound.awaited.get_mut(id) {
            let answer = match message.get("error") {
                Some(error) if !error.is_null() => Err(match error.as_str() {
                    Some(text) => text.to_owned(),
                    None => error.to_string(),
                }),
                _ => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            *slot = Some(answer);
        }
        // A response nobody waits for any more (its wait timed out) is dropped.
        return;
    }
    inbound.jobs.push_back(message);
}

/// A line writer's sink: each flushed line goes to the host as one frame.
struct FrameWriter {
    ring: Arc<ChildRing>,
    buffer: Vec<u8>,
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
        }
        if self.buffer.is_empty() {
            return Ok(());
        }
        let sent = self
            .ring
            .to_host
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(&self.buffer, None);
        self.buffer.clear();
        match sent {
            Ok(_) => Ok(()),
            Err(RingError::Closed) => Err(std::io::ErrorKind::BrokenPipe.into()),
            Err(RingError::Broken(why)) => Err(std::io::Error::other(why)),
        }
    }
}
