//! Computes the layout fingerprint of the ABI types.
//!
//! The fingerprint is a 64-bit FNV-1a hash of the source of `src/ffi/*.rs` with comments and
//! whitespace (and trailing commas) removed, so it changes with any edit to a type, field, function pointer or
//! constant of the ABI, and not with documentation. A Rust plugin embeds the value it was built
//! with; the host refuses a plugin whose fingerprint differs at the same ABI minor (an edited
//! header that kept its version number).

use std::{env, fs, path::PathBuf};

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("src/ffi");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("read src/ffi")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let text = fs::read_to_string(&file).expect("read ffi source");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for byte in name.bytes().chain(normalise(&text).bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("fingerprint.rs");
    fs::write(out, format!("0x{hash:016x}")).expect("write fingerprint");
}

/// Drops `//` comments (including doc comments), all whitespace, and trailing commas, so that
/// neither documentation nor formatting changes the fingerprint.
fn normalise(source: &str) -> String {
    let compact: String = source
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    let mut out = String::with_capacity(compact.len());
    let mut chars = compact.chars().peekable();
    while let Some(c) = chars.next() {
        let trailing = c == ','
            && chars
                .peek()
                .is_some_and(|next| matches!(next, ')' | '}' | ']' | '>'));
        if !trailing {
            out.push(c);
        }
    }
    out
}
