//! Opening a plugin library: read it, check it is a library for this machine, make a private
//! shadow copy of the bytes that were read ([`shadow`]), open the copy, find the entry symbol
//! and check the descriptor against the host's ABI (reading it through [`memory`], which never
//! trusts a plugin's pointer). No plugin code runs before the entry symbol, and nothing but the
//! entry symbol runs before the descriptor is accepted.

pub mod info;
pub mod memory;
pub mod shadow;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use libloading::Library;
use pi_hooks_abi::ENTRY_SYMBOL;
use pi_hooks_abi::ffi::*;
use pi_hooks_abi::layout::{AbiSizes, fingerprint_for_minor};

use crate::guards::exception_barrier;
use crate::plugin_files::files::{FileIdentity, MAX_PLUGIN_BYTES, read_regular_with_identity};
use crate::plugin_files::trust::sha256_hex;
use shadow::shadow_copy;

/// A plugin file read into memory, with its hash.
pub struct PluginFile {
    /// The path it was read from.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The file's identity when these bytes were read (see [`FileIdentity`]).
    pub identity: Option<FileIdentity>,
    sha256: OnceLock<String>,
}

impl PluginFile {
    /// A plugin file read from `path`.
    pub fn new(path: PathBuf, bytes: Vec<u8>) -> Self {
        PluginFile {
            path,
            bytes,
            identity: None,
            sha256: OnceLock::new(),
        }
    }

    /// Takes `sha256` as the bytes' hash without computing it: for bytes whose file is known
    /// unchanged since they were hashed (see `crate::packages::verified`). Ignored once the
    /// hash was computed.
    pub fn assume_sha256(&self, sha256: &str) {
        let _ = self.sha256.set(sha256.to_owned());
    }

    /// SHA-256 of the bytes, hex; computed on first use (only plugins that need a trust pin,
    /// and the file cache, need it at load).
    pub fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| sha256_hex(&self.bytes))
    }

    /// The SHA-256 if something already needed it.
    pub fn sha256_if_computed(&self) -> Option<&str> {
        self.sha256.get().map(String::as_str)
    }
}

/// Reads a plugin file: a regular file of at most `MAX_PLUGIN_BYTES`, read once; the bytes
/// hashed here are the bytes that are loaded.
pub fn read_plugin_file(path: &Path) -> Result<PluginFile, String> {
    let (bytes, identity) =
        read_regular_with_identity(path, MAX_PLUGIN_BYTES).map_err(|e| e.to_string())?;
    if bytes.is_empty() {
        return Err(
            "the file is empty (0 bytes): an interrupted build? rebuild the plugin".to_owned(),
        );
    }
    let mut file = PluginFile::new(path.to_path_buf(), bytes);
    file.identity = identity;
    Ok(file)
}

/// An opened library whose descriptor the host accepted.
pub struct OpenedLibrary {
    library: Option<Library>,
    /// The descriptor as the plugin declared it (copied).
    pub descriptor: PiPluginDescriptor,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin's description.
    pub description: String,
    /// The shadow copy that was opened.
    pub shadow_path: PathBuf,
    /// Keeps `shadow_path` readable while this instance lives.
    _backing: crate::library::shadow::Backing,
}

// SAFETY: the descriptor's pointers (strings, functions) point into the library's immutable
// statics and code, which stay mapped for the life of the process (retired libraries are
// never closed), or into the host binary itself (`in_process`); nothing writes through them.
unsafe impl Send for OpenedLibrary {}
// SAFETY: as above; the struct is never mutated after it is built, except by `Drop`.
unsafe impl Sync for OpenedLibrary {}

impl OpenedLibrary {
    /// A plugin whose code is part of the host binary: `descriptor`'s functions are the
    /// host's own (the proxy of an isolated plugin, see `crate::isolate`). Nothing is opened
    /// or mapped; `name`, `version` and `description` are what listings show, and `path` the
    /// file the plugin stands for.
    pub fn in_process(
        descriptor: PiPluginDescriptor,
        name: String,
        version: String,
        description: String,
        path: PathBuf,
    ) -> Self {
        OpenedLibrary {
            library: None,
            descriptor,
            name,
            version,
            description,
            shadow_path: path,
            _backing: crate::library::shadow::Backing::none(),
        }
    }

    /// Whether this is the host's own code standing for a plugin that runs elsewhere (the
    /// proxy of an isolated plugin), rather than an opened library.
    pub fn is_in_process_proxy(&self) -> bool {
        self.library.is_none()
    }

    /// Retires the library without closing it: its code stays mapped for the life of the
    /// process. Closing a library that registered thread-local destructors (every Rust
    /// cdylib that used `thread_local!`) crashes or is ignored on glibc and macOS, so the
    /// host's policy is to keep retired generations mapped; each reload of a changed file
    /// maps a new copy.
    fn keep_mapped(&mut self) {
        if let Some(library) = self.library.take() {
            std::mem::forget(library);
        }
    }
}

impl Drop for OpenedLibrary {
    fn drop(&mut self) {
        self.keep_mapped();
    }
}

/// The folder file shadow copies go to (where no memfd is used, see `crate::library::shadow`):
/// `$PI_HOOKS_CACHE_DIR`, else `<agentDir>/plugin-cache`.
pub fn cache_dir(agent_dir: &Path) -> PathBuf {
    match std::env::var_os("PI_HOOKS_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => agent_dir.join("plugin-cache"),
    }
}

/// The plugin the system loader is opening right now, and the one found stuck there.
///
/// `dlopen` holds a process-wide lock while a library's static initialisers run, so an
/// initialiser that never returns blocks every later `dlopen` in the process, and the C
/// library's `exit` too (it takes the same lock). Once a load overran inside the system
/// loader ([`note_overrun`]), later opens fail at once, naming the culprit, instead of each
/// waiting out its time limit, and the `pi-hooks` binary ends with `_exit`
/// ([`system_loader_stuck`]).
static OPENING: Mutex<Option<PathBuf>> = Mutex::new(None);
static STUCK_IN_LOADER: OnceLock<PathBuf> = OnceLock::new();

/// Records that a load overran its time limit: if it is inside the system loader (a static
/// initialiser that never returns), no further library can be opened in this process.
pub fn note_overrun() {
    if let Some(path) = OPENING.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = STUCK_IN_LOADER.set(path);
    }
}

/// Whether a plugin's static initialiser never returned: the system loader's lock is held
/// for good, so `exit` would wait forever (end the process with `_exit` instead).
pub fn system_loader_stuck() -> bool {
    STUCK_IN_LOADER.get().is_some()
}

/// Opens `file` through a shadow copy in `cache` and checks its descriptor.
pub fn open(file: &PluginFile, cache: &Path) -> Result<OpenedLibrary, String> {
    check_object_header(&file.bytes)?;
    if let Some(stuck) = STUCK_IN_LOADER.get() {
        return Err(format!(
            "not opened: the plugin {} never returned from its static initialisers and holds the system loader's lock, so this process cannot open another library; remove or fix that plugin",
            stuck.display()
        ));
    }
    let copy = shadow_copy(file, cache)?;
    let shadow = copy.path.clone();
    // The library's initialisers and its entry function are the plugin's code.
    let shown = file.path.to_string_lossy();
    let site = crate::guards::crash_guard::CallSite::new(
        "",
        &shown,
        crate::guards::crash_guard::Activity::Load,
        "",
    );
    let running = crate::guards::crash_guard::enter(&site);
    *OPENING.lock().unwrap_or_else(|e| e.into_inner()) = Some(file.path.clone());
    // SAFETY: opening a library runs its initialisers; the user chose to load this file (it
    // is global, explicit or trusted), which is the trust decision loading native code needs.
    let opened = unsafe { open_now(&shadow) };
    *OPENING.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let library = opened.map_err(|e| loader_refusal(&e, &shadow, &file.path))?;
    // Mapped: the copy's file (if any) can go; the memfd stays with the instance.
    let backing = copy.mapped();
    let descriptor = read_descriptor(&library)?;
    drop(running);
    let text = copy_str;
    let name = text(descriptor.name, "name")?;
    if name.trim().is_empty() {
        return Err("the descriptor's name is empty; give the plugin a name".to_owned());
    }
    if name.contains('\0') {
        return Err(
            "the descriptor's name contains a NUL character; give the plugin a plain name"
                .to_owned(),
        );
    }
    Ok(OpenedLibrary {
        version: text(descriptor.version, "version")?,
        description: text(descriptor.description, "description")?,
        name,
        descriptor,
        library: Some(library),
        shadow_path: shadow,
        _backing: backing,
    })
}

/// Explains a `dlopen` failure in terms of the user's file (not the shadow copy), with advice
/// that fits the reason.
fn loader_refusal(error: &libloading::Error, shadow: &Path, original: &Path) -> String {
    // libloading puts the system's reason (dlerror) in the error's source.
    let reason =
        std::error::Error::source(error).map_or_else(|| error.to_string(), |s| s.to_string());
    let reason = reason.replace(
        &shadow.display().to_string(),
        &original.display().to_string(),
    );
    let advice = if let Some(symbol) = reason.split("undefined symbol: ").nth(1) {
        format!(
            "the plugin uses `{}`, which no loaded library provides: link the plugin against the library that defines it",
            symbol.trim()
        )
    } else if reason.contains("cannot open shared object file") {
        format!(
            "a library the plugin depends on is not on the loader's path: check `ldd {}` and install it or set its rpath",
            original.display()
        )
    } else {
        "rebuild the plugin for this machine".to_owned()
    };
    format!("the system loader refused the library ({reason}); {advice}")
}

/// Opens with every symbol resolved now (a missing dependency fails here, not mid-call) and
/// kept local to the library.
///
/// # Safety
/// Runs the library's initialisers.
unsafe fn open_now(path: &Path) -> Result<Library, libloading::Error> {
    #[cfg(unix)]
    {
        use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
        // SAFETY: forwarded contract.
        unsafe { UnixLibrary::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map(Library::from)
    }
    #[cfg(not(unix))]
    {
        // SAFETY: forwarded contract.
        unsafe { Library::new(path) }
    }
}

/// The longest descriptor string (name, version, description) the host reads.
const MAX_DESCRIPTOR_TEXT: usize = 1 << 20;

/// Copies a descriptor string out of the plugin's memory, without trusting its pointer.
fn copy_str(s: PiStr, field: &str) -> Result<String, String> {
    if s.ptr.is_null() && s.len == 0 {
        return Ok(String::new());
    }
    if s.len > MAX_DESCRIPTOR_TEXT {
        return Err(format!(
            "the descriptor's {field} is {} bytes long, more than the {MAX_DESCRIPTOR_TEXT} the host reads; is its length right?",
            s.len
        ));
    }
    // SAFETY: checked on Linux; elsewhere the ABI's contract (static strings) is all there is.
    let bytes = unsafe { memory::copy(s.ptr.cast(), s.len) }.ok_or_else(|| {
        format!(
            "the descriptor's {field} points to {:p}, which is not readable memory; point it at a static string",
            s.ptr
        )
    })?;
    String::from_utf8(bytes).map_err(|_| format!("the descriptor's {field} is not valid UTF-8"))
}

/// Refuses what the system loader would refuse with a worse message, or crash on: text,
/// executables, libraries of another format or CPU, and truncated files (a segment that
/// runs past the end of the file makes `dlopen` die of SIGBUS instead of failing).
pub fn check_object_header(bytes: &[u8]) -> Result<(), String> {
    use object::{FileKind, Object, ObjectKind, ObjectSegment};

    let expected = if cfg!(target_os = "macos") {
        "Mach-O"
    } else if cfg!(windows) {
        "PE"
    } else {
        "ELF"
    };
    if bytes.starts_with(b"!<arch>\n") {
        return Err(
            "is a static archive (a Rust .rlib or a C .a), not a shared library; for a Rust plugin add `crate-type = [\"cdylib\"]` to the [lib] section of its Cargo.toml and use the lib<name>.so cargo then builds; for C, link with -shared"
                .to_owned(),
        );
    }
    let format = match FileKind::parse(bytes) {
        Ok(FileKind::Elf32 | FileKind::Elf64) => "ELF",
        Ok(FileKind::MachO32 | FileKind::MachO64 | FileKind::MachOFat32 | FileKind::MachOFat64) => {
            "Mach-O"
        }
        Ok(FileKind::Pe32 | FileKind::Pe64) => "PE",
        Ok(other) => {
            return Err(format!(
                "is a {other:?} file, not a shared library; build the plugin as a shared library"
            ));
        }
        Err(_)
            if bytes
                .iter()
                .take(512)
                .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) =>
        {
            return Err(format!(
                "is a text file, not a compiled library (it starts with {:?}); build the plugin and point at the .{} it produces",
                String::from_utf8_lossy(&bytes[..bytes.len().min(24)]),
                crate::plugin_files::paths::LIBRARY_SUFFIX
            ));
        }
        Err(_) if bytes.starts_with(b"\x7fELF") => {
            return Err(format!(
                "is a truncated ELF file ({} bytes); rebuild the plugin",
                bytes.len()
            ));
        }
        Err(_) => {
            return Err(format!(
                "is not a shared library (no {expected} header); build the plugin as a shared library"
            ));
        }
    };
    if format != expected {
        return Err(format!(
            "is a {format} binary, but this host loads {expected} libraries; build the plugin for this system"
        ));
    }
    let file = object::File::parse(bytes).map_err(|e| {
        format!("is a damaged or truncated {format} file ({e}); rebuild the plugin")
    })?;
    let built_for = arch_name(file.architecture());
    let arch = std::env::consts::ARCH;
    if built_for.as_deref() != Some(arch) {
        let built_for = built_for.unwrap_or_else(|| format!("{:?}", file.architecture()));
        return Err(format!(
            "is built for {built_for}; this host is {arch}. Rebuild the plugin for {arch}"
        ));
    }
    if file.is_64() != cfg!(target_pointer_width = "64") {
        let bits = if file.is_64() { 64 } else { 32 };
        return Err(format!(
            "is a {bits}-bit library; this host is {}-bit. Rebuild it for this machine",
            usize::BITS
        ));
    }
    match file.kind() {
        ObjectKind::Dynamic => {}
        ObjectKind::Executable => {
            return Err("is an executable, not a shared library; build it with -shared (C) or crate-type = [\"cdylib\"] (Rust)".to_owned());
        }
        ObjectKind::Relocatable => {
            return Err(
                "is an object file (.o), not a shared library; link it with -shared".to_owned(),
            );
        }
        other => return Err(format!("is a {other:?} file, not a shared library")),
    }
    let len = bytes.len() as u64;
    if let Some(end) = file
        .segments()
        .map(|s| s.file_range())
        .map(|(at, size)| at.saturating_add(size))
        .find(|end| *end > len)
    {
        return Err(format!(
            "is truncated: the file is {len} bytes but its segments need {end}; an interrupted build or copy? rebuild the plugin"
        ));
    }
    Ok(())
}

/// Rust's name (`std::env::consts::ARCH`) of an object file's architecture.
fn arch_name(architecture: object::Architecture) -> Option<String> {
    use object::Architecture as A;
    let name = match architecture {
        A::X86_64 => "x86_64",
        A::Aarch64 => "aarch64",
        A::I386 => "x86",
        A::Arm => "arm",
        A::Riscv64 => "riscv64",
        A::Riscv32 => "riscv32",
        A::PowerPc64 => "powerpc64",
        A::PowerPc => "powerpc",
        A::S390x => "s390x",
        A::LoongArch64 => "loongarch64",
        A::Mips => "mips",
        A::Mips64 => "mips64",
        A::Sparc64 => "sparc64",
        _ => return None,
    };
    Some(name.to_owned())
}

/// Finds the entry symbol and checks the descriptor it returns.
fn read_descriptor(library: &Library) -> Result<PiPluginDescriptor, String> {
    // SAFETY: the symbol's type is the ABI's PiEntryFn by the contract of its name.
    let entry = unsafe { library.get::<PiEntryFn>(ENTRY_SYMBOL.as_bytes()) };
    let entry = match entry {
        Ok(entry) => *entry,
        Err(_) => return Err(missing_entry(library)),
    };
    // SAFETY: the entry takes no arguments and returns a pointer to a static descriptor.
    let ptr = unsafe { exception_barrier::entry(entry) }
        .map_err(|what| format!("{ENTRY_SYMBOL}() threw a C++ exception: {what}"))?;
    if ptr.is_null() {
        return Err(format!(
            "{ENTRY_SYMBOL}() returned NULL instead of a descriptor"
        ));
    }
    // The pointer comes from plugin code: copy through the checked reader, never trust it.
    let unreadable = || {
        format!(
            "{ENTRY_SYMBOL}() returned {ptr:p}, which does not point to a readable descriptor; return the address of a static PiPluginDescriptor (PI_HOOKS_PLUGIN does)"
        )
    };
    // A descriptor starts with its u32 size and the two version words; every version of the
    // ABI has at least these 12 bytes.
    // SAFETY: checked on Linux; elsewhere the ABI's contract (a static descriptor) is all
    // there is.
    let head = unsafe { memory::copy(ptr.cast(), 12) }.ok_or_else(unreadable)?;
    let word = |i: usize| u32::from_ne_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let (size, major, minor) = (word(0), word(4), word(8));
    check_versions(major, minor)?;
    let Some(expected) = AbiSizes::for_minor(minor) else {
        return Err(format!("this host has no size table for ABI 1.{minor}"));
    };
    if size != expected.descriptor {
        return Err(format!(
            "its descriptor is {size} bytes, ABI {major}.{minor} defines {}: the plugin was built against a different header of the same version; rebuild it against the current pi_hooks.h",
            expected.descriptor
        ));
    }
    // SAFETY: as for the head.
    let bytes = unsafe { memory::copy(ptr.cast(), size_of::<PiPluginDescriptor>()) }
        .ok_or_else(unreadable)?;
    // SAFETY: `bytes` holds a whole descriptor's worth of bytes (the size was checked), and
    // every bit pattern is a valid PiPluginDescriptor: integers, PiStr (a raw pointer and a
    // length) and optional function pointers (any non-zero value is `Some`, which is only
    // called after the checks below).
    let descriptor = unsafe { bytes.as_ptr().cast::<PiPluginDescriptor>().read_unaligned() };
    check_descriptor(&descriptor, &expected)?;
    Ok(descriptor)
}

fn check_versions(major: u32, minor: u32) -> Result<(), String> {
    if major != PI_HOOKS_ABI_MAJOR {
        return Err(format!(
            "its descriptor says ABI {major}.{minor}, but it exports {ENTRY_SYMBOL} (ABI {PI_HOOKS_ABI_MAJOR}); the plugin is inconsistent, rebuild it"
        ));
    }
    if minor > PI_HOOKS_ABI_MINOR {
        return Err(format!(
            "built for ABI {major}.{minor}, newer than this host's {PI_HOOKS_ABI_MAJOR}.{PI_HOOKS_ABI_MINOR}; upgrade pi-hooks or rebuild the plugin against the older header"
        ));
    }
    Ok(())
}

/// Checks the sizes, fingerprint and required fields of a descriptor of a known minor.
pub fn check_descriptor(d: &PiPluginDescriptor, expected: &AbiSizes) -> Result<(), String> {
    let declared = AbiSizes::of_descriptor(d);
    if let Some((name, got, want)) = declared.mismatches(expected).first() {
        return Err(format!(
            "its descriptor says {name} is {got} bytes, ABI {}.{} defines {want}: the plugin was built against a different header of the same version; rebuild it against the current pi_hooks.h",
            d.abi_major, d.abi_minor
        ));
    }
    if d.layout_fingerprint != 0
        && let Some(known) = fingerprint_for_minor(d.abi_minor)
        && known != d.layout_fingerprint
    {
        return Err(format!(
            "its layout fingerprint {:#018x} differs from ABI {}.{}'s {known:#018x}: it was built against an edited header that kept the version number; rebuild it against the released pi_hooks.h",
            d.layout_fingerprint, d.abi_major, d.abi_minor
        ));
    }
    if d.init.is_none() {
        return Err("its descriptor has no init function".to_owned());
    }
    Ok(())
}

/// Explains a missing entry symbol: another major's symbol, or none at all.
fn missing_entry(library: &Library) -> String {
    let other = (0..=9u32).filter(|m| *m != PI_HOOKS_ABI_MAJOR).find(|m| {
        let name = format!("pi_hooks_plugin_v{m}");
        // SAFETY: only looking the symbol up; it is never called.
        unsafe { library.get::<*const ()>(name.as_bytes()) }.is_ok()
    });
    match other {
        Some(m) if m < PI_HOOKS_ABI_MAJOR => format!(
            "it was built for plugin ABI {m} (exports pi_hooks_plugin_v{m}); this host speaks ABI {PI_HOOKS_ABI_MAJOR}. Rebuild the plugin against the current pi_hooks.h"
        ),
        Some(m) => format!(
            "it was built for plugin ABI {m} (exports pi_hooks_plugin_v{m}), newer than this host's ABI {PI_HOOKS_ABI_MAJOR}; upgrade pi-hooks"
        ),
        None => format!(
            "it does not export the entry symbol {ENTRY_SYMBOL}, so it is not a pi-hooks plugin (C: define it with PI_HOOKS_PLUGIN(...); Rust: use pi_hooks_abi::plugin!)"
        ),
    }
}
