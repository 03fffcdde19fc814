//! The shared-memory ring pair of the `ring` transport (Linux): one `memfd` the host creates
//! and its `serve` child maps through an inherited descriptor, holding two byte rings, one
//! each way. A message is a frame: its length (`u32`, little-endian) and its bytes. A frame
//! larger than the ring streams through it in pieces, the consumer reading while the producer
//! writes, so the ring's size bounds memory, not messages (up to [`MAX_FRAME`]).
//!
//! Each ring has one producer and one consumer at a time (the callers make sure of that). The
//! producer copies bytes in and publishes its position (`head`); the consumer copies them out
//! and publishes its own (`tail`). A side that waits first spins for a few microseconds
//! (a wake-up of a sleeping thread in another process costs tens of microseconds on a
//! virtual machine's idle core, a spin that sees the answer well under one), then sleeps on
//! the position word with `futex`; the other side calls `FUTEX_WAKE` only when the sleeper
//! said it sleeps, so a spinning peer costs no system call at all.
//!
//! The child is not trusted: whatever it writes into the shared pages is checked before the
//! host uses it (a position past the ring, a frame longer than [`MAX_FRAME`], or the `closed`
//! word set by anyone but the host is [`RingError::Broken`], and the host, sleeping, wakes
//! every `HOST_RECHECK` to look), and the host keeps its own copy of the positions it owns
//! and of whether it closed the ring. Bytes are copied out of the mapping before anything
//! reads them; what they say is checked by the host's reader (`crate::isolate::child`).

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering, fence};
use std::time::{Duration, Instant};

use memmap2::MmapRaw;
use rustix::thread::futex;

/// The bytes of each ring (a power of two).
pub const CAPACITY: u32 = 256 * 1024;

/// The longest frame: as long as the serve protocol's longest line.
pub const MAX_FRAME: usize = crate::serve::framing::MAX_LINE_BYTES;

/// Checks of the word between two yields of the core while spinning.
const SPIN_BURST: u32 = 64;

/// A burst of checks and a yield of the core that took this long were interrupted by another
/// thread (preempted, or the yield gave the core away and it ran): the machine has no core to
/// spare, and a side that keeps spinning there gets its turn back only after whole time
/// slices of others (its spin counts against it; a sleeper woken by `futex` is scheduled
/// sooner), so it stops spinning and sleeps. Well below a scheduler's time slice (0.75–3 ms),
/// well above the hiccups of a virtual CPU (tens of microseconds), which a lower bound took
/// for contention.
const CONTENDED: Duration = Duration::from_micros(200);

/// How long the child's reader spins after the host said an event is coming
/// ([`Region::get_ready`]) before it sleeps again: long enough to cover the rest of a model's
/// stream after a tool call's arguments are complete, short enough that a nudge with no event
/// after it costs little.
pub const GET_READY_SPIN: Duration = Duration::from_millis(5);

/// How often a reader spinning after a nudge rehearses its work ([`Consumer::warming`]).
const WARM_EVERY: Duration = Duration::from_micros(200);

/// The longest the host sleeps on a word without looking at the ring's `closed` word.
const HOST_RECHECK: Duration = Duration::from_millis(100);

/// The size of the header page in front of the two rings.
const HEADER_BYTES: usize = 4096;

/// `"pihr"`: what a mapping starts with, so a wrong descriptor is refused by name.
const MAGIC: u32 = 0x7268_6970;

/// The layout version of the header.
const VERSION: u32 = 2;

/// Two words on a cache line of their own (the producer's and the consumer's positions are
/// written by different processes; sharing a line would make each write a cache miss).
#[repr(C, align(64))]
struct Slot {
    /// A position, or a flag.
    word: AtomicU32,
    /// Whether a thread sleeps on `word` (set before it sleeps, cleared after).
    sleeping: AtomicU32,
}

/// One direction's control words.
#[repr(C)]
struct Half {
    /// Bytes ever published by the producer (wrapping); the consumer sleeps on it.
    head: Slot,
    /// Bytes ever consumed (wrapping); the producer sleeps on it when the ring is full.
    tail: Slot,
}

/// The header page.
#[repr(C)]
struct Header {
    magic: AtomicU32,
    version: AtomicU32,
    capacity: AtomicU32,
    /// Set when either side saw the other go (a closed pipe, the child's end): every wait
    /// returns [`RingError::Closed`].
    closed: Slot,
    to_child: Half,
    to_host: Half,
    /// `word`: the host reads the `to_host` ring now (a call is under way), so the child need
    /// not ring its doorbell; `sleeping`: a doorbell was rung and not yet answered.
    host_reading: Slot,
    /// The CPU each side last waited, or woke from a wait, on (`word`: the host's, `sleeping`:
    /// the child's), plus one (0: not known). A side whose peer waits or woke on its own CPU
    /// does not spin: the peer cannot run there while it spins (and a peer woken from its
    /// sleep tends to be queued on the CPU it slept on, or on its waker's).
    cpus: Slot,
    /// `word`: how many times the host said an event is coming ([`Region::get_ready`]); the
    /// child's reader, sleeping or spinning for a request, spins [`GET_READY_SPIN`] anew when
    /// it changes. Only the host writes it; it never reads it back.
    get_ready: Slot,
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);
const _: () = assert!(CAPACITY.is_power_of_two());

/// Which way a ring carries bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host to child: requests, and answers to the child's requests.
    ToChild,
    /// Child to host: results, the child's requests, notifications.
    ToHost,
}

impl Direction {
    /// Whether the host reads this ring (else it writes it).
    fn host_reads(self) -> bool {
        self == Direction::ToHost
    }
}

/// Why a ring operation did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// The other side has gone (or the ring was closed).
    Closed,
    /// The shared pages hold something no honest peer writes (the message says what).
    Broken(String),
}

/// The mapped `memfd`: the header and the two rings.
pub struct Region {
    map: MmapRaw,
    capacity: u32,
    /// This end made the region (the host) rather than mapped it (the child).
    host: bool,
    /// This process closed the ring ([`Region::close`]): the shared `closed` word is the
    /// peer's to write too, so the host trusts only its own.
    closed_here: AtomicBool,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Region {
    /// Creates the memory (a sealed-size `memfd`, close-on-exec) and maps it; returns the
    /// region and the descriptor the child inherits.
    pub fn create() -> Result<(Arc<Region>, OwnedFd), String> {
        let fd = rustix::fs::memfd_create(
            "pi-hooks-isolate-ring",
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )
        .map_err(|e| format!("cannot create the shared memory of its ring (memfd): {e}"))?;
        let file = File::from(fd);
        let size = HEADER_BYTES as u64 + 2 * u64::from(CAPACITY);
        file.set_len(size)
            .map_err(|e| format!("cannot size the shared memory of its ring: {e}"))?;
        // Neither side can shrink it under the other's mapping (which would be a SIGBUS).
        let _ = rustix::fs::fcntl_add_seals(
            &file,
            rustix::fs::SealFlags::SHRINK
                | rustix::fs::SealFlags::GROW
                | rustix::fs::SealFlags::SEAL,
        );
        let map = MmapRaw::map_raw(&file)
            .map_err(|e| format!("cannot map the shared memory of its ring: {e}"))?;
        let region = Region {
            map,
            capacity: CAPACITY,
            host: true,
            closed_here: AtomicBool::new(false),
        };
        let header = region.header();
        header.capacity.store(CAPACITY, Ordering::Relaxed);
        header.version.store(VERSION, Ordering::Relaxed);
        header.magic.store(MAGIC, Ordering::Release);
        Ok((Arc::new(region), OwnedFd::from(file)))
    }

    /// Maps the region the host created, from the descriptor the child inherited.
    pub fn open(fd: impl AsFd) -> Result<Arc<Region>, String> {
        let size = rustix::fs::fstat(&fd)
            .map_err(|e| format!("not a shared memory descriptor: {e}"))?
            .st_size;
        let expected = HEADER_BYTES as i64 + 2 * i64::from(CAPACITY);
        if size != expected {
            return Err(format!(
                "the shared memory is {size} bytes, expected {expected}; the host and this process are different pi-hooks builds"
            ));
        }
        let map = MmapRaw::map_raw(fd.as_fd().as_raw_fd())
            .map_err(|e| format!("cannot map the shared memory: {e}"))?;
        let region = Region {
            map,
            capacity: CAPACITY,
            host: false,
            closed_here: AtomicBool::new(false),
        };
        let header = region.header();
        if header.magic.load(Ordering::Acquire) != MAGIC
            || header.version.load(Ordering::Relaxed) != VERSION
            || header.capacity.load(Ordering::Relaxed) != CAPACITY
        {
            return Err(
                "the shared memory is not a pi-hooks ring of this build (magic, version or size differ)"
                    .into(),
            );
        }
        Ok(Arc::new(region))
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is at least HEADER_BYTES long (created or checked so) and
        // page-aligned, so it holds a `Header` at its start; `Header` is made of `AtomicU32`s
        // only, for which every bit pattern is valid and which may be shared with another
        // process; the reference lives no longer than `self`, which owns the mapping.
        unsafe { &*self.map.as_ptr().cast::<Header>() }
    }

    fn half(&self, direction: Direction) -> &Half {
        match direction {
            Direction::ToChild => &self.header().to_child,
            Direction::ToHost => &self.header().to_host,
        }
    }

    /// The first byte of `direction`'s ring.
    fn data(&self, direction: Direction) -> *mut u8 {
        let offset = match direction {
            Direction::ToChild => HEADER_BYTES,
            Direction::ToHost => HEADER_BYTES + self.capacity as usize,
        };
        // SAFETY: both rings lie inside the mapping (its size is HEADER_BYTES + 2 capacity).
        unsafe { self.map.as_mut_ptr().add(offset) }
    }

    /// Closes both rings: every wait, now and later, returns [`RingError::Closed`] once the
    /// bytes already published are read. Called by whichever side sees the other go.
    pub fn close(&self) {
        let header = self.header();
        self.closed_here.store(true, Ordering::SeqCst);
        header.closed.word.store(1, Ordering::SeqCst);
        for slot in [
            &header.to_child.head,
            &header.to_child.tail,
            &header.to_host.head,
            &header.to_host.tail,
        ] {
            let _ = futex::wake(&slot.word, futex::Flags::empty(), i32::MAX as u32);
        }
    }

    /// Whether the ring was closed, and how: `Some(Closed)` once this process closed it, or
    /// (for the child) the host did. The host never takes the child's word for it: the child
    /// has no reason to write the shared `closed` word (its end is seen as its pipe's end),
    /// so on the host's side that word set by anyone but the host is
    /// [`RingError::Broken`], a child breaking the protocol.
    pub fn closed(&self) -> Option<RingError> {
        if self.closed_here.load(Ordering::Acquire) {
            return Some(RingError::Closed);
        }
        if self.header().closed.word.load(Ordering::Acquire) == 0 {
            return None;
        }
        Some(if self.host {
            RingError::Broken(
                "the child set the ring's closed word, which only the host sets".into(),
            )
        } else {
            RingError::Closed
        })
    }

    /// The host says whether it reads the `to_host` ring now; see [`Region::doorbell_due`].
    pub fn set_host_reading(&self, reading: bool) {
        let slot = &self.header().host_reading;
        if reading {
            // The doorbell is answered by this read.
            slot.sleeping.store(0, Ordering::SeqCst);
        }
        slot.word.store(u32::from(reading), Ordering::SeqCst);
    }

    /// For the child, after it published to the host: whether to ring the doorbell (the host
    /// is not reading, and no ring is unanswered yet). A `true` is given once until the host
    /// reads again.
    pub fn doorbell_due(&self) -> bool {
        fence(Ordering::SeqCst);
        let slot = &self.header().host_reading;
        slot.word.load(Ordering::SeqCst) == 0 && slot.sleeping.swap(1, Ordering::SeqCst) == 0
    }

    /// The host says a request is likely soon (the model is streaming a tool call): the
    /// child's reader, if it sleeps, is woken and spins [`GET_READY_SPIN`] for it, so the
    /// request then finds it awake (a sleeping process's wake-up costs tens of microseconds
    /// on a virtual machine's idle core). Best effort: a nudge that comes just as the reader
    /// goes to sleep may be missed, and then the request wakes it as always. Costs the host
    /// an atomic add, plus one `futex` wake when the reader sleeps.
    pub fn get_ready(&self) {
        let header = self.header();
        header.get_ready.word.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let head = &header.to_child.head;
        if head.sleeping.load(Ordering::SeqCst) != 0 {
            // The head does not change: the reader wakes, sees the nudge and spins.
            let _ = futex::wake(&head.word, futex::Flags::empty(), 1);
        }
    }

    /// Whether published bytes wait in `direction`'s ring (for the side that consumes it).
    pub fn has_data(&self, direction: Direction, consumed: u32) -> bool {
        fence(Ordering::SeqCst);
        self.half(direction).head.word.load(Ordering::SeqCst) != consumed
    }
}

/// How a wait on a word ended.
enum Waited {
    Changed,
    /// The ring was closed (or, on the host's side, the child broke the protocol).
    Stopped(RingError),
    TimedOut,
}

/// What a reader does while it spins for a request it was told is coming
/// ([`Consumer::warming`]).
type Rehearsal = dyn FnMut() + Send;

/// Waits until `slot.word` is no longer `seen` (or the region closes, or `deadline` passes):
/// spins for `spin` (not while the other side waits, or woke, on this CPU), then sleeps on the
/// word with `futex`, saying so in `slot.sleeping`. `host`: the host waits (else the child).
/// `nudge`: the host's [`Region::get_ready`] count, the value the reader last saw and its
/// rehearsal ([`Consumer::warming`], run every [`WARM_EVERY`] while it spins after one), for the
/// child's reader of requests: each change seen (before, spinning, or woken) makes it spin
/// [`GET_READY_SPIN`] anew.
fn wait_change(
    region: &Region,
    slot: &Slot,
    seen: u32,
    deadline: Option<Instant>,
    spin: Duration,
    host: bool,
    nudge: Option<(&AtomicU32, &mut u32, Option<&mut Rehearsal>)>,
) -> Waited {
    let check = || {
        if slot.word.load(Ordering::Acquire) != seen {
            Some(Waited::Changed)
        } else {
            region.closed().map(Waited::Stopped)
        }
    };
    if let Some(done) = check() {
        return done;
    }
    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
        return Waited::TimedOut;
    }
    let cpus = &region.header().cpus;
    let (mine, theirs) = if host {
        (&cpus.word, &cpus.sleeping)
    } else {
        (&cpus.sleeping, &cpus.word)
    };
    let cpu = current_cpu();
    mine.store(cpu, Ordering::Relaxed);
    let mut spin = if theirs.load(Ordering::Relaxed) == cpu {
        Duration::ZERO
    } else {
        spin
    };
    let (nudge, mut nudges, mut warm) = match nudge {
        Some((word, last, warm)) => (Some(word), Some(last), warm),
        None => (None, None, None),
    };
    // A nudge not seen yet: the reader spins GET_READY_SPIN from then on.
    let nudged = |nudges: &mut Option<&mut u32>| match (nudge, nudges.as_deref_mut()) {
        (Some(word), Some(last)) => {
            let now = word.load(Ordering::Acquire);
            now != std::mem::replace(last, now)
        }
        _ => false,
    };
    // When the reader last rehearsed (`warm`), while it spins after a nudge.
    let mut warmed: Option<Instant> = None;
    if nudged(&mut nudges) {
        spin = spin.max(GET_READY_SPIN);
        warmed = Some(Instant::now() - WARM_EVERY);
    }
    loop {
        if !spin.is_zero() {
            // Spin, giving the core away between short bursts: on a machine with a core to
            // spare `sched_yield` returns at once, on a busy one the peer this side waits for
            // may be the thread that gets it.
            let mut started = Instant::now();
            let mut last = started;
            loop {
                for _ in 0..SPIN_BURST {
                    std::hint::spin_loop();
                    if let Some(done) = check() {
                        return done;
                    }
                }
                // Where this side runs now, and whether the peer it waits for runs here
                // too (it woke up on this CPU): then spinning only keeps it off the core.
                let cpu = current_cpu();
                mine.store(cpu, Ordering::Relaxed);
                if nudged(&mut nudges) {
                    started = Instant::now();
                    spin = spin.max(GET_READY_SPIN);
                    warmed = Some(started - WARM_EVERY);
                } else if started.elapsed() >= spin
                    || (nudges.is_none() && theirs.load(Ordering::Relaxed) == cpu)
                {
                    break;
                }
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    return Waited::TimedOut;
                }
                if let (Some(at), Some(warm)) = (warmed, warm.as_deref_mut())
                    && at.elapsed() >= WARM_EVERY
                {
                    warm();
                    warmed = Some(Instant::now());
                    if let Some(done) = check() {
                        return done;
                    }
                }
                std::thread::yield_now();
                let now = Instant::now();
                if now - std::mem::replace(&mut last, now) >= CONTENDED {
                    break;
                }
            }
        }
        let last = nudge.zip(nudges.as_deref().copied());
        match sleep_once(slot, seen, deadline, host, mine, last, &check) {
            Some(done) => return done,
            None if nudged(&mut nudges) => {
                spin = GET_READY_SPIN;
                warmed = Some(Instant::now() - WARM_EVERY);
            }
            None => spin = Duration::ZERO,
        }
    }
}

/// One sleep on `slot.word` (still `seen`), at most until `deadline` (the host: at most
/// `HOST_RECHECK`): what ended the wait, or `None` if nothing did (the recheck's timeout, a
/// spurious wake-up, or a nudge: `nudge` is the child's count of them and the value last seen,
/// looked at again once `slot.sleeping` is set, so a nudge after that look wakes the sleep).
fn sleep_once(
    slot: &Slot,
    seen: u32,
    deadline: Option<Instant>,
    host: bool,
    mine: &AtomicU32,
    nudge: Option<(&AtomicU32, u32)>,
    check: &impl Fn() -> Option<Waited>,
) -> Option<Waited> {
    let timeout = match deadline {
        Some(deadline) => {
            let now = Instant::now();
            if now >= deadline {
                return Some(Waited::TimedOut);
            }
            Some(deadline - now)
        }
        None => None,
    };
    // The host wakes now and then to look at the control words the child could have
    // garbled without waking it (its `closed` word, see `Region::closed`).
    let timeout = if host {
        Some(timeout.map_or(HOST_RECHECK, |timeout| timeout.min(HOST_RECHECK)))
    } else {
        timeout
    };
    slot.sleeping.store(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if let Some(done) = check() {
        slot.sleeping.store(0, Ordering::SeqCst);
        return Some(done);
    }
    if nudge.is_some_and(|(word, last)| word.load(Ordering::SeqCst) != last) {
        slot.sleeping.store(0, Ordering::SeqCst);
        return None;
    }
    let timespec = timeout.map(|t| futex::Timespec {
        tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(t.subsec_nanos()),
    });
    // EAGAIN (the word changed), EINTR, ETIMEDOUT: all are answered by the checks.
    let _ = futex::wait(&slot.word, futex::Flags::empty(), seen, timespec.as_ref());
    // Where it woke: a peer spinning there gives the core away (see `Header::cpus`).
    mine.store(current_cpu(), Ordering::Relaxed);
    slot.sleeping.store(0, Ordering::SeqCst);
    check()
}

/// The CPU this thread runs on, plus one (0: not known). glibc's `sched_getcpu` reads it from
/// the thread's rseq area (no system call, unlike rustix's, which makes `getcpu`).
fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu takes nothing and only reads this thread's own state.
    (unsafe { libc::sched_getcpu() } + 1).max(0) as u32
}

/// Stores `value` in `slot.word` and wakes its sleeper, if one said it sleeps.
fn publish(slot: &Slot, value: u32) {
    slot.word.store(value, Ordering::Release);
    fence(Ordering::SeqCst);
    if slot.sleeping.load(Ordering::SeqCst) != 0 {
        let _ = futex::wake(&slot.word, futex::Flags::empty(), i32::MAX as u32);
    }
}

/// The writing end of one ring.
pub struct Producer {
    region: Arc<Region>,
    direction: Direction,
    /// What this side published (only it writes the head).
    head: u32,
    /// How long a wait for room spins before it sleeps.
    spin: Duration,
    /// Called after each publication (the child's doorbell).
    after_publish: Option<Box<dyn FnMut() + Send>>,
}

impl Producer {
    /// The producer of `direction` on `region`, spinning `spin` before it sleeps for room.
    pub fn new(region: Arc<Region>, direction: Direction, spin: Duration) -> Self {
        let head = region.half(direction).head.word.load(Ordering::Acquire);
        Producer {
            region,
            direction,
            head,
            spin,
            after_publish: None,
        }
    }

    /// Calls `f` after every publication (before any wait for room).
    pub fn after_publish(mut self, f: impl FnMut() + Send + 'static) -> Self {
        self.after_publish = Some(Box::new(f));
        self
    }

    /// Sends one frame, waiting (until `deadline`) for room as long as needed; a frame larger
    /// than the ring goes in pieces. `Ok(false)`: the deadline passed first (the frame is
    /// then cut, and the ring is of no further use: the caller ends the child).
    pub fn send(&mut self, frame: &[u8], deadline: Option<Instant>) -> Result<bool, RingError> {
        if frame.len() > MAX_FRAME {
            return Err(RingError::Broken(format!(
                "a message of {} bytes is longer than the limit of {MAX_FRAME}",
                frame.len()
            )));
        }
        let length = (frame.len() as u32).to_le_bytes();
        let published = self.head;
        if !self.write(&length, deadline)? || !self.write(frame, deadline)? {
            return Ok(false);
        }
        if self.head != published {
            self.publish();
        }
        Ok(true)
    }

    fn publish(&mut self) {
        publish(&self.region.half(self.direction).head, self.head);
        if let Some(after) = self.after_publish.as_mut() {
            after();
        }
    }

    fn write(&mut self, mut bytes: &[u8], deadline: Option<Instant>) -> Result<bool, RingError> {
        let capacity = self.region.capacity;
        let region = Arc::clone(&self.region);
        let tail_slot = &region.half(self.direction).tail;
        while !bytes.is_empty() {
            if let Some(stopped) = self.region.closed() {
                return Err(stopped);
            }
            let tail = tail_slot.word.load(Ordering::Acquire);
            let used = self.head.wrapping_sub(tail);
            if used > capacity {
                return Err(RingError::Broken(format!(
                    "the reader's position is {used} bytes behind in a ring of {capacity}"
                )));
            }
            let room = (capacity - used) as usize;
            if room == 0 {
                // Full: let the reader see what is there, then wait for it to take some.
                self.publish();
                let host = !self.direction.host_reads();
                match wait_change(&region, tail_slot, tail, deadline, self.spin, host, None) {
                    Waited::Changed => continue,
                    Waited::Stopped(stopped) => return Err(stopped),
                    Waited::TimedOut => return Ok(false),
                }
            }
            let n = room.min(bytes.len());
            self.copy_in(&bytes[..n]);
            self.head = self.head.wrapping_add(n as u32);
            bytes = &bytes[n..];
        }
        Ok(true)
    }

    fn copy_in(&self, bytes: &[u8]) {
        let capacity = self.region.capacity as usize;
        let at = (self.head as usize) & (capacity - 1);
        let first = bytes.len().min(capacity - at);
        let base = self.region.data(self.direction);
        // SAFETY: `at + first <= capacity` and `bytes.len() - first <= at` (the caller wrote at
        // most the free room, which is below the capacity), so both copies stay inside this
        // direction's ring; the bytes between head and tail belong to the producer until it
        // publishes them, and plain bytes have no invalid values.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(at), first);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), base, bytes.len() - first);
        }
    }
}

/// A frame read in part (a frame larger than what the ring held at once).
struct Partial {
    length: usize,
    bytes: Vec<u8>,
}

/// The reading end of one ring.
pub struct Consumer {
    region: Arc<Region>,
    direction: Direction,
    /// What this side consumed (only it writes the tail).
    tail: u32,
    partial: Option<Partial>,
    /// The host's [`Region::get_ready`] count as this reader last saw it (the child's).
    nudges: u32,
    /// Work done now and then while the reader spins after a nudge ([`Consumer::warming`]).
    warm: Option<Box<Rehearsal>>,
}

impl Consumer {
    /// The consumer of `direction` on `region`.
    pub fn new(region: Arc<Region>, direction: Direction) -> Self {
        let tail = region.half(direction).tail.word.load(Ordering::Acquire);
        let nudges = region.header().get_ready.word.load(Ordering::Acquire);
        Consumer {
            region,
            direction,
            tail,
            partial: None,
            nudges,
            warm: None,
        }
    }

    /// Runs `warm` when the host's nudge ([`Region::get_ready`]) finds this reader, and every
    /// 200 µs (`WARM_EVERY`) while it spins for the request then: the reader rehearses what the
    /// request will make it do (decoding a message like the last one), so that its code and
    /// data are in the core's caches when the request comes. A process that sat idle for
    /// milliseconds runs its first call several times slower than its next ones (an idle
    /// virtual CPU gives its caches to others); spinning alone keeps only the spin loop warm.
    pub fn warming(mut self, warm: impl FnMut() + Send + 'static) -> Self {
        self.warm = Some(Box::new(warm));
        self
    }

    /// Whether bytes published since the last read wait (a frame read in part with nothing
    /// new after it does not count: the producer's next publication says so).
    pub fn has_data(&self) -> bool {
        self.region.has_data(self.direction, self.tail)
    }

    /// Reads the next frame, waiting until `deadline` (`None`: as long as it takes), spinning
    /// `spin` before each sleep. `Ok(None)`: the deadline passed (a frame read in part is kept
    /// for the next call).
    pub fn receive(
        &mut self,
        deadline: Option<Instant>,
        spin: Duration,
    ) -> Result<Option<Vec<u8>>, RingError> {
        let capacity = self.region.capacity;
        let region = Arc::clone(&self.region);
        let half = region.half(self.direction);
        loop {
            let head = half.head.word.load(Ordering::Acquire);
            let mut available = head.wrapping_sub(self.tail);
            if available > capacity {
                return Err(RingError::Broken(format!(
                    "the writer's position is {available} bytes ahead in a ring of {capacity}"
                )));
            }
            if self.partial.is_none() && available >= 4 {
                let mut length = [0u8; 4];
                self.copy_out(&mut length);
                let length = u32::from_le_bytes(length) as usize;
                if length > MAX_FRAME {
                    return Err(RingError::Broken(format!(
                        "a message of {length} bytes is announced, longer than the limit of {MAX_FRAME}"
                    )));
                }
                self.advance(4);
                available -= 4;
                self.partial = Some(Partial {
                    length,
                    bytes: Vec::with_capacity(length),
                });
            }
            if let Some(mut partial) = self.partial.take() {
                let n = (available as usize).min(partial.length - partial.bytes.len());
                if n > 0 {
                    let start = partial.bytes.len();
                    partial.bytes.resize(start + n, 0);
                    self.copy_out(&mut partial.bytes[start..]);
                    self.advance(n as u32);
                }
                if partial.bytes.len() == partial.length {
                    return Ok(Some(partial.bytes));
                }
                self.partial = Some(partial);
            }
            let seen = head;
            match wait_change(
                &region,
                &half.head,
                seen,
                deadline,
                spin,
                self.direction.host_reads(),
                (self.direction == Direction::ToChild).then(|| {
                    let warm = self.warm.as_mut().map(|warm| &mut **warm as &mut Rehearsal);
                    (&region.header().get_ready.word, &mut self.nudges, warm)
                }),
            ) {
                Waited::Changed => {}
                // Bytes published before the close are still read.
                Waited::Stopped(RingError::Closed)
                    if half.head.word.load(Ordering::Acquire) != seen => {}
                Waited::Stopped(stopped) => return Err(stopped),
                Waited::TimedOut => return Ok(None),
            }
        }
    }

    fn advance(&mut self, n: u32) {
        self.tail = self.tail.wrapping_add(n);
        publish(&self.region.half(self.direction).tail, self.tail);
    }

    fn copy_out(&self, out: &mut [u8]) {
        let capacity = self.region.capacity as usize;
        let at = (self.tail as usize) & (capacity - 1);
        let first = out.len().min(capacity - at);
        let base = self.region.data(self.direction);
        // SAFETY: `out.len()` is at most what was published and below the capacity, so both
        // copies stay inside this direction's ring; those bytes belong to the consumer until
        // it publishes its tail. They are copied out as plain bytes (any value is valid)
        // before anything reads them, and a peer that writes them meanwhile can only garble
        // its own message.
        unsafe {
            std::ptr::copy_nonoverlapping(base.add(at), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(base, out.as_mut_ptr().add(first), out.len() - first);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Arc<Region>, Arc<Region>) {
        let (host, fd) = Region::create().unwrap();
        let child = Region::open(&fd).unwrap();
        (host, child)
    }

    #[test]
    fn frames_pass_both_ways_and_big_ones_stream_through() {
        let (host, child) = pair();
        let mut to_child = Producer::new(host.clone(), Direction::ToChild, Duration::ZERO);
        let mut reader = Consumer::new(child.clone(), Direction::ToChild);
        assert!(to_child.send(b"hello", None).unwrap());
        assert_eq!(
            reader.receive(None, Duration::ZERO).unwrap().unwrap(),
            b"hello"
        );
        let big: Vec<u8> = (0..(CAPACITY as usize * 3 + 17))
            .map(|i| (i % 251) as u8)
            .collect();
        let expected = big.clone();
        let writer = std::thread::spawn(move || {
            for _ in 0..3 {
                assert!(to_child.send(&big, None).unwrap());
            }
        });
        for _ in 0..3 {
            let got = reader
                .receive(None, Duration::from_micros(10))
                .unwrap()
                .unwrap();
            assert_eq!(got.len(), expected.len());
            assert!(got == expected);
        }
        writer.join().unwrap();
        assert!(!reader.has_data());
    }

    #[test]
    fn a_wait_times_out_and_a_close_ends_it() {
        let (host, child) = pair();
        let mut reader = Consumer::new(host.clone(), Direction::ToHost);
        let deadline = Instant::now() + Duration::from_millis(20);
        assert_eq!(reader.receive(Some(deadline), Duration::ZERO), Ok(None));
        let mut writer = Producer::new(child, Direction::ToHost, Duration::ZERO);
        assert!(writer.send(b"last words", None).unwrap());
        // The host closes the ring when it sees the child's end (its pipe's).
        let closing = host.clone();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            closing.close();
        });
        assert_eq!(
            reader.receive(None, Duration::ZERO).unwrap().unwrap(),
            b"last words"
        );
        assert_eq!(reader.receive(None, Duration::ZERO), Err(RingError::Closed));
        closer.join().unwrap();
    }

    #[test]
    fn a_garbled_position_or_length_is_refused() {
        let (host, child) = pair();
        let mut reader = Consumer::new(host.clone(), Direction::ToHost);
        child
            .half(Direction::ToHost)
            .head
            .word
            .store(CAPACITY + 1, Ordering::Release);
        assert!(matches!(
            reader.receive(None, Duration::ZERO),
            Err(RingError::Broken(_))
        ));
        let (host, child) = pair();
        let mut reader = Consumer::new(host, Direction::ToHost);
        let mut writer = Producer::new(child, Direction::ToHost, Duration::ZERO);
        // A length prefix announcing more than the limit.
        assert!(writer.write(&u32::MAX.to_le_bytes(), None).unwrap());
        writer.publish();
        let Err(RingError::Broken(message)) = reader.receive(None, Duration::ZERO) else {
            panic!("a frame over the limit was accepted");
        };
        assert!(message.contains("longer than the limit"), "{message}");
    }

    #[test]
    fn the_child_closing_the_ring_is_a_broken_protocol_for_the_host() {
        let (host, child) = pair();
        let mut reader = Consumer::new(host.clone(), Direction::ToHost);
        let mut writer = Producer::new(host.clone(), Direction::ToChild, Duration::ZERO);
        // Only the shared word is written, as a hostile child would.
        child.header().closed.word.store(1, Ordering::SeqCst);
        let Err(RingError::Broken(message)) = reader.receive(None, Duration::ZERO) else {
            panic!("the child's closed word was taken for the host's");
        };
        assert!(message.contains("closed word"), "{message}");
        assert!(matches!(writer.send(b"x", None), Err(RingError::Broken(_))));
        // The child takes the word as the host's end; the host's own close is a close.
        assert_eq!(child.closed(), Some(RingError::Closed));
        host.close();
        assert_eq!(reader.receive(None, Duration::ZERO), Err(RingError::Closed));
    }

    #[test]
    fn get_ready_wakes_a_sleeping_reader_which_then_spins() {
        let (host, child) = pair();
        let mut reader = Consumer::new(child.clone(), Direction::ToChild);
        let waiting = std::thread::spawn(move || reader.receive(None, Duration::ZERO));
        let head = &host.half(Direction::ToChild).head;
        let within = |limit: Duration, what: &dyn Fn() -> bool| {
            let deadline = Instant::now() + limit;
            while !what() {
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::yield_now();
            }
            true
        };
        let until = |what: &dyn Fn() -> bool| {
            assert!(
                within(Duration::from_secs(10), what),
                "the reader never got there"
            );
        };
        // Asleep (it spins not at all without a nudge), then awake without a message (a
        // nudge just before its futex wait can be missed: it is best effort, so again).
        until(&|| head.sleeping.load(Ordering::SeqCst) == 1);
        let mut nudges = 0;
        while {
            host.get_ready();
            nudges += 1;
            !within(Duration::from_millis(100), &|| {
                head.sleeping.load(Ordering::SeqCst) == 0
            })
        } {
            assert!(nudges < 100, "get_ready never woke the reader");
        }
        // It sleeps again once the spin is over, and a message still wakes it.
        until(&|| head.sleeping.load(Ordering::SeqCst) == 1);
        let mut writer = Producer::new(host, Direction::ToChild, Duration::ZERO);
        assert!(writer.send(b"the event", None).unwrap());
        assert_eq!(waiting.join().unwrap().unwrap().unwrap(), b"the event");
    }

    #[test]
    fn a_nudged_reader_rehearses_while_it_spins_and_not_otherwise() {
        let (host, child) = pair();
        let rehearsals = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&rehearsals);
        let mut reader = Consumer::new(child.clone(), Direction::ToChild).warming(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let waiting = std::thread::spawn(move || reader.receive(None, Duration::ZERO));
        let head = &host.half(Direction::ToChild).head;
        let deadline = Instant::now() + Duration::from_secs(10);
        while head.sleeping.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the reader never slept");
            std::thread::yield_now();
        }
        // Asleep without a nudge: no rehearsal.
        std::thread::sleep(WARM_EVERY * 3);
        assert_eq!(rehearsals.load(Ordering::SeqCst), 0);
        // Nudged (again if a nudge just before its futex wait was missed): it rehearses at
        // once, and again while it spins.
        while rehearsals.load(Ordering::SeqCst) < 2 {
            host.get_ready();
            assert!(Instant::now() < deadline, "a nudge never made it rehearse");
            std::thread::sleep(WARM_EVERY * 3);
        }
        let mut writer = Producer::new(host, Direction::ToChild, Duration::ZERO);
        assert!(writer.send(b"the event", None).unwrap());
        assert_eq!(waiting.join().unwrap().unwrap().unwrap(), b"the event");
    }

    #[test]
    fn the_doorbell_rings_once_until_the_host_reads() {
        let (host, child) = pair();
        host.set_host_reading(true);
        assert!(!child.doorbell_due());
        host.set_host_reading(false);
        assert!(child.doorbell_due());
        assert!(!child.doorbell_due());
        host.set_host_reading(true);
        host.set_host_reading(false);
        assert!(child.doorbell_due());
    }
}
