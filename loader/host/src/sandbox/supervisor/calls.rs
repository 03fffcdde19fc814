//! The calls the supervisor is sent ([`CALLS`]): their numbers, what each asks for, and
//! where its paths are.

/// What a notified call asks for.
#[derive(Debug, Clone, Copy)]
pub enum Access {
    /// An open: read or write by its flags.
    Open(OpenFlags),
    /// A change of a folder's entries or of a file (a write), with its verb for the report.
    Change(&'static str),
    /// Running a program.
    Exec,
}

/// Where an open's flags are.
#[derive(Debug, Clone, Copy)]
pub enum OpenFlags {
    /// In this argument.
    Arg(usize),
    /// In the `struct open_how` this argument points at (its first field).
    How(usize),
    /// `creat`: always a write.
    Create,
}

/// One notified call: its number, what it asks for, and the paths it names, each as (the
/// argument holding the folder descriptor it is relative to, if any; the argument holding
/// the path).
pub struct Call {
    /// The call's number.
    pub number: i64,
    /// What it asks for.
    pub access: Access,
    /// Its paths: (the folder descriptor's argument, if any; the path's argument).
    pub paths: &'static [(Option<usize>, usize)],
}

/// The calls whose refusals are named (see the module's text).
pub const CALLS: &[Call] = &[
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_open,
        access: Access::Open(OpenFlags::Arg(1)),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_creat,
        access: Access::Open(OpenFlags::Create),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_openat,
        access: Access::Open(OpenFlags::Arg(2)),
        paths: &[(Some(0), 1)],
    },
    Call {
        number: libc::SYS_openat2,
        access: Access::Open(OpenFlags::How(2)),
        paths: &[(Some(0), 1)],
    },
    Call {
        number: libc::SYS_truncate,
        access: Access::Change("truncate"),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_mkdir,
        access: Access::Change("mkdir"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_mkdirat,
        access: Access::Change("mkdir"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_mknod,
        access: Access::Change("mknod"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_mknodat,
        access: Access::Change("mknod"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_unlink,
        access: Access::Change("remove"),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_rmdir,
        access: Access::Change("remove"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_unlinkat,
        access: Access::Change("remove"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_rename,
        access: Access::Change("rename"),
        paths: &[(None, 0), (None, 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_renameat,
        access: Access::Change("rename"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    Call {
        number: libc::SYS_renameat2,
        access: Access::Change("rename"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_link,
        access: Access::Change("link"),
        paths: &[(None, 0), (None, 1)],
    },
    Call {
        number: libc::SYS_linkat,
        access: Access::Change("link"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    // The link's target is only text; the new name is what is created.
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_symlink,
        access: Access::Change("symlink"),
        paths: &[(None, 1)],
    },
    Call {
        number: libc::SYS_symlinkat,
        access: Access::Change("symlink"),
        paths: &[(Some(1), 2)],
    },
    Call {
        number: libc::SYS_execve,
        access: Access::Exec,
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_execveat,
        access: Access::Exec,
        paths: &[(Some(0), 1)],
    },
];

/// The notified call `number`, if it is one.
pub fn call(number: i64) -> Option<&'static Call> {
    CALLS.iter().find(|c| c.number == number)
}

/// Whether a successful call returns a new descriptor (closed again if its answer cannot be
/// delivered).
pub fn returns_descriptor(number: i64) -> bool {
    call(number).is_some_and(|c| matches!(c.access, Access::Open(_)))
}
