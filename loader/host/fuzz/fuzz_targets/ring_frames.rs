//! The ring transport as the host sees it when the child writes anything into the shared
//! pages (`isolate::transport::ring`): the input is laid over the header's control words
//! (all but the magic, version and capacity, which the host never reads again) and the
//! child-to-host ring, then the host reads every frame it can and sends one. Nothing panics
//! or hangs (every wait has a deadline of now); a garbled word or length is
//! `RingError::Broken`, and every frame read is at most `MAX_FRAME` bytes and is then taken
//! as the host takes a message.

#![no_main]

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::isolate::child::{check_kind, parse_message};
use pi_hooks_host::isolate::transport::ring::{
    CAPACITY, Consumer, Direction, MAX_FRAME, Producer, Region, RingError,
};

/// The header page's size, and where its control words start (after magic, version and
/// capacity).
const HEADER: usize = 4096;
const WORDS: usize = 64;

fuzz_target!(|data: &[u8]| {
    let (host, fd) = Region::create().unwrap();
    let size = HEADER + 2 * CAPACITY as usize;
    // The child's view: the same memfd mapped again, written as a hostile child would.
    // SAFETY: maps `size` bytes of the memfd just made at that size, shared, at an address
    // the kernel picks; nothing else uses the range.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    let words = data.len().min(HEADER - WORDS);
    let ring = (data.len() - words).min(CAPACITY as usize);
    // SAFETY: both copies stay inside the mapping (words <= HEADER - WORDS, ring <= CAPACITY
    // after the header and the host-to-child ring); the host reads the same bytes only
    // through atomics and copies.
    unsafe {
        let base = map.cast::<u8>();
        std::ptr::copy_nonoverlapping(data.as_ptr(), base.add(WORDS), words);
        std::ptr::copy_nonoverlapping(
            data.as_ptr().add(words),
            base.add(HEADER + CAPACITY as usize),
            ring,
        );
    }
    let now = Some(Instant::now());
    let mut reader = Consumer::new(host.clone(), Direction::ToHost);
    for _ in 0..64 {
        match reader.receive(now, Duration::ZERO) {
            Ok(Some(frame)) => {
                assert!(frame.len() <= MAX_FRAME);
                if let Ok(message) = parse_message(&frame) {
                    let _ = check_kind(&message);
                }
            }
            Ok(None) | Err(RingError::Closed) | Err(RingError::Broken(_)) => break,
        }
    }
    let mut writer = Producer::new(host.clone(), Direction::ToChild, Duration::ZERO);
    let _ = writer.send(b"{\"type\":\"event\",\"id\":1}", now);
    // SAFETY: unmaps exactly the mapping made above, used by nothing after this.
    unsafe {
        libc::munmap(map, size);
    }
});
