//! The HTTP side: `POST {baseUrl}/chat/completions` with ureq (a small synchronous client:
//! the agent loop calls the model on a thread of its own, so nothing here needs the async
//! runtime), the reply read as server-sent events by `eventsource-stream`, and every failure
//! turned into the message pi's provider would give (the OpenAI SDK's forms: `401 Invalid
//! API key`, `500 status code (no body)`, `Connection error.`).

use std::io::Read;

use crate::tools::CancelToken;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

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

/// Sends `body` to `url` and returns its event stream, or pi's message for why not.
///
/// The request runs on a thread of its own, which reads the body in whole buffers (one
/// hand-over per read, not per event); the events are decoded on the caller's thread. So an
/// abort (`cancel`) ends the wait at once even while the server is silent: `open` and
/// [`Events::next_chunk`] then answer [`ABORTED`], and the thread stops at its next read and
/// drops the connection.
pub fn open(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    cancel: &CancelToken,
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
    let chunks = ReaderChunks {
        receiver,
        cancel: cancel.clone(),
    };
    match chunks.next()? {
        Some(Received::Opened(Ok(()))) => {}
        Some(Received::Opened(Err(error))) => return Err(error),
        _ => return Err("the request thread ended without an answer".into()),
    }
    Ok(Events {
        stream: chunks.eventsource(),
        done: false,
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
/// abort flag meanwhile), so the stream is always ready: it is driven with a no-op waker.
struct ReaderChunks {
    receiver: std::sync::mpsc::Receiver<Received>,
    cancel: CancelToken,
}

impl ReaderChunks {
    /// The next hand-over; `Err(ABORTED)` once the run is aborted, `None` when the thread
    /// is gone.
    fn next(&self) -> Result<Option<Received>, String> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(ABORTED.into());
            }
            match self.receiver.recv_timeout(CANCEL_POLL) {
                Ok(read) => return Ok(Some(read)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }
}

impl futures_core::Stream for ReaderChunks {
    type Item = Result<Vec<u8>, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(match self.next() {
            Err(aborted) => Some(Err(std::io::Error::other(aborted))),
            Ok(Some(Received::Bytes(Ok(bytes)))) if bytes.is_empty() => None,
            Ok(Some(Received::Bytes(read))) => Some(read),
            Ok(Some(Received::Opened(_)) | None) => None,
        })
    }
}

/// The `data:` payloads of a response's events, up to `[DONE]`.
pub struct Events {
    stream: EventStream<ReaderChunks>,
    done: bool,
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
                Poll::Ready(Some(Err(error))) if error.to_string() == ABORTED => {
                    return Err(ABORTED.into());
                }
                Poll::Ready(Some(Err(error))) => {
                    return Err(format!(
                        "terminated: the connection broke before the stream ended ({error})"
                    ));
                }
                Poll::Pending => unreachable!("ReaderChunks is always ready"),
            };
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

fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::status_error;

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
