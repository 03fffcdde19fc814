//! Safe extraction of a package tarball (`.tgz`, npm's layout: every entry under `package/`).
//!
//! Only regular files and folders are accepted: an entry with an absolute path, a `..` part,
//! a link, a device, a FIFO, a GNU sparse file or any other kind is refused, as is an entry
//! over [`MAX_ENTRY_BYTES`], a package over [`MAX_PACKAGE_BYTES`] or [`MAX_ENTRIES`]. The
//! caps hold whatever the headers say: every declared size (the header's, a pax `size`
//! record's, a GNU base-256 size) is checked, the bytes actually written are counted, and the
//! whole decompressed stream is bounded too (so pax and GNU long-name records, which the tar
//! reader holds in memory, stay small). The gzip stream is read to its end, so a bad
//! checksum or a truncated file is refused. Refusal leaves nothing behind: the caller
//! extracts into a fresh staging folder and drops it on error.

use std::cell::Cell;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// The largest single entry, uncompressed.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;
/// The largest package, uncompressed, all entries together.
pub const MAX_PACKAGE_BYTES: u64 = 256 << 20;
/// The most entries a package may have.
pub const MAX_ENTRIES: usize = 10_000;

/// What the decompressed stream may hold per entry beyond its data: its header, the padding
/// to a 512-byte block, and a pax or GNU long-name record with its own header.
const ENTRY_OVERHEAD_BYTES: u64 = 4 << 10;
/// What the decompressed stream may hold in metadata records and end-of-archive blocks
/// beyond [`ENTRY_OVERHEAD_BYTES`] per entry.
const METADATA_BYTES: u64 = 1 << 20;
/// The most decompressed bytes read after the end of the tarball (its zero blocks, the
/// padding to a 10 KiB record) to reach the end of the gzip stream and check its checksum.
const TRAILER_BYTES: u64 = 1 << 20;

/// Size limits (the defaults above; tests lower them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// See [`MAX_ENTRY_BYTES`].
    pub entry_bytes: u64,
    /// See [`MAX_PACKAGE_BYTES`].
    pub package_bytes: u64,
    /// See [`MAX_ENTRIES`].
    pub entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            entry_bytes: MAX_ENTRY_BYTES,
            package_bytes: MAX_PACKAGE_BYTES,
            entries: MAX_ENTRIES,
        }
    }
}

impl Limits {
    /// The defaults, each lowered by `PI_HOOKS_PACKAGE_MAX_ENTRY_BYTES` /
    /// `PI_HOOKS_PACKAGE_MAX_BYTES` when set (never raised).
    pub fn from_env() -> Limits {
        let mut limits = Limits::default();
        let read = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        if let Some(n) = read("PI_HOOKS_PACKAGE_MAX_ENTRY_BYTES") {
            limits.entry_bytes = limits.entry_bytes.min(n);
        }
        if let Some(n) = read("PI_HOOKS_PACKAGE_MAX_BYTES") {
            limits.package_bytes = limits.package_bytes.min(n);
        }
        limits
    }
}

/// How many decompressed bytes were read, and how many may be.
#[derive(Default)]
struct Budget {
    read: Cell<u64>,
    limit: Cell<u64>,
    exceeded: Cell<bool>,
}

/// A reader that fails once more than its budget's limit would be read (and says so in the
/// budget, since the tar reader may wrap the error).
struct Capped<R> {
    inner: R,
    budget: Rc<Budget>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (read, limit) = (self.budget.read.get(), self.budget.limit.get());
        let room = limit.saturating_sub(read);
        if buf.is_empty() {
            return Ok(0);
        }
        let n = if room == 0 {
            // At the limit: only the end of the stream may follow.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.budget.exceeded.set(true);
            return Err(std::io::Error::other("over the size limit"));
        } else {
            let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            self.inner.read(&mut buf[..want])?
        };
        self.budget.read.set(read + n as u64);
        Ok(n)
    }
}

/// Extracts the gzip-compressed tarball `reader` into `into` (which must exist and be empty):
/// the contents of `package/` land directly in `into`. `what` names the tarball in errors.
pub fn extract_tgz(
    reader: impl Read,
    into: &Path,
    limits: Limits,
    what: &str,
) -> Result<(), String> {
    // `into` is the caller's (empty) folder: its absence is a write failure, never created.
    if let Err(e) = std::fs::read_dir(into) {
        return Err(cannot_write(what, into, "package/", e));
    }
    let budget = Rc::new(Budget::default());
    let overhead = |count: usize| (count as u64 + 1).saturating_mul(ENTRY_OVERHEAD_BYTES);
    budget.limit.set(overhead(0).saturating_add(METADATA_BYTES));
    let capped = Capped {
        inner: flate2::read::GzDecoder::new(reader),
        budget: Rc::clone(&budget),
    };
    let over_cap = || {
        format!(
            "{what} is over the limit of {} bytes uncompressed; nothing was installed",
            limits.package_bytes
        )
    };
    // A read error: the size cap when the budget ran out, else a damaged archive.
    let damaged = |e: std::io::Error| {
        if budget.exceeded.get() {
            over_cap()
        } else {
            format!("{what} is damaged ({e}); download or pack it again")
        }
    };
    let mut archive = tar::Archive::new(capped);
    let entries = archive.entries().map_err(|e| {
        format!("{what} is not a gzip-compressed tarball ({e}); pack it with `pi-hooks pack`")
    })?;
    // `declared`: every entry's largest declared size, added up; `written`: the bytes written.
    let (mut declared, mut written, mut count) = (0u64, 0u64, 0usize);
    for entry in entries {
        let mut entry = entry.map_err(damaged)?;
        count += 1;
        if count > limits.entries {
            return Err(format!(
                "{what} has more than {} entries; nothing was installed",
                limits.entries
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink()
        {
            // Metadata for what follows (the tar reader applies it), held in memory within
            // the stream's budget.
            budget.limit.set(
                declared
                    .saturating_add(overhead(count))
                    .saturating_add(METADATA_BYTES),
            );
            continue;
        }
        let sparse = kind.is_gnu_sparse() || has_sparse_record(&mut entry).map_err(damaged)?;
        let relative = inside_package(&raw).map_err(|e| {
            format!("{what}: the entry {shown:?} {e}; nothing was installed. Only take packages from publishers you trust, and repack this one")
        })?;
        if !kind.is_dir() && !kind.is_file() || sparse {
            let what_kind = if sparse {
                "a GNU sparse file"
            } else if kind.is_symlink() {
                "a symbolic link"
            } else if kind.is_hard_link() {
                "a hard link"
            } else if kind.is_character_special() || kind.is_block_special() {
                "a device file"
            } else if kind.is_fifo() {
                "a FIFO"
            } else {
                "not a regular file"
            };
            return Err(format!(
                "{what}: the entry {shown:?} is {what_kind}; packages hold only regular files and folders, nothing was installed"
            ));
        }
        // The size the data is read by (a pax `size` record's when there is one) and the
        // header's own (GNU base-256 included): the larger counts.
        let size = entry
            .size()
            .max(entry.header().entry_size().unwrap_or(u64::MAX));
        if size > limits.entry_bytes {
            return Err(format!(
                "{what}: the entry {shown:?} is {size} bytes, over the limit of {} per file; nothing was installed",
                limits.entry_bytes
            ));
        }
        declared = declared.saturating_add(size);
        if declared > limits.package_bytes {
            return Err(over_cap());
        }
        budget.limit.set(
            declared
                .saturating_add(overhead(count))
                .saturating_add(METADATA_BYTES),
        );
        let cannot_write = |e: std::io::Error| cannot_write(what, into, &shown, e);
        if kind.is_dir() {
            if let Some(rel) = relative {
                std::fs::create_dir_all(into.join(rel)).map_err(cannot_write)?;
            }
            continue;
        }
        let Some(rel) = relative else {
            return Err(format!(
                "{what}: the entry {shown:?} is not a file inside package/; nothing was installed"
            ));
        };
        let target = into.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(cannot_write)?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(cannot_write)?;
        // The declared sizes are checked above; what is written is counted too, in case
        // one of them lied.
        let mut copied = 0u64;
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match entry.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(damaged(e)),
            };
            copied += n as u64;
            written += n as u64;
            if copied > limits.entry_bytes {
                return Err(format!(
                    "{what}: the entry {shown:?} is over the limit of {} bytes per file; nothing was installed",
                    limits.entry_bytes
                ));
            }
            if written > limits.package_bytes {
                return Err(over_cap());
            }
            out.write_all(&buf[..n]).map_err(cannot_write)?;
        }
        if copied != size {
            return Err(format!(
                "{what} is damaged (the entry {shown:?} ends after {copied} of its {size} bytes); download or pack it again"
            ));
        }
    }
    // The tar reader stops at the end-of-archive block; the gzip checksum and length are
    // checked only at the end of the gzip stream, so read on to it (a little way at most).
    let mut rest = archive.into_inner();
    budget
        .limit
        .set(budget.read.get().saturating_add(TRAILER_BYTES));
    if let Err(e) = std::io::copy(&mut rest, &mut std::io::sink()) {
        return Err(if budget.exceeded.get() {
            format!(
                "{what} has more than {TRAILER_BYTES} bytes after the end of its tarball; nothing was installed. Pack it again"
            )
        } else {
            format!("{what} is damaged ({e}); download or pack it again")
        });
    }
    if !into.join("package.json").is_file() {
        return Err(format!(
            "{what} has no package/package.json; it is not a package (pack one with `pi-hooks pack`)"
        ));
    }
    Ok(())
}

/// Whether `entry` has pax records of a GNU sparse file (`GNU.sparse.*`), which a reader
/// that knows them expands to another size than the one the entry declares.
fn has_sparse_record<R: Read>(entry: &mut tar::Entry<'_, R>) -> std::io::Result<bool> {
    let Some(records) = entry.pax_extensions()? else {
        return Ok(false);
    };
    for record in records {
        if record?.key_bytes().starts_with(b"GNU.sparse.") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The error for a failed write into `into`: an entry that clashes with another (the same
/// name twice, a file where a folder is) is the archive's fault; anything else (a full disk,
/// a folder not writable) is the folder's, and says so.
fn cannot_write(what: &str, into: &Path, shown: &str, e: std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::AlreadyExists | ErrorKind::NotADirectory | ErrorKind::IsADirectory => format!(
            "{what}: the entry {shown:?} clashes with another entry of the same name ({e}); nothing was installed. Pack it again"
        ),
        _ => format!(
            "{what}: could not write the entry {shown:?} to {} ({e}); nothing was installed. Free some space there or make it writable, then try again",
            into.display()
        ),
    }
}
/// The path of an entry relative to `package/`: `None` for `package/` itself, an error for
/// anything absolute, with `..`, or outside `package/`.
fn inside_package(raw: &[u8]) -> Result<Option<PathBuf>, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "has a name that is not UTF-8".to_owned())?;
    if text.starts_with('/') || text.starts_with('\\') || text.contains(':') {
        return Err("has an absolute path".to_owned());
    }
    let path = Path::new(text);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err("has a `..` part".to_owned()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("has an absolute path".to_owned());
            }
        }
    }
    if parts.first().map(|p| p.as_os_str()) != Some(std::ffi::OsStr::new("package")) {
        return Err("is not under package/ (npm's layout)".to_owned());
    }
    if parts.len() == 1 {
        return Ok(None);
    }
    Ok(Some(parts[1..].iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_stay_inside_the_package() {
        assert_eq!(
            inside_package(b"package/a/b").unwrap(),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(inside_package(b"./package/").unwrap(), None);
        assert!(inside_package(b"package/../x").unwrap_err().contains(".."));
        assert!(
            inside_package(b"/etc/passwd")
                .unwrap_err()
                .contains("absolute")
        );
        assert!(inside_package(b"other/x").is_err());
    }

    /// One entry of a test tarball: `(header, data)`; the header's checksum is set here.
    fn tgz(entries: Vec<(tar::Header, Vec<u8>)>) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (mut header, data) in entries {
            header.set_cksum();
            builder.append(&header, data.as_slice()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_path(name).unwrap();
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(0o644);
        header
    }

    fn file(name: &str, data: &[u8]) -> (tar::Header, Vec<u8>) {
        (
            header(name, tar::EntryType::Regular, data.len() as u64),
            data.to_vec(),
        )
    }

    /// A pax extended header holding `records` (key, value).
    fn pax(records: &[(&str, &str)]) -> (tar::Header, Vec<u8>) {
        let mut data = Vec::new();
        for (key, value) in records {
            let body = format!(" {key}={value}\n");
            // The length counts its own digits.
            let mut len = body.len() + 1;
            while format!("{len}{body}").len() != len {
                len += 1;
            }
            data.extend_from_slice(format!("{len}{body}").as_bytes());
        }
        let header = header("PaxHeader", tar::EntryType::XHeader, data.len() as u64);
        (header, data)
    }

    const JSON: &[u8] = br#"{"name":"x","version":"1.0.0"}"#;

    fn small() -> Limits {
        Limits {
            entry_bytes: 1000,
            package_bytes: 3000,
            entries: 20,
        }
    }

    fn extract(bytes: &[u8], limits: Limits) -> (tempfile::TempDir, Result<(), String>) {
        let dir = tempfile::tempdir().unwrap();
        let result = extract_tgz(bytes, dir.path(), limits, "x.tgz");
        (dir, result)
    }

    /// Bytes under `dir`, all files together.
    fn bytes_under(dir: &Path) -> u64 {
        let mut total = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            total += if meta.is_dir() {
                bytes_under(&entry.path())
            } else {
                meta.len()
            };
        }
        total
    }

    #[test]
    fn a_package_within_the_limits_is_extracted() {
        let bytes = tgz(vec![
            (header("package/", tar::EntryType::Directory, 0), vec![]),
            file("package/package.json", JSON),
            file("package/lib/a.so", &[7u8; 1000]),
        ]);
        let (dir, result) = extract(&bytes, small());
        result.unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("package.json")).unwrap(),
            JSON
        );
        assert_eq!(
            std::fs::read(dir.path().join("lib/a.so")).unwrap().len(),
            1000
        );
    }

    #[test]
    fn a_pax_size_record_counts_against_the_caps() {
        // The header says 10 bytes, the pax record (which the tar reader follows) 900:
        // within the per-file cap, but four of them are over the package's.
        let mut entries = vec![file("package/package.json", JSON)];
        for i in 0..4 {
            entries.push(pax(&[("size", "900")]));
            let h = header(&format!("package/f{i}"), tar::EntryType::Regular, 10);
            entries.push((h, vec![b'a'; 900]));
        }
        // `Builder::append` writes `data` whole and pads it: the stream holds 900 bytes per
        // entry as the pax record says.
        let (dir, result) = extract(&tgz(entries), small());
        let error = result.unwrap_err();
        assert!(
            error.contains("over the limit of 3000 bytes uncompressed"),
            "{error}"
        );
        assert!(bytes_under(dir.path()) <= 3000);
        // One pax size over the per-file cap is refused before anything of it is written.
        let (dir, result) = extract(
            &tgz(vec![
                file("package/package.json", JSON),
                pax(&[("size", "1000000000000")]),
                file("package/big", b"0123456789"),
            ]),
            small(),
        );
        let error = result.unwrap_err();
        assert!(
            error.contains(
                "\"package/big\" is 1000000000000 bytes, over the limit of 1000 per file"
            ),
            "{error}"
        );
        assert!(!dir.path().join("big").exists());
    }

    #[test]
    fn a_gnu_base_256_size_counts_against_the_caps() {
        let mut h = header("package/big", tar::EntryType::Regular, 0);
        // Over 8^11: the tar crate writes it in GNU's base-256 form.
        h.set_size(1 << 40);
        let bytes = tgz(vec![file("package/package.json", JSON), (h, vec![])]);
        let (_dir, result) = extract(&bytes, small());
        let error = result.unwrap_err();
        assert!(
            error.contains("is 1099511627776 bytes, over the limit"),
            "{error}"
        );
    }

    #[test]
    fn sparse_files_and_other_kinds_are_refused() {
        // A sparse file of 1 GiB real size, stored in 4 bytes (a hole, then the 4 bytes).
        let mut sparse = header("package/s", tar::EntryType::GNUSparse, 4);
        let gnu = sparse.as_gnu_mut().unwrap();
        gnu.set_real_size(1 << 30);
        gnu.sparse[0].set_offset((1 << 30) - 4);
        gnu.sparse[0].set_length(4);
        let bytes = tgz(vec![
            file("package/package.json", JSON),
            (sparse, b"abcd".to_vec()),
        ]);
        let error = extract(&bytes, small()).1.unwrap_err();
        assert!(error.contains("is a GNU sparse file"), "{error}");
        let bytes = tgz(vec![
            file("package/package.json", JSON),
            pax(&[("GNU.sparse.size", "1000000000")]),
            file("package/s", b""),
        ]);
        let error = extract(&bytes, small()).1.unwrap_err();
        assert!(error.contains("is a GNU sparse file"), "{error}");
        for kind in [
            tar::EntryType::Continuous,
            tar::EntryType::new(b'V'),
            tar::EntryType::new(b'M'),
            tar::EntryType::new(b'D'),
        ] {
            let bytes = tgz(vec![
                file("package/package.json", JSON),
                (header("package/k", kind, 0), vec![]),
            ]);
            let error = extract(&bytes, small()).1.unwrap_err();
            assert!(error.contains("is not a regular file"), "{kind:?}: {error}");
        }
    }

    #[test]
    fn a_long_metadata_record_is_bounded() {
        // A GNU long name of 2 MiB (held in memory by the tar reader) is over the stream's
        // budget for metadata.
        let name = vec![b'a'; 2 << 20];
        let bytes = tgz(vec![
            file("package/package.json", JSON),
            (
                header(
                    "././@LongLink",
                    tar::EntryType::GNULongName,
                    name.len() as u64,
                ),
                name,
            ),
            file("package/x", b""),
        ]);
        let error = extract(&bytes, Limits::default()).1.unwrap_err();
        assert!(error.contains("over the limit of"), "{error}");
    }

    #[test]
    fn a_bad_gzip_checksum_or_a_truncated_file_is_damaged() {
        let good = tgz(vec![file("package/package.json", JSON)]);
        extract(&good, small()).1.unwrap();
        // The CRC-32 is the trailer's first four bytes.
        let mut bad = good.clone();
        let at = bad.len() - 8;
        bad[at] ^= 0xff;
        let error = extract(&bad, small()).1.unwrap_err();
        assert!(error.contains("x.tgz is damaged"), "{error}");
        assert!(error.contains("download or pack it again"), "{error}");
        let truncated = &good[..good.len() - 4];
        let error = extract(truncated, small()).1.unwrap_err();
        assert!(error.contains("x.tgz is damaged"), "{error}");
    }

    #[test]
    fn much_data_after_the_end_of_the_tarball_is_refused() {
        let mut tar_bytes = Vec::new();
        {
            let mut builder = tar::Builder::new(&mut tar_bytes);
            let (mut h, data) = file("package/package.json", JSON);
            h.set_cksum();
            builder.append(&h, data.as_slice()).unwrap();
            builder.finish().unwrap();
        }
        tar_bytes.extend(std::iter::repeat_n(0u8, (TRAILER_BYTES + 4096) as usize));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar_bytes).unwrap();
        let error = extract(&gz.finish().unwrap(), small()).1.unwrap_err();
        assert!(error.contains("after the end of its tarball"), "{error}");
    }

    #[test]
    fn a_failed_write_names_the_folder_and_is_not_damage() {
        let bytes = tgz(vec![file("package/package.json", JSON)]);
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let error = extract_tgz(bytes.as_slice(), &gone, small(), "x.tgz").unwrap_err();
        assert!(
            error.contains(&format!(
                "could not write the entry \"package/\" to {}",
                gone.display()
            )),
            "{error}"
        );
        assert!(!error.contains("damaged"), "{error}");
        // The same name twice is the archive's fault.
        let bytes = tgz(vec![
            file("package/package.json", JSON),
            file("package/package.json", JSON),
        ]);
        let error = extract(&bytes, small()).1.unwrap_err();
        assert!(error.contains("clashes with another entry"), "{error}");
    }
}
