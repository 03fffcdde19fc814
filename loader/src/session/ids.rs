//! Session and entry ids as pi makes them: a random (version 4) UUID names a session, and an
//! entry's id is the first 8 hex characters of a fresh UUID, drawn again on a collision.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A random version 4 UUID, lower-case and hyphenated, as `crypto.randomUUID()`.
pub fn new_uuid() -> String {
    let mut bytes = random_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A new entry id not yet taken: 8 hex characters (a UUID prefix), or, after 100 collisions, a
/// whole UUID (pi's `generateId`).
pub fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let uuid = new_uuid();
        let id = &uuid[..8];
        if !taken(id) {
            return id.to_owned();
        }
    }
    new_uuid()
}

/// Whether `text` is a hyphenated UUID (any version, either case).
pub fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Sixteen random bytes from the operating system. Should the OS source fail (it does not on
/// supported platforms), ids only need to be unique, not secret: fall back to std's randomly
/// keyed hasher over a counter and the clock.
fn random_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return bytes;
    }
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for half in bytes.chunks_mut(8) {
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_i64(super::timestamp::now_millis());
        half.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_version_4() {
        let uuid = new_uuid();
        assert!(is_uuid(&uuid), "{uuid}");
        assert_eq!(&uuid[14..15], "4");
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(uuid, new_uuid());
        assert!(!is_uuid("e99116ac-a6da-48fc-ad8b-2feca1c5155"));
        assert!(!is_uuid("e99116ac-a6da-48fc-ad8b_2feca1c51550"));
    }

    #[test]
    fn entry_ids_avoid_taken_ones() {
        let id = new_entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        // Everything short is taken: the fallback is a whole UUID.
        assert!(is_uuid(&new_entry_id(|id| id.len() == 8)));
    }
}
