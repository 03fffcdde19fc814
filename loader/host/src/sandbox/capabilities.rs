//! Capabilities: a confined child drops every one it has, in all five sets (bounding,
//! ambient, inheritable, permitted, effective), before Landlock and seccomp and after what
//! needs them (making its cgroups, [`super::cgroup`]). As root this is what keeps
//! `sethostname`, `mknod` of devices, `chroot`, reading other users' files
//! (`CAP_DAC_OVERRIDE`) and the other privileged calls out of a plugin's reach (the seccomp
//! filter refuses most of them by name as well). An empty bounding set also means a program
//! the plugin runs as root gains no capability at `execve`. A child that is not root has
//! none to drop (the bounding set cannot be changed without `CAP_SETPCAP`; it grants
//! nothing to a process that has no capability and `no_new_privs`).

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap`, read
/// before Landlock; 63 where it cannot be read: dropping an unknown one fails harmlessly).
fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// The capability sets of this thread: effective, permitted, inheritable (64 bits each).
fn sets() -> std::io::Result<[u64; 3]> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget fills the two Data words passed (version 3), locals of the right type.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let join = |low: u32, high: u32| u64::from(low) | (u64::from(high) << 32);
    Ok([
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ])
}

/// Whether any capability is in this process's bounding set.
fn bounding_left(last: u32) -> bool {
    // SAFETY: PR_CAPBSET_READ takes a capability number, no pointer.
    (0..=last).any(|cap| unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong) } == 1)
}

/// Whether any capability is in this process's ambient set.
fn ambient_left(last: u32) -> bool {
    (0..=last).any(|cap| {
        // SAFETY: PR_CAP_AMBIENT_IS_SET takes a capability number, no pointer.
        let set = unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
                cap as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        set == 1
    })
}

/// Drops every capability of this (single-threaded) process, in all five sets. `Err`: one
/// is left, with the set it is in (the child then loads nothing).
pub fn drop_all(plugin: &str) -> Result<(), String> {
    let last = last_capability();
    let fail = |what: &str| format!("cannot confine plugin {plugin}: {what}");
    // The bounding set first: dropping from it needs CAP_SETPCAP, which goes last.
    for cap in 0..=last {
        // SAFETY: PR_CAPBSET_DROP takes a capability number, no pointer. It fails (EPERM)
        // without CAP_SETPCAP, when there is nothing this process could gain from it.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong) };
    }
    // SAFETY: PR_CAP_AMBIENT_CLEAR_ALL takes no pointer.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: capset reads the header and two Data words (version 3), locals of the right
    // type; empty sets are always allowed (a process may drop what it has).
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(fail(&format!(
            "dropping its capabilities failed ({})",
            std::io::Error::last_os_error()
        )));
    }
    let [effective, permitted, inheritable] =
        sets().map_err(|e| fail(&format!("reading its capabilities failed ({e})")))?;
    let mut left = Vec::new();
    if effective != 0 {
        left.push("effective");
    }
    if permitted != 0 {
        left.push("permitted");
    }
    if inheritable != 0 {
        left.push("inheritable");
    }
    if ambient_left(last) {
        left.push("ambient");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && bounding_left(last) {
        left.push("bounding");
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(fail(&format!(
            "capabilities are left in its {} set(s)",
            left.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_capabilities_read_as_three_sets() {
        let [effective, permitted, _] = sets().unwrap();
        // Effective is within permitted, whoever runs the test.
        assert_eq!(effective & !permitted, 0);
        assert!(last_capability() >= 30);
    }
}
