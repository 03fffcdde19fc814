//! What a refused call named, captured by the supervisor while the call still waits
//! ([`capture`]), into storage made ahead ([`POOL`]: a few slots in a static, each with an
//! atomic state), so that the naming thread can name the refusal however late it comes to
//! it: the call's memory may have changed by then, its descriptors may have been closed, and
//! the call itself answered. Nothing here allocates (a plugin thread may hold the memory
//! allocator's lock while its call waits).
//!
//! A slot is claimed by the supervisor ([`Pool::claim`]), filled, handed over by its index
//! ([`Slot::hand`]), taken by the naming thread ([`Pool::take`]) and freed when the naming
//! thread's [`Slot`] is dropped. A slot nobody hands over is freed when dropped too.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

use super::calls::{Access, Call, OpenFlags};
use super::naming::read_memory;

/// The longest path captured (`PATH_MAX`, its NUL included).
pub const PATH_MAX: usize = 4096;

/// How many refusals can wait to be named at once (more fall back to reading the call's
/// memory later, see `super::naming`).
pub const SLOTS: usize = 8;

/// The slots the supervisor captures into.
pub static POOL: Pool<SLOTS> = Pool::new();

/// One path a call names, as captured.
pub struct CapturedPath {
    /// The path's bytes (`text[..text_len]`, without its NUL).
    text: [u8; PATH_MAX],
    text_len: usize,
    /// For a relative (or empty) path: the folder it is relative to, absolute
    /// (`base[..base_len]`), when it could be read.
    base: [u8; PATH_MAX],
    base_len: Option<usize>,
}

impl CapturedPath {
    const EMPTY: CapturedPath = CapturedPath {
        text: [0; PATH_MAX],
        text_len: 0,
        base: [0; PATH_MAX],
        base_len: None,
    };

    /// The path as the call gave it.
    pub fn text(&self) -> &[u8] {
        &self.text[..self.text_len]
    }

    /// The folder a relative path is relative to (`None`: an absolute path, or the folder
    /// could not be read).
    pub fn base(&self) -> Option<&[u8]> {
        self.base_len.map(|len| &self.base[..len])
    }
}

/// What a refused call named: its paths (at most two) and, for an open, its flags.
pub struct Captured {
    paths: [CapturedPath; 2],
    count: usize,
    /// An open's flags (`None`: not an open, or `openat2`'s could not be read).
    flags: Option<i32>,
}

impl Captured {
    const EMPTY: Captured = Captured {
        paths: [CapturedPath::EMPTY, CapturedPath::EMPTY],
        count: 0,
        flags: None,
    };

    /// The paths, in the call's order.
    pub fn paths(&self) -> &[CapturedPath] {
        &self.paths[..self.count]
    }

    /// An open's flags.
    pub fn flags(&self) -> Option<i32> {
        self.flags
    }
}

/// A slot's states.
const FREE: u8 = 0;
/// Claimed by one thread, which alone reads and writes it.
const OWNED: u8 = 1;
/// Filled and handed over; nobody touches it until it is taken.
const HANDED: u8 = 2;

/// `N` slots, each with its state.
pub struct Pool<const N: usize> {
    states: [AtomicU8; N],
    slots: [UnsafeCell<Captured>; N],
}

// SAFETY: a slot's contents are touched only by the one thread that moved its state to OWNED
// (a compare-exchange: one winner), which gives it up with a Release store (FREE or HANDED)
// that the next owner's Acquire compare-exchange sees.
unsafe impl<const N: usize> Sync for Pool<N> {}

impl<const N: usize> Pool<N> {
    /// A pool with every slot free.
    pub const fn new() -> Self {
        Pool {
            states: [const { AtomicU8::new(FREE) }; N],
            slots: [const { UnsafeCell::new(Captured::EMPTY) }; N],
        }
    }

    /// A free slot, now the caller's (`None`: all are in use).
    pub fn claim(&self) -> Option<Slot<'_, N>> {
        (0..N).find_map(|index| {
            self.states[index]
                .compare_exchange(FREE, OWNED, Ordering::Acquire, Ordering::Relaxed)
                .ok()
                .map(|_| Slot { pool: self, index })
        })
    }

    /// The slot `index` handed over ([`Slot::hand`]), now the caller's (`None`: no such
    /// slot, or it was not handed over).
    pub fn take(&self, index: usize) -> Option<Slot<'_, N>> {
        self.states
            .get(index)?
            .compare_exchange(HANDED, OWNED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Slot { pool: self, index })
    }

    /// How many slots are free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.states
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) == FREE)
            .count()
    }
}

/// A slot owned by this thread; freed when dropped.
pub struct Slot<'p, const N: usize> {
    pool: &'p Pool<N>,
    index: usize,
}

impl<const N: usize> Slot<'_, N> {
    /// What it holds.
    pub fn captured(&self) -> &Captured {
        // SAFETY: the slot is OWNED by this thread (see `Pool`'s Sync).
        unsafe { &*self.pool.slots[self.index].get() }
    }

    fn captured_mut(&mut self) -> &mut Captured {
        // SAFETY: the slot is OWNED by this thread, and `&mut self` makes this the only
        // reference through it.
        unsafe { &mut *self.pool.slots[self.index].get() }
    }

    /// Fills the slot with one text (a path, a socket's name or an address) and, for a
    /// relative path, the folder it is relative to. Allocates nothing.
    pub fn set_text(&mut self, text: &[u8], base: Option<&[u8]>) {
        let into = self.captured_mut();
        into.flags = None;
        into.count = 1;
        let target = &mut into.paths[0];
        let len = text.len().min(PATH_MAX - 1);
        target.text[..len].copy_from_slice(&text[..len]);
        target.text_len = len;
        target.base_len = base.map(|base| {
            let len = base.len().min(PATH_MAX - 1);
            target.base[..len].copy_from_slice(&base[..len]);
            len
        });
    }

    /// Gives the slot up for whoever takes `index` ([`Pool::take`]).
    pub fn hand(self) -> usize {
        let index = self.index;
        self.pool.states[index].store(HANDED, Ordering::Release);
        std::mem::forget(self);
        index
    }
}

impl<const N: usize> Drop for Slot<'_, N> {
    fn drop(&mut self) {
        self.pool.states[self.index].store(FREE, Ordering::Release);
    }
}

/// Fills `slot` with what `call` (with `args`, made by a thread of this process that still
/// waits for its answer) names: its paths, for a relative one the folder it is relative to
/// (the working directory, or what its folder descriptor names), and an open's flags.
/// `false`: a path could not be read (no NUL within [`PATH_MAX`], or a bad address).
/// Allocates nothing.
pub fn capture<const N: usize>(slot: &mut Slot<'_, N>, call: &Call, args: &[u64; 6]) -> bool {
    let into = slot.captured_mut();
    into.count = 0;
    into.flags = match call.access {
        Access::Open(OpenFlags::Arg(i)) => Some(args[i] as i32),
        Access::Open(OpenFlags::Create) => Some(libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC),
        Access::Open(OpenFlags::How(i)) => {
            // struct open_how begins with its flags (a u64).
            let mut flags = [0u8; 8];
            (read_memory(args[i], &mut flags) == 8).then(|| u64::from_ne_bytes(flags) as i32)
        }
        _ => None,
    };
    for (dir, path) in call.paths.iter().take(2) {
        let target = &mut into.paths[into.count];
        let Some(len) = read_text(args[*path], &mut target.text) else {
            return false;
        };
        target.text_len = len;
        target.base_len = None;
        if target.text.first() != Some(&b'/') || len == 0 {
            let dir = dir.map(|d| args[d] as i32).unwrap_or(libc::AT_FDCWD);
            target.base_len = folder(dir, &mut target.base);
        }
        into.count += 1;
    }
    true
}

/// Reads the NUL-terminated text at `address` into `buffer`; its length (without the NUL).
pub(super) fn read_text(address: u64, buffer: &mut [u8; PATH_MAX]) -> Option<usize> {
    // Page by page up to the NUL: the text may end just before an unmapped page.
    let mut done = 0;
    while done < PATH_MAX {
        let page_left = 4096 - ((address + done as u64) % 4096) as usize;
        let chunk = page_left.min(PATH_MAX - done);
        let got = read_memory(address + done as u64, &mut buffer[done..done + chunk]);
        if let Some(end) = buffer[done..done + got].iter().position(|b| *b == 0) {
            return Some(done + end);
        }
        if got < chunk {
            return None;
        }
        done += got;
    }
    None
}

/// Writes the absolute path of the folder `dir` (a descriptor, or `AT_FDCWD`: the working
/// directory) into `buffer`; its length. Allocates nothing: `getcwd` into the buffer, or
/// `readlink` of `/proc/self/fd/N` (its name written on the stack).
pub(super) fn folder(dir: i32, buffer: &mut [u8; PATH_MAX]) -> Option<usize> {
    if dir == libc::AT_FDCWD {
        // SAFETY: getcwd writes at most `PATH_MAX` bytes (its NUL included) into `buffer`.
        let got = unsafe { libc::getcwd(buffer.as_mut_ptr().cast(), PATH_MAX) };
        if got.is_null() {
            return None;
        }
        return buffer.iter().position(|b| *b == 0);
    }
    if dir < 0 {
        return None;
    }
    let mut link = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    link[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let mut n = dir as u32;
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, digit) in digits[..count].iter().rev().enumerate() {
        link[prefix.len() + i] = *digit;
    }
    // `link` ends with NULs: it was zeroed and the name is at most 24 bytes.
    // SAFETY: `link` is NUL-terminated; readlink writes at most `PATH_MAX` bytes into
    // `buffer`.
    let got = unsafe { libc::readlink(link.as_ptr().cast(), buffer.as_mut_ptr().cast(), PATH_MAX) };
    // A link as long as the buffer may have been cut.
    usize::try_from(got).ok().filter(|len| *len < PATH_MAX)
}

/// Paths the C library opens while it holds the memory allocator's lock (`malloc`'s
/// `shrink_heap` reads `overcommit_memory` once): a refusal of one is not named (nobody's
/// data; the sandbox keeps `/proc` out of reach), and the supervisor does not wait for the
/// naming thread, which might wait for that very lock.
const OPENED_UNDER_ALLOCATOR_LOCK: &[&[u8]] = &[b"/proc/sys/vm/overcommit_memory"];

/// Whether `call` with `args` opens one of [`OPENED_UNDER_ALLOCATOR_LOCK`] (read into a
/// small buffer on the stack: allocates nothing).
pub fn opened_under_allocator_lock(call: &Call, args: &[u64; 6]) -> bool {
    if !matches!(call.access, Access::Open(_)) {
        return false;
    }
    let Some((_, path)) = call.paths.first() else {
        return false;
    };
    let mut text = [0u8; 40];
    let got = read_memory(args[*path], &mut text);
    is_opened_under_allocator_lock(&text[..got])
}

/// Whether the text `read` (a NUL-terminated path or its beginning) is one of
/// [`OPENED_UNDER_ALLOCATOR_LOCK`].
fn is_opened_under_allocator_lock(read: &[u8]) -> bool {
    OPENED_UNDER_ALLOCATOR_LOCK
        .iter()
        .any(|known| read.len() > known.len() && read.starts_with(known) && read[known.len()] == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::supervisor::calls::call;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_slot_is_one_threads_until_handed_taken_and_freed() {
        let pool: Box<Pool<2>> = Box::new(Pool::new());
        let a = pool.claim().unwrap();
        let b = pool.claim().unwrap();
        assert!(pool.claim().is_none(), "two slots, both claimed");
        // A slot not handed over cannot be taken.
        assert!(pool.take(a.index).is_none());
        let index = a.hand();
        assert_eq!(pool.free(), 0);
        // Taken once only.
        let taken = pool.take(index).unwrap();
        assert!(pool.take(index).is_none());
        assert!(pool.take(7).is_none());
        drop(taken);
        assert_eq!(pool.free(), 1);
        drop(b);
        assert_eq!(pool.free(), 2);
        // Claimed again, from another thread, with what it was filled with visible to the
        // taker.
        let mut slot = pool.claim().unwrap();
        let text = b"/etc/shadow\0";
        let open = call(libc::SYS_openat).unwrap();
        let args = [libc::AT_FDCWD as u64, text.as_ptr() as u64, 0, 0, 0, 0];
        assert!(capture(&mut slot, open, &args));
        let index = slot.hand();
        std::thread::scope(|s| {
            s.spawn(|| {
                let slot = pool.take(index).unwrap();
                assert_eq!(slot.captured().paths()[0].text(), b"/etc/shadow");
            });
        });
        assert_eq!(pool.free(), 2);
    }

    #[test]
    fn many_threads_never_share_a_slot() {
        let pool: &'static Pool<3> = Box::leak(Box::new(Pool::new()));
        let threads: Vec<_> = (0..6u8)
            .map(|t| {
                std::thread::spawn(move || {
                    for round in 0..2000u32 {
                        let Some(mut slot) = pool.claim() else {
                            continue;
                        };
                        let mark = [b'/', t, (round % 251) as u8];
                        let into = slot.captured_mut();
                        into.paths[0].text[..3].copy_from_slice(&mark);
                        into.paths[0].text_len = 3;
                        into.count = 1;
                        std::thread::yield_now();
                        assert_eq!(slot.captured().paths()[0].text(), mark);
                        if round % 2 == 0 {
                            let index = slot.hand();
                            let slot = pool.take(index).unwrap();
                            assert_eq!(slot.captured().paths()[0].text(), mark);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(pool.free(), 3);
    }

    #[test]
    fn captures_paths_their_folders_and_flags_without_the_calls_memory() {
        let pool: Box<Pool<1>> = Box::new(Pool::new());
        let mut slot = pool.claim().unwrap();
        let dir = std::fs::File::open("/usr").unwrap();
        let from = b"lib/../bin\0".to_vec();
        let to = b"/tmp/x\0".to_vec();
        let rename = call(libc::SYS_renameat2).unwrap();
        let args = [
            dir.as_raw_fd() as u64,
            from.as_ptr() as u64,
            libc::AT_FDCWD as u64,
            to.as_ptr() as u64,
            0,
            0,
        ];
        assert!(capture(&mut slot, rename, &args));
        // The descriptor and the memory may go: what was captured stays.
        drop((dir, from, to));
        let captured = slot.captured();
        assert_eq!(captured.paths().len(), 2);
        assert_eq!(captured.paths()[0].text(), b"lib/../bin");
        assert_eq!(captured.paths()[0].base(), Some(&b"/usr"[..]));
        assert_eq!(captured.paths()[1].text(), b"/tmp/x");
        assert_eq!(captured.paths()[1].base(), None);
        assert_eq!(captured.flags(), None);

        // Relative to the working directory; an open's flags.
        let name = b"x\0";
        let open = call(libc::SYS_openat).unwrap();
        let flags = (libc::O_WRONLY | libc::O_CREAT) as u64;
        let args = [libc::AT_FDCWD as u64, name.as_ptr() as u64, flags, 0, 0, 0];
        assert!(capture(&mut slot, open, &args));
        let cwd = std::env::current_dir().unwrap();
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(
            slot.captured().paths()[0].base(),
            Some(cwd.as_os_str().as_bytes())
        );
        assert_eq!(slot.captured().flags(), Some(flags as i32));
        // openat2: the flags are in memory.
        let how: [u64; 3] = [libc::O_RDWR as u64, 0, 0];
        let open2 = call(libc::SYS_openat2).unwrap();
        let args = [
            libc::AT_FDCWD as u64,
            name.as_ptr() as u64,
            how.as_ptr() as u64,
            24,
            0,
            0,
        ];
        assert!(capture(&mut slot, open2, &args));
        assert_eq!(slot.captured().flags(), Some(libc::O_RDWR));

        // A bad address, or no NUL within PATH_MAX: nothing captured.
        let args = [libc::AT_FDCWD as u64, 8, 0, 0, 0, 0];
        assert!(!capture(&mut slot, open, &args));
        let long = vec![b'a'; PATH_MAX + 10];
        let args = [libc::AT_FDCWD as u64, long.as_ptr() as u64, 0, 0, 0, 0];
        assert!(!capture(&mut slot, open, &args));
        // The longest path that fits, ending right before an unmapped page.
        let longest = vec![b'a'; PATH_MAX - 1];
        let mut text = longest.clone();
        text.push(0);
        let args = [libc::AT_FDCWD as u64, text.as_ptr() as u64, 0, 0, 0, 0];
        assert!(capture(&mut slot, open, &args));
        assert_eq!(slot.captured().paths()[0].text(), &longest[..]);
    }

    #[test]
    fn the_allocators_own_opens_are_known_from_their_bytes() {
        let open = call(libc::SYS_openat).unwrap();
        let known = b"/proc/sys/vm/overcommit_memory\0";
        let args = [libc::AT_FDCWD as u64, known.as_ptr() as u64, 0, 0, 0, 0];
        assert!(opened_under_allocator_lock(open, &args));
        let longer = b"/proc/sys/vm/overcommit_memory2\0";
        let args = [libc::AT_FDCWD as u64, longer.as_ptr() as u64, 0, 0, 0, 0];
        assert!(!opened_under_allocator_lock(open, &args));
        let other = b"/etc/passwd\0";
        let args = [libc::AT_FDCWD as u64, other.as_ptr() as u64, 0, 0, 0, 0];
        assert!(!opened_under_allocator_lock(open, &args));
        assert!(!opened_under_allocator_lock(open, &[0; 6]));
        let mkdir = call(libc::SYS_mkdirat).unwrap();
        let args = [libc::AT_FDCWD as u64, known.as_ptr() as u64, 0, 0, 0, 0];
        assert!(!opened_under_allocator_lock(mkdir, &args));
    }
}
