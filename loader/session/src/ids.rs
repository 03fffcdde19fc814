//! Session and entry ids as pi makes them: a random (version 4) UUID names a session, and an
//! entry's id is the first 8 hex characters of a fresh UUID, drawn again on a collision.

/// A random version 4 UUID, lower-case and hyphenated, as `crypto.randomUUID()`.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
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
    text.len() == 36 && uuid::Uuid::try_parse(text).is_ok()
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
        assert!(!is_uuid("e99116aca6da48fcad8b2feca1c515500000"));
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
