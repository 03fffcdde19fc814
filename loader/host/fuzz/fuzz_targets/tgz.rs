//! `extract_tgz` on any bytes, with small limits. The first byte picks the input: odd, the
//! rest is a tar stream that is gzip-compressed here (so mutations reach the tar reader);
//! even, the rest is the `.tgz` itself (the gzip reader). Whatever it returns, what it left
//! in the folder holds only regular files and folders, within the limits.

#![no_main]

use std::io::Write;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::packages::archive::{Limits, extract_tgz};

const LIMITS: Limits = Limits {
    entry_bytes: 64 << 10,
    package_bytes: 256 << 10,
    entries: 64,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let compressed;
    let tgz = if mode & 1 == 1 {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(rest).unwrap();
        compressed = gz.finish().unwrap();
        &compressed[..]
    } else {
        rest
    };
    let dir = scratch();
    let _ = extract_tgz(tgz, dir.path(), LIMITS, "fuzz.tgz");
    let (bytes, entries) = walk(dir.path());
    assert!(bytes <= LIMITS.package_bytes, "{bytes} bytes written");
    assert!(entries <= LIMITS.entries, "{entries} entries written");
});

/// Bytes and entries under `dir`; panics on anything but regular files and folders.
fn walk(dir: &Path) -> (u64, usize) {
    let (mut bytes, mut entries) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        entries += 1;
        if meta.is_dir() {
            let (b, e) = walk(&entry.path());
            bytes += b;
            entries += e;
        } else {
            assert!(meta.is_file(), "{:?} is not a regular file", entry.path());
            assert!(meta.len() <= LIMITS.entry_bytes);
            bytes += meta.len();
        }
    }
    (bytes, entries)
}

/// A temporary folder, in memory where the machine has `/dev/shm` (many times faster than a
/// disk for one folder per input).
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}
