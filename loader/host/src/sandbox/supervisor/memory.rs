//! Naming a refused allocation (a grant with `memoryMiB`, which `RLIMIT_AS` enforces): the
//! calls that grow the address space (`mmap`, `mremap`, `brk`) are notified too; the
//! supervisor makes each again (the same address space: the same result, the mapping is the
//! plugin's) and hands back its result. When one failed for lack of room (the address
//! space plus what it asked would pass the limit), the refusal is named, once per burst:
//! the C library retries a refused allocation another way (`malloc` tries `mmap`, then
//! `brk`, then `mmap` again), one refusal. A reservation of address space nobody may touch
//! yet (`mmap` with `PROT_NONE`) is not named: the C library reserves 128 MiB for each new
//! arena that way and falls back to less when refused.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A call that grows the address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryCall {
    /// `mmap(addr, length, ...)`.
    Map,
    /// `mremap(old, old_size, new_size, ...)`.
    Remap,
    /// `brk(end)`: answers the break it leaves (the old one when refused).
    Break,
}

/// The memory calls and their numbers.
pub const MEMORY_CALLS: &[(i64, MemoryCall)] = &[
    (libc::SYS_mmap, MemoryCall::Map),
    (libc::SYS_mremap, MemoryCall::Remap),
    (libc::SYS_brk, MemoryCall::Break),
];

/// The memory call `number`, if it is one.
pub fn memory_call(number: i64) -> Option<MemoryCall> {
    MEMORY_CALLS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|(_, call)| *call)
}

/// How the supervisor knows how much room is left: this process's `/proc/self/statm`
/// (opened before Landlock, which keeps `/proc` out of reach) and `RLIMIT_AS`.
pub struct Room {
    statm: OwnedFd,
}

impl Room {
    /// Opens what the check reads; `None` where `/proc` is not there (refusals of `mmap`
    /// and `mremap` are then named on `ENOMEM` alone, and a refused `brk`, which may fail
    /// for other reasons, is not).
    pub fn open() -> Option<Room> {
        let statm = std::fs::File::open("/proc/self/statm").ok()?;
        Some(Room {
            statm: statm.into(),
        })
    }
}

/// How many bytes `call` with `args` asked for and was refused for lack of room, given what
/// the kernel answered the supervisor (`Ok`: the result; `Err`: the error number). Nothing
/// is allocated.
pub fn refused_size(
    room: Option<&Room>,
    call: MemoryCall,
    args: &[u64; 6],
    answer: Result<i64, i32>,
) -> Option<u64> {
    let asked = match (call, answer) {
        (MemoryCall::Map, Err(libc::ENOMEM)) if args[2] != libc::PROT_NONE as u64 => args[1],
        (MemoryCall::Remap, Err(libc::ENOMEM)) => args[2].saturating_sub(args[1]),
        // A refused brk leaves the break where it was; asking for less never fails.
        (MemoryCall::Break, Ok(end)) if room.is_some() && args[0] > end as u64 => {
            args[0] - end as u64
        }
        _ => return None,
    };
    if asked == 0 {
        return None;
    }
    // ENOMEM also means "no free range" or "too many mappings": only a call that would
    // pass RLIMIT_AS is the grant's doing.
    match room.and_then(address_space_bytes) {
        Some(now) => (now.saturating_add(asked) > address_space_limit()).then_some(asked),
        None => Some(asked),
    }
}

/// The address space's size now (`statm`'s first field, in pages), without allocating.
fn address_space_bytes(room: &Room) -> Option<u64> {
    let mut text = [0u8; 128];
    // SAFETY: pread(2) into a local buffer of the length passed, from a descriptor we own.
    let got = unsafe {
        libc::pread(
            room.statm.as_raw_fd(),
            text.as_mut_ptr().cast(),
            text.len(),
            0,
        )
    };
    let got = usize::try_from(got).ok()?;
    let digits = text[..got].iter().take_while(|b| b.is_ascii_digit());
    let mut pages: u64 = 0;
    for digit in digits {
        pages = pages
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.checked_mul(u64::try_from(page).ok()?)
}

/// `RLIMIT_AS` now (the plugin may have lowered it).
fn address_space_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit fills the local struct passed.
    unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) };
    limit.rlim_cur
}

/// How close two refusals must follow each other to be one burst.
const BURST_GAP: Duration = Duration::from_millis(250);

/// Refusals one after another of about the same size (within an eighth) are one burst,
/// named once. A refused `mremap` is an allocation of its own (`malloc` never retries with
/// it): it starts a burst unless it follows another `mremap`; what follows it (`realloc`
/// falls back on a new mapping) belongs to its burst.
#[derive(Default)]
pub struct Burst {
    last: Option<(u64, Instant, Option<MemoryCall>)>,
}

impl Burst {
    /// Whether a refusal of `size` bytes starts a new burst (to be named).
    pub fn starts_with(&mut self, size: u64) -> bool {
        self.starts_with_call(size, None)
    }

    /// Whether a refusal of `size` bytes by `call` starts a new burst (to be named).
    pub fn starts_with_call(&mut self, size: u64, call: Option<MemoryCall>) -> bool {
        let now = Instant::now();
        let same = self.last.is_some_and(|(last, at, last_call)| {
            now.duration_since(at) < BURST_GAP
                && size.abs_diff(last) <= size.max(last) / 8
                && (call != Some(MemoryCall::Remap) || last_call == Some(MemoryCall::Remap))
        });
        self.last = Some((size, now, call));
        !same
    }
}

/// A size in words: MiB (rounded) from 1 MiB up, KiB below.
pub struct Size(pub u64);

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const MIB: u64 = 1 << 20;
        if self.0 >= MIB {
            write!(f, "{} MiB", (self.0 + MIB / 2) / MIB)
        } else {
            write!(f, "{} KiB", self.0.div_ceil(1024))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_the_grants_only_past_the_limit_and_a_burst_is_one() {
        let room = Room::open().unwrap();
        let now = address_space_bytes(&room).unwrap();
        assert!(now > 0);
        let args = |a: u64, b: u64, c: u64| [a, b, c, 0, 0, 0];
        // Unlimited here: an ENOMEM is not the limit's doing.
        if address_space_limit() == libc::RLIM_INFINITY {
            let huge = args(0, 1 << 40, 3);
            assert_eq!(
                refused_size(Some(&room), MemoryCall::Map, &huge, Err(libc::ENOMEM)),
                None
            );
        }
        // Without the room check, ENOMEM of mmap is taken at its word; brk is not.
        assert_eq!(
            refused_size(None, MemoryCall::Map, &args(0, 4096, 3), Err(libc::ENOMEM)),
            Some(4096)
        );
        assert_eq!(
            refused_size(None, MemoryCall::Break, &args(8192, 0, 0), Ok(4096)),
            None
        );
        // A reservation (PROT_NONE) is not an allocation.
        let reservation = [0, 128 << 20, libc::PROT_NONE as u64, 0, 0, 0];
        assert_eq!(
            refused_size(None, MemoryCall::Map, &reservation, Err(libc::ENOMEM)),
            None
        );
        // Other failures and successes are not refusals.
        assert_eq!(
            refused_size(
                Some(&room),
                MemoryCall::Map,
                &args(0, 4096, 3),
                Err(libc::EINVAL)
            ),
            None
        );
        assert_eq!(
            refused_size(Some(&room), MemoryCall::Break, &args(4096, 0, 0), Ok(8192)),
            None
        );
        let mut burst = Burst::default();
        assert!(burst.starts_with(256 << 20));
        assert!(!burst.starts_with((256 << 20) + (128 << 10)));
        assert!(burst.starts_with(8 << 20));
        // A refused mremap of the size of a refused malloc is an allocation of its own; a
        // mapping right after it is realloc's fallback.
        assert!(burst.starts_with_call(8 << 20, Some(MemoryCall::Remap)));
        assert!(!burst.starts_with_call(8 << 20, Some(MemoryCall::Map)));
        assert_eq!(Size((256 << 20) + 4096).to_string(), "256 MiB");
        assert_eq!(Size(1000).to_string(), "1 KiB");
    }
}
