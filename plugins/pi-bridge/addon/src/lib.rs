//! The pi bridge's Node-API addon (`plugins/pi-bridge/`, loaded by `serve-client.ts`): the
//! host's end of the memfd ring transport (`pi_hooks_host::isolate::transport`) for pi's node,
//! so a gated event reaches `pi-hooks serve --ring-fd 3` and its answer comes back without a
//! pipe, a thread or an event-loop turn in between.
//!
//! The bridge creates a [`NodeRing`], hands [`NodeRing::child_fd`] to serve through a `stdio`
//! slot of node's `spawn` (then [`NodeRing::release_child_fd`]), and sends every request with
//! [`NodeRing::call`]: a **synchronous** call that writes the frame and reads frames until the
//! answer to it arrives, spinning briefly then sleeping on a futex, but never longer than the
//! bound it is given (a millisecond or two): a slow or stuck plugin leaves the request pending,
//! its answer read later by [`NodeRing::drain`] when serve rings its doorbell (a blank line on
//! its stdout, sent only while no call reads), so pi's event loop is never held longer than
//! that. Every frame read (answers, serve's own requests to the client, notifications) is
//! handed back to JavaScript, which routes them as it routes the pipe's lines: a frame carries
//! the same JSON object as a line of the serve protocol (docs/serve-protocol.md).
//!
//! Each method ends with the ring's reading flag down and nothing left unread (or
//! [`Read::more`] set): what serve publishes later rings its doorbell.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use napi::{Error, Result};
use napi_derive::napi;
use pi_hooks_host::isolate::transport::host::{HostRing, RingError};

/// The longest a send waits for room in a full ring (serve reads it whenever a thread of its
/// waits, so only a frame larger than the room left, sent while every thread of serve runs a
/// plugin, waits at all). Past it the frame is cut and the ring is of no further use: the
/// call fails as broken and the bridge ends serve (its supervisor restarts it).
const SEND_LIMIT: Duration = Duration::from_millis(1000);

/// The longest a drain goes on reading frames that keep coming (a large one streaming in);
/// then it returns with [`Read::more`] set and the bridge drains again on its next turn.
const DRAIN_LIMIT: Duration = Duration::from_millis(2);

/// What a call or a drain read.
#[napi(object)]
pub struct Read {
    /// The frames read, in order, each a JSON object, joined by line feeds (a frame of the
    /// serve protocol never holds a raw line feed).
    pub frames: String,
    /// The answer (`result` or `error`) to the call's request was among them.
    pub answered: bool,
    /// Published frames are still unread: drain again soon (no doorbell will ring for them).
    pub more: bool,
}

/// The host's end of the rings shared with one `pi-hooks serve` child.
#[napi]
pub struct NodeRing {
    ring: Option<HostRing>,
    child_fd: Option<OwnedFd>,
}

fn failed(error: RingError) -> Error {
    match error {
        RingError::Closed => Error::from_reason("closed: the ring was closed"),
        RingError::Broken(why) => Error::from_reason(format!("broken: {why}")),
    }
}

/// The `type` and `id` of a frame, to find the answer to a call.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    id: Option<serde_json::Value>,
}

/// What one frame means to a call waiting for the answer to `id`.
enum Seen {
    /// The answer (`result` or `error` with this id).
    Answer,
    /// A request of serve's: JavaScript answers it, and serve waits for that first.
    Request,
    Other,
}

fn classify(frame: &[u8], id: u32) -> Seen {
    let Ok(head) = serde_json::from_slice::<Head<'_>>(frame) else {
        return Seen::Other;
    };
    match head.kind.as_deref() {
        Some("result" | "error")
            if head.id.as_ref().and_then(serde_json::Value::as_u64) == Some(u64::from(id)) =>
        {
            Seen::Answer
        }
        Some("request") => Seen::Request,
        _ => Seen::Other,
    }
}

fn push(frames: &mut Vec<u8>, frame: &[u8]) {
    if !frames.is_empty() {
        frames.push(b'\n');
    }
    frames.extend_from_slice(frame);
}

fn text(frames: Vec<u8>) -> Result<String> {
    String::from_utf8(frames)
        .map_err(|_| Error::from_reason("broken: serve sent a frame that is not UTF-8"))
}

#[napi]
impl NodeRing {
    /// Creates the rings (a `memfd`, close-on-exec); [`NodeRing::child_fd`] is serve's end.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        let (ring, fd) = HostRing::create().map_err(Error::from_reason)?;
        Ok(NodeRing {
            ring: Some(ring),
            child_fd: Some(fd),
        })
    }

    /// The descriptor to hand to serve (a `stdio` slot of `spawn`, and `--ring-fd` that
    /// slot's number); -1 once released.
    #[napi(getter)]
    pub fn child_fd(&self) -> i32 {
        self.child_fd.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Closes this process's copy of serve's descriptor (once serve was spawned with it).
    #[napi]
    pub fn release_child_fd(&mut self) {
        self.child_fd = None;
    }

    fn ring(&mut self) -> Result<&mut HostRing> {
        self.ring.as_mut().ok_or_else(|| failed(RingError::Closed))
    }

    /// Sends `frame` (a request with the id `id`) and reads until its answer arrives, serve
    /// sends a request of its own (JavaScript must answer it first), or `bound_us`
    /// microseconds pass (then the answer comes later, through [`NodeRing::drain`]).
    #[napi]
    pub fn call(&mut self, frame: String, id: u32, bound_us: u32) -> Result<Read> {
        let started = Instant::now();
        let ring = self.ring()?;
        ring.set_reading(true);
        let result = Self::send_and_wait(ring, frame.as_bytes(), id, started, bound_us);
        match result {
            Ok((mut frames, mut answered)) => {
                let more = Self::settle(ring, &mut frames, started, (!answered).then_some(id))?;
                // An answer read by the settling counts as well (it came just after the wait).
                answered = answered || more.1;
                let more = more.0;
                Ok(Read {
                    frames: text(frames)?,
                    answered,
                    more,
                })
            }
            Err(error) => {
                ring.set_reading(false);
                Err(error)
            }
        }
    }

    fn send_and_wait(
        ring: &mut HostRing,
        frame: &[u8],
        id: u32,
        started: Instant,
        bound_us: u32,
    ) -> Result<(Vec<u8>, bool)> {
        if !ring
            .send(frame, Some(Instant::now() + SEND_LIMIT))
            .map_err(failed)?
        {
            return Err(Error::from_reason(
                "broken: the ring stayed full (serve did not read)",
            ));
        }
        let deadline = started + Duration::from_micros(u64::from(bound_us));
        let mut frames = Vec::new();
        loop {
            let Some(read) = ring.receive(Some(deadline)).map_err(failed)? else {
                return Ok((frames, false));
            };
            push(&mut frames, &read);
            match classify(&read, id) {
                Seen::Answer => return Ok((frames, true)),
                Seen::Request => return Ok((frames, false)),
                Seen::Other => {}
            }
        }
    }

    /// Sends `frame` (a response to a request of serve's, say) and reads what is already
    /// there, without waiting.
    #[napi]
    pub fn send(&mut self, frame: String) -> Result<Read> {
        let started = Instant::now();
        let ring = self.ring()?;
        ring.set_reading(true);
        match ring.send(frame.as_bytes(), Some(started + SEND_LIMIT)) {
            Ok(true) => {}
            Ok(false) => {
                ring.set_reading(false);
                return Err(Error::from_reason(
                    "broken: the ring stayed full (serve did not read)",
                ));
            }
            Err(error) => {
                ring.set_reading(false);
                return Err(failed(error));
            }
        }
        Self::read_published(ring, started)
    }

    /// Reads every frame already published, without waiting (serve rang its doorbell).
    #[napi]
    pub fn drain(&mut self) -> Result<Read> {
        let started = Instant::now();
        let ring = self.ring()?;
        ring.set_reading(true);
        Self::read_published(ring, started)
    }

    /// What is published now ([`NodeRing::settle`]), as a [`Read`] that answers no call.
    fn read_published(ring: &mut HostRing, started: Instant) -> Result<Read> {
        let mut frames = Vec::new();
        let (more, _) = Self::settle(ring, &mut frames, started, None)?;
        Ok(Read {
            frames: text(frames)?,
            answered: false,
            more,
        })
    }

    /// Reads what is published (the reading flag up), then lowers the flag; data published
    /// meanwhile (serve saw the flag up, so rang no doorbell) is read too, until
    /// [`DRAIN_LIMIT`] passes: then `true` first, the caller drains again soon. Second:
    /// whether the answer to `id` was among the frames read.
    fn settle(
        ring: &mut HostRing,
        frames: &mut Vec<u8>,
        started: Instant,
        id: Option<u32>,
    ) -> Result<(bool, bool)> {
        let mut answered = false;
        loop {
            loop {
                match ring.receive(Some(Instant::now())) {
                    Ok(Some(frame)) => {
                        if let Some(id) = id {
                            answered = answered || matches!(classify(&frame, id), Seen::Answer);
                        }
                        push(frames, &frame);
                    }
                    Ok(None) => break,
                    Err(error) => {
                        ring.set_reading(false);
                        return Err(failed(error));
                    }
                }
            }
            ring.set_reading(false);
            if !ring.has_data() {
                return Ok((false, answered));
            }
            if started.elapsed() >= DRAIN_LIMIT {
                return Ok((true, answered));
            }
            ring.set_reading(true);
        }
    }

    /// Whether serve published something not read yet.
    #[napi]
    pub fn has_data(&self) -> bool {
        self.ring.as_ref().is_some_and(HostRing::has_data)
    }

    /// Tells serve a request is likely soon (the model finished a tool call's arguments): its
    /// reader, if it sleeps, wakes and spins for it a while.
    #[napi]
    pub fn get_ready(&self) {
        if let Some(ring) = &self.ring {
            ring.get_ready();
        }
    }

    /// Closes the rings (serve has gone, or is being stopped) and frees them.
    #[napi]
    pub fn close(&mut self) {
        if let Some(ring) = self.ring.take() {
            ring.closer()();
        }
        self.child_fd = None;
    }
}
