//! The record that an installed library's bytes were hashed and matched their package: the
//! file's identity ([`FileIdentity`]: device, inode, size, mtime, ctime) at that moment and the
//! SHA-256, kept under the agent directory (`verified/` of the scope's [`Records`], keyed by
//! the library's canonical path), where nothing that can write the library can write it: a
//! cloned repository holds only the package's files, and a confined plugin's grant never
//! reaches the agent directory beyond its own `${data}`.
//!
//! Every load of a package's library checks it against the SHA-256 recorded at install. When
//! the file's identity, read before and after its bytes, equals the one recorded the last time
//! those bytes were hashed and matched, the file has not been written since (any write moves
//! its ctime, which only root can set back) and the hash is taken as verified without
//! computing it again: ten installed packages then cost a few `stat` calls at start-up,
//! whatever the size of their libraries, instead of about 1 ms of hashing per MiB. A file
//! whose ctime is less than two seconds old is never recorded (a write in the same clock tick
//! could leave the ctime unchanged), so a file changed after install is always hashed, and
//! refused when it does not match.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::records::{Kind, RecordKey, Records};
use crate::library::PluginFile;
use crate::plugin_files::files::FileIdentity;

/// How old a file's ctime must be before its identity is recorded.
const SETTLED: Duration = Duration::from_secs(2);

#[derive(Serialize, Deserialize, PartialEq, Eq)]
struct Record {
    sha256: String,
    identity: FileIdentity,
}

/// Whether `file` (read from `library`) has the SHA-256 `pinned`: from the record in
/// `records` when the file is unchanged since its bytes last matched, else by hashing them
/// (and recording the match when the file is settled).
pub fn matches_pin(records: &Records, library: &Path, file: &PluginFile, pinned: &str) -> bool {
    let key = RecordKey::library(library);
    if let Some(identity) = file.identity {
        let recorded = records.read::<Record>(Kind::Verified, &key);
        if recorded.is_some_and(|r| r.identity == identity && r.sha256 == pinned) {
            file.assume_sha256(pinned);
            return true;
        }
    }
    if file.sha256() != pinned {
        let _ = records.remove(Kind::Verified, &key);
        return false;
    }
    if let Some(identity) = file.identity.filter(settled) {
        let record = Record {
            sha256: pinned.to_owned(),
            identity,
        };
        // Written whole or not at all; a failure only means hashing again next time.
        let _ = records.write(Kind::Verified, &key, &record);
    }
    true
}

/// Whether the file's last change is old enough for its ctime to tell any later write.
pub(crate) fn settled(identity: &FileIdentity) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    now - identity.ctime_ns >= SETTLED.as_nanos() as i128
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> PluginFile {
        crate::library::read_plugin_file(path).unwrap()
    }

    #[test]
    fn a_settled_file_is_hashed_once_and_a_changed_one_again() {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        let records = Records::of(super::super::store::Scope::User, agent.path(), dir.path());
        let record_path = |library: &Path| {
            records
                .folder(Kind::Verified)
                .join(RecordKey::library(library).file_name())
        };
        let library = dir.path().join("libx.so");
        std::fs::write(&library, b"library bytes").unwrap();
        let pin = crate::plugin_files::trust::sha256_hex(b"library bytes");
        // Fresh: hashed, not recorded.
        let file = read(&library);
        assert!(matches_pin(&records, &library, &file, &pin));
        assert!(!record_path(&library).exists());
        // Settled: hashed and recorded; the next read takes the record.
        std::thread::sleep(SETTLED + Duration::from_millis(100));
        assert!(matches_pin(&records, &library, &read(&library), &pin));
        assert!(record_path(&library).exists());
        let file = read(&library);
        assert!(matches_pin(&records, &library, &file, &pin));
        // The record stands for the hash: bytes with the recorded identity are not hashed.
        let mut stand_in = PluginFile::new(library.clone(), b"other bytes".to_vec());
        stand_in.identity = file.identity;
        assert!(matches_pin(&records, &library, &stand_in, &pin));
        // Changed (same size): the identity differs, the hash is computed and refuses it.
        std::fs::write(&library, b"LIBRARY bytes").unwrap();
        let file = read(&library);
        assert!(!matches_pin(&records, &library, &file, &pin));
        assert!(
            !record_path(&library).exists(),
            "a mismatch drops the record"
        );
    }
}
