//! `read_settings` of a settings file holding any bytes (one file, rewritten each run).

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::plugin_files::settings::read_settings;

fn file() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = DIR.get_or_init(|| {
        let dir = scratch();
        let path = dir.path().join("settings.json");
        (dir, path)
    });
    path
}

fuzz_target!(|data: &[u8]| {
    std::fs::write(file(), data).unwrap();
    let _ = read_settings(file());
});

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
