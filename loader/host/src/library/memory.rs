//! Reading memory a plugin points to, without trusting the pointer: the descriptor its entry
//! function returns and the strings in it are copied with `process_vm_readv` on Linux, which
//! fails with `EFAULT` on an unmapped address instead of crashing the host. Elsewhere (and if
//! the kernel refuses the call) the memory is read directly.

/// Copies `len` bytes at `address` out of the plugin, or `None` when they are not readable.
///
/// # Safety
/// On Linux none: a wild address gives `None`. Elsewhere, or when the kernel refuses
/// `process_vm_readv` (a seccomp filter), the memory is read directly, so a non-NULL
/// `address` must then point to `len` readable bytes, as the ABI requires of plugins.
pub unsafe fn copy(address: *const u8, len: usize) -> Option<Vec<u8>> {
    if address.is_null() {
        return None;
    }
    let mut out = vec![0u8; len];
    if len == 0 {
        return Some(out);
    }
    #[cfg(target_os = "linux")]
    {
        let local = libc::iovec {
            iov_base: out.as_mut_ptr().cast(),
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: address.cast_mut().cast(),
            iov_len: len,
        };
        // SAFETY: `local` describes `out`, which is writable for `len` bytes; the kernel checks
        // `remote` itself and answers EFAULT for memory that is not mapped readable.
        let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if copied == len as isize {
            return Some(out);
        }
        let refused = std::io::Error::last_os_error().raw_os_error();
        if copied >= 0 || refused == Some(libc::EFAULT) {
            return None;
        }
    }
    // SAFETY: no checked reader here: by the caller's contract `address` points to `len`
    // readable bytes.
    unsafe { std::ptr::copy_nonoverlapping(address, out.as_mut_ptr(), len) };
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_readable_memory_and_refuses_wild_addresses() {
        let text = b"descriptor";
        // SAFETY: readable bytes, NULL, and (Linux only) an address the kernel checks.
        unsafe {
            assert_eq!(copy(text.as_ptr(), text.len()).as_deref(), Some(&text[..]));
            assert_eq!(copy(std::ptr::null(), 4), None);
            #[cfg(target_os = "linux")]
            assert_eq!(copy(0x10 as *const u8, 4), None);
        }
    }
}
