//! What a plugin learns about itself (`PiActionsApi::identity` and `data_dir`, ABI 1.6): its
//! [`PluginIdentity`] and its own folder, `${data}` of its grant.
//!
//! The loader decides a plugin's identity before the plugin loads ([`assign`]), so that it
//! holds from the plugin's `init` on, in process and in the `serve` child of an isolated or
//! confined plugin (which gets it on its command line, `serve --identity --data-dir`, see
//! `crate::isolate::child::Launch`). A plugin nobody assigned one to is the plain library it
//! was loaded from ([`PluginIdentity::library`]).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use crate::identity::{PackageName, PluginIdentity};

/// Who a plugin is and where its own folder is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Own {
    /// Its identity.
    pub identity: PluginIdentity,
    /// Its folder, when the loader gave one (a `serve` child gets the host's); `None`:
    /// [`PluginIdentity::data_dir`] under the agent directory.
    pub data_dir: Option<PathBuf>,
}

impl Own {
    /// What a plugin loaded from `path` is: what [`assign`] recorded for that file, else the
    /// library at `path`.
    pub fn of(path: &Path) -> Own {
        assigned(path).unwrap_or_else(|| Own {
            identity: PluginIdentity::library(path),
            data_dir: None,
        })
    }

    /// Its folder: the one given, else `<agentDir>/pi-hooks/data/<folder name>`.
    pub fn data_dir(&self) -> Result<PathBuf, String> {
        match &self.data_dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self
                .identity
                .data_dir(&crate::plugin_files::paths::agent_dir()?)),
        }
    }
}

/// Identities the loader assigned, by the canonical path of the plugin file.
static ASSIGNED: RwLock<Vec<(PathBuf, Own)>> = RwLock::new(Vec::new());

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Records that the plugin file at `path` is `identity`, with its folder at `data_dir`
/// (`None`: under the agent directory). Every plugin loaded from that file afterwards (a
/// reload included) is it from its `init` on, and an isolated or confined one's child is
/// told so. Replaces an earlier assignment of the same file.
pub fn assign(path: &Path, identity: PluginIdentity, data_dir: Option<PathBuf>) {
    let path = canonical(path);
    let mut all = ASSIGNED.write().unwrap_or_else(|e| e.into_inner());
    all.retain(|(p, _)| *p != path);
    all.push((path, Own { identity, data_dir }));
}

/// What [`assign`] recorded for the file at `path`.
pub fn assigned(path: &Path) -> Option<Own> {
    let all = ASSIGNED.read().unwrap_or_else(|e| e.into_inner());
    if all.is_empty() {
        return None;
    }
    let path = canonical(path);
    all.iter()
        .find(|(p, _)| *p == path)
        .map(|(_, own)| own.clone())
}

/// `package:<name>` or `library:<canonical path>`: what `identity` hands the plugin, and
/// what `serve --identity` reads. `None` for a library path that is not UTF-8.
pub fn tagged(identity: &PluginIdentity) -> Option<String> {
    match identity {
        PluginIdentity::Package(name) => Some(format!("package:{name}")),
        PluginIdentity::Library(path) => path.to_str().map(|p| format!("library:{p}")),
    }
}

/// Reads [`tagged`]'s text back. `Err` says what is wrong.
pub fn parse_tagged(text: &str) -> Result<PluginIdentity, String> {
    if let Some(name) = text.strip_prefix("package:") {
        return PackageName::parse(name).map(PluginIdentity::Package);
    }
    match text.strip_prefix("library:") {
        Some(path) if Path::new(path).is_absolute() => {
            Ok(PluginIdentity::Library(PathBuf::from(path)))
        }
        Some(_) => Err(format!(
            "{:?} is not an identity: a library's is its absolute path",
            crate::guards::display::escape(text)
        )),
        None => Err(format!(
            "{:?} is not an identity: write package:<name> or library:<absolute path>",
            crate::guards::display::escape(text)
        )),
    }
}

/// Makes sure `dir` is a folder of its own: creates what is missing, the folder itself with
/// mode 0700, and refuses a symlink (or anything but a folder) in its place instead of
/// following it. Its parents are created as `create_dir_all` does (mode 0700 too).
#[cfg(unix)]
pub fn ensure_data_dir(dir: &Path) -> Result<(), String> {
    use rustix::fs::{Mode, OFlags};
    let shown = || crate::guards::display::escape(&dir.display().to_string()).into_owned();
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(format!("{} is not a folder a plugin can own", shown()));
    };
    let refused = |e: rustix::io::Errno| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            format!(
                "{} is not a folder (a symlink or a file is in its place; it was not followed): remove it",
                shown()
            )
        } else {
            format!("cannot open {}: {e}", shown())
        }
    };
    // There already (the usual case, and the only one a confined plugin's child sees: its
    // host made it, and the child may not read the parent).
    match rustix::fs::open(
        dir,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(_) => return Ok(()),
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(refused(e)),
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let parent_fd = rustix::fs::open(
        parent,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open {}: {e}", parent.display()))?;
    let open_own = || {
        rustix::fs::openat(
            &parent_fd,
            name,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    match rustix::fs::mkdirat(&parent_fd, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(format!("cannot create {}: {e}", shown())),
    }
    open_own().map(drop).map_err(refused)
}

/// Elsewhere than Unix: the folder is created, and a symlink in its place refused.
#[cfg(not(unix))]
pub fn ensure_data_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        _ => Err(format!("{} is not a folder: remove it", dir.display())),
    }
}

/// The texts `identity` and `data_dir` handed one plugin: each stays allocated while the
/// plugin's state lives (for the rest of the process, see `PluginState::create`), so a
/// `PiStr` the plugin holds never dangles, even after [`Own`] changed.
#[derive(Default)]
pub struct HandedOut(Mutex<Vec<CString>>);

impl HandedOut {
    /// A NUL-terminated copy of `text` that lives as long as `self`: `(pointer, length)`.
    /// `None` for text with an interior NUL.
    pub fn keep(&self, text: &str) -> Option<(*const std::os::raw::c_char, usize)> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = kept.iter().find(|k| k.as_bytes() == text.as_bytes()) {
            return Some((found.as_ptr(), text.len()));
        }
        let copy = CString::new(text).ok()?;
        // The CString's bytes are on the heap: moving it into the Vec does not move them.
        let ptr = copy.as_ptr();
        kept.push(copy);
        Some((ptr, text.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_identities_read_back() {
        let package = PluginIdentity::Package(PackageName::parse("@acme/gate").unwrap());
        let library = PluginIdentity::Library(PathBuf::from("/p/libgate.so"));
        for identity in [package, library] {
            let text = tagged(&identity).unwrap();
            assert_eq!(parse_tagged(&text).unwrap(), identity);
        }
        assert_eq!(
            tagged(&PluginIdentity::Library("/p/libgate.so".into())).unwrap(),
            "library:/p/libgate.so"
        );
        for bad in ["package:@acme gate", "library:rel/x.so", "gate", "lib:/x"] {
            assert!(parse_tagged(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_data_folder_is_made_0700_and_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("agent/pi-hooks/data/package.gate");
        ensure_data_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_data_dir(&dir).unwrap();
        let target = root.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let link = root.path().join("agent/pi-hooks/data/package.other");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = ensure_data_dir(&link).unwrap_err();
        assert!(e.contains("not a folder"), "{e}");
        let file = root.path().join("agent/pi-hooks/data/package.file");
        std::fs::write(&file, "x").unwrap();
        assert!(ensure_data_dir(&file).is_err());
    }

    /// The Rust SDK asks through the host's real tables, in `init` and after: the identity
    /// assigned before the load holds from `init` on, and `set_identity` changes the answer.
    #[test]
    fn a_rust_plugin_asks_who_it_is_through_the_sdk() {
        use pi_hooks_abi::ffi::{PiHostApi, PiPlugin, PiPluginDescriptor, PiStatus};
        use pi_hooks_abi::sdk::{self, Identity, PluginHandle};
        use std::sync::OnceLock;

        static IN_INIT: Mutex<Option<(Identity, PathBuf)>> = Mutex::new(None);
        static HANDLE: OnceLock<PluginHandle> = OnceLock::new();
        unsafe extern "C" fn init(host: *const PiHostApi, plugin: *mut PiPlugin) -> PiStatus {
            // SAFETY: called by the host as a plugin's init, with its table and handle.
            unsafe {
                sdk::run_init(host, plugin, |pi| {
                    let handle = pi.handle();
                    *IN_INIT.lock().unwrap() = Some((handle.identity()?, handle.data_dir()?));
                    let _ = HANDLE.set(handle);
                    Ok(())
                })
            }
        }

        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("libgate.so");
        let data = root.path().join("agent/pi-hooks/data/package.@acme+gate");
        let gate = PluginIdentity::Package(PackageName::parse("@acme/gate").unwrap());
        assign(&path, gate, Some(data.clone()));
        let descriptor = PiPluginDescriptor {
            init: Some(init),
            ..crate::isolate::proxy::descriptor()
        };
        let library = crate::library::OpenedLibrary::in_process(
            descriptor,
            "gate".into(),
            "1.0.0".into(),
            String::new(),
            path.clone(),
        );
        let plugin = crate::plugin::LoadedPlugin::init(
            library,
            path.display().to_string(),
            crate::plugin_files::discover::Origin::Cli,
            crate::plugin_files::trust::TrustState::NotRequired,
            None,
        )
        .unwrap();
        assert_eq!(
            IN_INIT.lock().unwrap().clone(),
            Some((Identity::Package("@acme/gate".into()), data.clone()))
        );
        assert!(data.is_dir(), "data_dir did not make the folder");
        let handle = *HANDLE.get().unwrap();
        assert_eq!(handle.identity().unwrap().to_string(), "package:@acme/gate");
        plugin.set_identity(PluginIdentity::Library("/p/libgate.so".into()));
        assert_eq!(
            handle.identity().unwrap(),
            Identity::Library("/p/libgate.so".into())
        );
        assert_eq!(
            plugin.identity(),
            PluginIdentity::Library("/p/libgate.so".into())
        );
        plugin.retire();
        assert!(handle.identity().is_err(), "a retired plugin was answered");
    }

    #[test]
    fn handed_out_text_stays_put() {
        let kept = HandedOut::default();
        let (a, len) = kept.keep("library:/p/x.so").unwrap();
        for i in 0..100 {
            kept.keep(&format!("other {i}"));
        }
        let (b, _) = kept.keep("library:/p/x.so").unwrap();
        assert_eq!(a, b);
        // SAFETY: `a` points at a live CString of `len` bytes and its NUL.
        let bytes = unsafe { std::slice::from_raw_parts(a.cast::<u8>(), len + 1) };
        assert_eq!(bytes, b"library:/p/x.so\0");
    }
}
