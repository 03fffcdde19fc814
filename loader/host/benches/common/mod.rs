//! Shared by the benches: compiles the C fixtures in `benches/fixtures/` into distinct
//! plugin libraries at bench start, with the system C compiler (`$CC`, else `cc`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the benches live in `loader/<crate>/benches`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// `loader/host/benches/fixtures/<name>.c`.
pub fn fixture(name: &str) -> PathBuf {
    workspace_root()
        .join("loader/host/benches/fixtures")
        .join(format!("{name}.c"))
}

/// Compiles fixture `name` `count` times into `dir`, each copy with its own
/// `-DPLUGIN_NAME="<name>-NN"`, as `lib<name>_NN.so`: `count` distinct files (different bytes,
/// hence different SHA-256 and shadow copies) and distinct plugins. Runs one compiler per
/// core.
pub fn build_plugins(dir: &Path, name: &str, count: usize) -> Vec<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let source = fixture(name);
    let include = workspace_root().join("include");
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let outputs: Vec<PathBuf> = (0..count)
        .map(|i| {
            dir.join(format!(
                "{}{name}_{i:02}{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        })
        .collect();
    let indexed: Vec<(usize, &PathBuf)> = outputs.iter().enumerate().collect();
    std::thread::scope(|scope| {
        for chunk in indexed.chunks(count.div_ceil(jobs).max(1)) {
            let (cc, source, include) = (&cc, &source, &include);
            scope.spawn(move || {
                for (i, out) in chunk {
                    let status = Command::new(cc)
                        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"])
                        .args(["-shared", "-fPIC", "-I"])
                        .arg(include)
                        .arg(format!("-DPLUGIN_NAME=\"{name}-{i:02}\""))
                        .arg("-o")
                        .arg(out)
                        .arg(source)
                        .status()
                        .expect("run the C compiler");
                    assert!(status.success(), "{cc} failed on {}", source.display());
                }
            });
        }
    });
    outputs
}

/// Total size in bytes of `files`.
pub fn total_size(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum()
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The `q` quantile (0..=1) of sorted `values`, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}
