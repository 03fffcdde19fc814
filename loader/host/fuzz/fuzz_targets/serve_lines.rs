//! The serve protocol's lines: any bytes split into lines as `serve` reads its stdin
//! (`serve::framing::read_lines`, with a small limit so over-long lines are exercised), each
//! line taken as the host takes a child's message (`isolate::child::parse_message`, then
//! `check_kind`, then a `denied` notification's `sandbox::report::vouch`): nothing panics,
//! and what is refused says why in words that reach a terminal safely.

#![no_main]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::isolate::child::{check_kind, parse_message};
use pi_hooks_host::sandbox::report::vouch;
use pi_hooks_host::serve::framing::{Line, read_lines_capped};

/// Runs a future that never waits (reading a byte slice is always ready).
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
    }
}

/// A refusal's words carry no control character a terminal would obey.
fn printable(why: &str) {
    assert!(!why.chars().any(|c| c.is_control()), "{why:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut lines = Vec::new();
    ready(read_lines_capped(data, 4096, |line| match line {
        Line::Text(text) => lines.push(text.to_owned()),
        Line::TooLong(bytes) => assert!(bytes > 4096),
    }));
    for line in lines {
        assert!(!line.contains('\n'));
        let message = match parse_message(line.as_bytes()) {
            Ok(message) => message,
            Err(why) => {
                printable(&why);
                continue;
            }
        };
        if let Err(why) = check_kind(&message) {
            printable(&why);
            continue;
        }
        if message["type"] == "notification" && message["method"] == "denied" {
            if let Err(why) = vouch(&message["params"], None) {
                printable(&why);
            }
        }
    }
});
