//! Just enough HTTP/1.1 for `pi-hooks demo-model`: one request per connection (every answer
//! says `Connection: close` and the connection is closed after it), the request head parsed
//! by `httparse`, the body read by its `Content-Length`, and streamed answers sent with
//! chunked transfer coding, one HTTP chunk per server-sent event, each written to the socket
//! (no buffer in between) and flushed as soon as it is made.

use std::io::{Read, Write};
use std::time::Duration;

/// The largest request head read (request line and headers).
const HEAD_LIMIT: usize = 64 * 1024;
/// The largest request body read: a long pi session's request is a few MiB at most.
const BODY_LIMIT: usize = 64 * 1024 * 1024;
/// How long a client may take to send its request, or to take an answer.
pub(super) const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// A request as read.
pub(super) struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The body's bytes.
    pub body: Vec<u8>,
}

/// Why a request was not read: an answer to send (status and message), or nothing to answer
/// (the client went away or sent nothing).
pub(super) enum ReadFailure {
    /// Answer with this status and message.
    Refuse(u16, String),
    /// Close the connection without an answer.
    Gone,
}

/// Reads one request from `stream`. An `Expect: 100-continue` is answered before the body is
/// read; a body without `Content-Length` (chunked) is refused with 411.
pub(super) fn read_request(stream: &mut (impl Read + Write)) -> Result<Request, ReadFailure> {
    let mut buffer = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 8 * 1024];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buffer) {
            Ok(httparse::Status::Complete(head)) => {
                let method = request.method.unwrap_or_default().to_owned();
                let path = request.path.unwrap_or_default();
                let path = path.split('?').next().unwrap_or_default().to_owned();
                let header = |name: &str| {
                    request
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
                };
                if header("transfer-encoding").is_some() {
                    return Err(ReadFailure::Refuse(
                        411,
                        "send the request body with a Content-Length".into(),
                    ));
                }
                let length = match header("content-length").map(|v| v.parse::<usize>()) {
                    None => 0,
                    Some(Ok(length)) if length <= BODY_LIMIT => length,
                    Some(Ok(_)) => {
                        return Err(ReadFailure::Refuse(
                            413,
                            format!("the request body is over {BODY_LIMIT} bytes"),
                        ));
                    }
                    Some(Err(_)) => {
                        return Err(ReadFailure::Refuse(400, "a bad Content-Length".into()));
                    }
                };
                if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
                    stream
                        .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                        .map_err(|_| ReadFailure::Gone)?;
                }
                let mut body = buffer.split_off(head);
                if body.len() < length {
                    let rest = length - body.len();
                    body.reserve(rest);
                    Read::by_ref(stream)
                        .take(rest as u64)
                        .read_to_end(&mut body)
                        .map_err(|_| ReadFailure::Gone)?;
                    if body.len() < length {
                        return Err(ReadFailure::Gone);
                    }
                }
                body.truncate(length);
                return Ok(Request { method, path, body });
            }
            Ok(httparse::Status::Partial) if buffer.len() >= HEAD_LIMIT => {
                return Err(ReadFailure::Refuse(
                    431,
                    format!("the request head is over {HEAD_LIMIT} bytes"),
                ));
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(ReadFailure::Refuse(400, format!("not HTTP/1.1: {e}"))),
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(ReadFailure::Gone),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The reason phrase of the statuses this server sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

/// Sends `body` as a JSON answer with `status`.
pub(super) fn write_json(
    out: &mut impl Write,
    status: u16,
    body: &serde_json::Value,
) -> std::io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    out.write_all(format!("{head}{body}").as_bytes())?;
    out.flush()
}

/// Sends a `text/event-stream` answer: one `data: <event>` per item of `events`, each in an
/// HTTP chunk of its own, written and flushed before the next is made, then the last chunk.
pub(super) fn write_event_stream(
    out: &mut impl Write,
    events: impl IntoIterator<Item = String>,
) -> std::io::Result<()> {
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )?;
    out.flush()?;
    for event in events {
        let data = format!("data: {event}\n\n");
        out.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())?;
        out.flush()?;
    }
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection: reads from `input`, records what is written and each flush.
    struct Connection {
        input: std::io::Cursor<Vec<u8>>,
        written: Vec<u8>,
        /// The length of `written` at each flush.
        flushes: Vec<usize>,
    }

    impl Connection {
        fn new(input: &[u8]) -> Self {
            Connection {
                input: std::io::Cursor::new(input.to_vec()),
                written: Vec::new(),
                flushes: Vec::new(),
            }
        }
    }

    impl Read for Connection {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            // A byte at a time: the head may arrive in any number of pieces.
            let n = buf.len().min(1);
            self.input.read(&mut buf[..n])
        }
    }

    impl Write for Connection {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.flushes.push(self.written.len());
            Ok(())
        }
    }

    #[test]
    fn reads_a_request_in_pieces_with_its_body() {
        let mut connection = Connection::new(
            b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: h\r\ncontent-length: 7\r\nExpect: 100-continue\r\n\r\n{\"a\":1}",
        );
        let Ok(request) = read_request(&mut connection) else {
            panic!("not read")
        };
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(request.body, b"{\"a\":1}");
        assert_eq!(connection.written, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn refuses_a_chunked_body_and_garbage() {
        let mut chunked = Connection::new(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        );
        assert!(matches!(
            read_request(&mut chunked),
            Err(ReadFailure::Refuse(411, _))
        ));
        let mut garbage = Connection::new(b"\x16\x03\x01 hello\r\n\r\n");
        assert!(matches!(
            read_request(&mut garbage),
            Err(ReadFailure::Refuse(400, _))
        ));
        assert!(matches!(
            read_request(&mut Connection::new(b"GET / HT")),
            Err(ReadFailure::Gone)
        ));
    }

    #[test]
    fn each_event_is_one_chunk_flushed_before_the_next() {
        let mut connection = Connection::new(b"");
        write_event_stream(
            &mut connection,
            ["{\"n\":1}".to_owned(), "[DONE]".to_owned()],
        )
        .unwrap();
        let text = String::from_utf8(connection.written.clone()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
        assert_eq!(
            body,
            "f\r\ndata: {\"n\":1}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
        );
        // Flushed after the head, after each event, and at the end.
        let first = head.len() + 4;
        let second = first + "f\r\ndata: {\"n\":1}\n\n\r\n".len();
        let third = second + "e\r\ndata: [DONE]\n\n\r\n".len();
        assert_eq!(
            connection.flushes,
            vec![first, second, third, connection.written.len()]
        );
    }
}
