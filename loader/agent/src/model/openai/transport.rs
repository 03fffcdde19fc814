//! The HTTP side: `POST {baseUrl}/chat/completions` with ureq (a small synchronous client:
//! the agent loop calls the model on a thread of its own, so nothing here needs the async
//! runtime), the reply read as server-sent events by `eventsource-stream`, and every failure
//! turned into the message pi's provider would give (the OpenAI SDK's forms: `401 Invalid
//! API key`, `500 status code (no body)`, `Connection error.`).

use std::io::Read;

use crate::tools::CancelToken;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use eventsource_stream::{EventStream, Eventsource};
use serde_json::Value;

/// The HTTP client every request of this process shares (connections are reused).
fn agent() -> &'static ureq::Agent {
    static AGENT: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            .user_agent(concat!("pi-hooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    })
}

/// What the request thread hands over: the outcome of the request (`Err`: pi's message),
/// then the body's bytes as they are read (an empty buffer: the body ended).
enum Received {
    Opened(Result<(), String>),
    Bytes(std::io::Result<Vec<u8>>),
}

/// The error text of a request or stream ended by an abort.
pub const ABORTED: &str = "Request was aborted";

/// How often a silent request looks whether it was aborted.
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// Buffers read ahead of the decoder.
const READ_AHEAD: usize = 64;

/// The most one server-sent event may hold: 16 MiB, as one RPC or serve line. A larger one
/// (a server that streams 50 MB without an event boundary) ends the turn with
/// `too_large`'s message instead of being buffered whole.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// How long a stream may go without an event before the turn ends (`streamIdleTimeout` in
/// settings.json overrides it): ten minutes, the OpenAI SDK's request timeout.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// The message of a stream that sent an event larger than [`MAX_EVENT_BYTES`].
fn too_large() -> String {
    format!(
        "terminated: the server sent a stream event larger than {} MiB, the most one event may hold",
        MAX_EVENT_BYTES >> 20
    )
}

/// The message of a stream that stayed without an event for `idle`.
fn timed_out(idle: Duration) -> String {
    format!(
        "Request timed out. (no stream event for {} ms; the limit is streamIdleTimeout in settings.json)",
        idle.as_millis()
    )
}

/// Sends `body` to `url` and returns its event stream, or pi's message for why not.
///
/// The request runs on a thread of its own, which reads the body in whole buffers (one
/// hand-over per read, not per event); the events are decoded on the caller's thread. So an
/// abort (`cancel`) ends the wait at once even while the server is silent: `open` and
/// [`Events::next_chunk`] then answer [`ABORTED`], and the thread stops at its next read and
/// drops the connection.
///
/// A stream that goes `idle` without an event (silent, or trickling bytes that never make
/// one) ends with "Request timed out."; so does a server that does not answer the request
/// within `idle`.
pub fn open(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    cancel: &CancelToken,
    idle: Duration,
) -> Result<Events, String> {
    let mut request = agent()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let body = body.to_owned();
    let (sender, receiver) = std::sync::mpsc::sync_channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("pi-hooks-model".into())
        .spawn(move || {
            let response = match request.send(body) {
                Ok(response) => response,
                Err(error) => {
                    let _ = sender.send(Received::Opened(Err(request_error(&error))));
                    return;
                }
            };
            let status = response.status().as_u16();
            let mut reader = response.into_body().into_reader();
            if status >= 400 {
                let mut text = String::new();
                let _ = reader.take(1 << 20).read_to_string(&mut text);
                let _ = sender.send(Received::Opened(Err(status_error(status, &text))));
                return;
            }
            if sender.send(Received::Opened(Ok(()))).is_err() {
                return;
            }
            let mut buffer = vec![0; 64 * 1024];
            loop {
                let read = match reader.read(&mut buffer) {
                    Ok(n) => Ok(buffer[..n].to_vec()),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let last = !matches!(&read, Ok(bytes) if !bytes.is_empty());
                if sender.send(Received::Bytes(read)).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start the request thread: {e}"))?;
    let last_event = Arc::new(Mutex::new(Instant::now()));
    let chunks = ReaderChunks {
        receiver,
        cancel: cancel.clone(),
        idle,
        last_event: last_event.clone(),
        pending: Vec::new(),
        lines: LineCounter::default(),
        ended: false,
    };
    match chunks.next()? {
        Some(Received::Opened(Ok(()))) => {}
        Some(Received::Opened(Err(error))) => return Err(error),
        _ => return Err("the request thread ended without an answer".into()),
    }
    *last_event.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    Ok(Events {
        stream: chunks.eventsource(),
        done: false,
        last_event,
    })
}

/// The OpenAI SDK's message for a failed request: a connection that could not be made reads
/// `Connection error.` (with the cause after it here); anything else as ureq words it.
fn request_error(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Io(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound
        | ureq::Error::Timeout(_) => format!("Connection error. ({error})"),
        other => format!("Request failed: {other}"),
    }
}

/// The OpenAI SDK's message for an HTTP error (`APIError.makeMessage`): the status and the
/// body's `error.message`, else the body's `error` as JSON, else the body's text.
pub fn status_error(status: u16, body: &str) -> String {
    let message = match serde_json::from_str::<Value>(body) {
        Ok(json) => match json.get("error") {
            Some(Value::Object(error)) => match error.get("message") {
                Some(Value::String(message)) => Some(message.clone()),
                Some(message) if !message.is_null() => Some(message.to_string()),
                _ => Some(Value::Object(error.clone()).to_string()),
            },
            Some(error) if !error.is_null() => Some(error.to_string()),
            _ => None,
        },
        Err(_) => Some(body.trim().to_owned()).filter(|t| !t.is_empty()),
    };
    match message {
        Some(message) => format!("{status} {message}"),
        None => format!("{status} status code (no body)"),
    }
}

/// The response body as a stream of byte chunks for the SSE decoder, received from the
/// request thread. Each poll waits for the next buffer (blocking this thread, looking at the
/// abort flag and the idle limit meanwhile), so the stream is always ready: it is driven
/// with a no-op waker.
///
/// Bytes are handed to the decoder only up to a line end: a line that spans many reads is
/// handed over once, whole (the decoder rescans an unfinished line at every chunk, which is
/// quadratic in its length), and never more than [`MAX_EVENT_BYTES`] of one event.
struct ReaderChunks {
    receiver: std::sync::mpsc::Receiver<Received>,
    cancel: CancelToken,
    /// The longest wait for the next event.
    idle: Duration,
    /// When the last event was decoded (set by [`Events::next_chunk`]).
    last_event: Arc<Mutex<Instant>>,
    /// Bytes received after the last line end, not handed over yet.
    pending: Vec<u8>,
    lines: LineCounter,
    ended: bool,
}

/// Counts the bytes of the event being received: a blank line ends an event (LF, CR and
/// CRLF all end a line, as server-sent events allow).
#[derive(Default)]
struct LineCounter {
    line: usize,
    event: usize,
    after_cr: bool,
}

impl LineCounter {
    /// Counts `bytes`: whether the event grew past [`MAX_EVENT_BYTES`], and the end of the
    /// last line end in `bytes` (0: none).
    fn feed(&mut self, bytes: &[u8]) -> (bool, usize) {
        let mut last_end = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            match byte {
                b'\n' if self.after_cr => {
                    self.after_cr = false;
                    last_end = at + 1;
                }
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    if self.line == 0 {
                        self.event = 0;
                    }
                    self.line = 0;
                    last_end = at + 1;
                }
                _ => {
                    self.after_cr = false;
                    self.line += 1;
                    self.event += 1;
                }
            }
        }
        (self.event > MAX_EVENT_BYTES, last_end)
    }
}

impl ReaderChunks {
    /// The next hand-over; `Err(ABORTED)` once the run is aborted, `Err` with
    /// [`timed_out`]'s message once the stream was idle too long, `None` when the thread is
    /// gone.
    fn next(&self) -> Result<Option<Received>, String> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(ABORTED.into());
            }
            let since = *self.last_event.lock().unwrap_or_else(|e| e.into_inner());
            let left = self.idle.saturating_sub(since.elapsed());
            if left.is_zero() {
                return Err(timed_out(self.idle));
            }
            match self.receiver.recv_timeout(CANCEL_POLL.min(left)) {
                Ok(read) => return Ok(Some(read)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }

    /// The next bytes for the decoder: whole lines, or the rest once the body ended.
    fn next_lines(&mut self) -> Option<Result<Vec<u8>, std::io::Error>> {
        loop {
            if self.ended {
                return None;
            }
            let bytes = match self.next() {
                Err(error) => return Some(Err(std::io::Error::other(error))),
                Ok(Some(Received::Bytes(Ok(bytes)))) if !bytes.is_empty() => bytes,
                Ok(Some(Received::Bytes(Err(error)))) => return Some(Err(error)),
                Ok(_) => {
                    self.ended = true;
                    let rest = std::mem::take(&mut self.pending);
                    return (!rest.is_empty()).then_some(Ok(rest));
                }
            };
            let (over, last_end) = self.lines.feed(&bytes);
            if over {
                self.ended = true;
                self.pending = Vec::new();
                return Some(Err(std::io::Error::other(too_large())));
            }
            if last_end == 0 {
                self.pending.extend_from_slice(&bytes);
                continue;
            }
            let mut out = std::mem::take(&mut self.pending);
            out.extend_from_slice(&bytes[..last_end]);
            self.pending.extend_from_slice(&bytes[last_end..]);
            return Some(Ok(out));
        }
    }
}

impl futures_core::Stream for ReaderChunks {
    type Item = Result<Vec<u8>, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.get_mut().next_lines())
    }
}

/// The `data:` payloads of a response's events, up to `[DONE]`.
pub struct Events {
    stream: EventStream<ReaderChunks>,
    done: bool,
    /// When the last event was decoded: the idle limit counts from here.
    last_event: Arc<Mutex<Instant>>,
}

/// One event's data, parsed.
pub enum Chunk {
    /// A chunk of the completion.
    Data(Value),
    /// The stream is over (`[DONE]`, or the body ended).
    End,
}

impl Events {
    /// The next chunk; an error is pi's message for a broken stream (the connection cut
    /// before the body ended, a chunk that is not JSON, an `error` the server streamed).
    pub fn next_chunk(&mut self) -> Result<Chunk, String> {
        let mut context = Context::from_waker(Waker::noop());
        loop {
            if self.done {
                return Ok(Chunk::End);
            }
            let polled = futures_core::Stream::poll_next(Pin::new(&mut self.stream), &mut context);
            let event = match polled {
                Poll::Ready(Some(Ok(event))) => event,
                Poll::Ready(None) => {
                    self.done = true;
                    return Ok(Chunk::End);
                }
                // Ours (an abort, the event cap, the idle limit): their own words.
                Poll::Ready(Some(Err(eventsource_stream::EventStreamError::Transport(error))))
                    if is_own(&error.to_string()) =>
                {
                    return Err(error.to_string());
                }
                Poll::Ready(Some(Err(error))) => {
                    return Err(format!(
                        "terminated: the connection broke before the stream ended ({error})"
                    ));
                }
                Poll::Pending => unreachable!("ReaderChunks is always ready"),
            };
            *self.last_event.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            if event.data.starts_with("[DONE]") {
                self.done = true;
                continue;
            }
            let data: Value = serde_json::from_str(&event.data).map_err(|e| {
                format!(
                    "Could not parse stream chunk as JSON ({e}): {}",
                    shorten(&event.data)
                )
            })?;
            if let Some(error) = data.get("error").filter(|e| !e.is_null()) {
                return Err(match error.get("message") {
                    Some(Value::String(message)) => message.clone(),
                    _ => error.to_string(),
                });
            }
            if event.event == "error" {
                return Err(data["message"]
                    .as_str()
                    .unwrap_or("stream error")
                    .to_owned());
            }
            return Ok(Chunk::Data(data));
        }
    }
}

/// Whether a transport error is one of ours rather than the connection's.
fn is_own(text: &str) -> bool {
    text == ABORTED || text == too_large() || text.starts_with("Request timed out.")
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{LineCounter, MAX_EVENT_BYTES, status_error};

    #[test]
    fn events_are_counted_between_blank_lines_whatever_the_line_ends() {
        for end in ["\n", "\r\n", "\r"] {
            let mut lines = LineCounter::default();
            let event = format!("data: abc{end}data: de{end}{end}");
            assert_eq!(lines.feed(event.as_bytes()), (false, event.len()));
            assert_eq!(lines.event, 0, "{end:?}: a blank line ends the event");
            // A line split across reads: no line end yet.
            assert_eq!(lines.feed(b"data: x"), (false, 0));
            assert_eq!(lines.event, 7);
        }
        let mut lines = LineCounter::default();
        let big = vec![b'x'; MAX_EVENT_BYTES];
        assert_eq!(lines.feed(&big), (false, 0));
        assert_eq!(lines.feed(b"y"), (true, 0), "one byte past the cap");
        // Many small lines of one event count together.
        let mut lines = LineCounter::default();
        let line = vec![b'z'; 1 << 20];
        for _ in 0..16 {
            assert!(!lines.feed(&line).0);
            assert!(!lines.feed(b"\n").0);
        }
        assert!(lines.feed(b"!").0);
    }

    #[test]
    fn http_errors_read_as_the_openai_sdk_words_them() {
        assert_eq!(
            status_error(
                401,
                r#"{"error": {"message": "Invalid API key", "type": "auth"}}"#
            ),
            "401 Invalid API key"
        );
        assert_eq!(
            status_error(404, r#"{"error": "model not found"}"#),
            r#"404 "model not found""#
        );
        assert_eq!(status_error(500, ""), "500 status code (no body)");
        assert_eq!(status_error(502, "Bad gateway\n"), "502 Bad gateway");
        assert_eq!(
            status_error(500, r#"{"detail": "x"}"#),
            "500 status code (no body)"
        );
    }
}
