//! How the host and an isolated plugin's `serve` child exchange the serve protocol's messages.
//!
//! - [`Transport::Ring`] (the default on Linux): the messages (the protocol's JSON objects,
//!   each one frame) go through a pair of shared-memory rings ([`ring`]) in a `memfd` the
//!   child inherits as fd 4 (`serve --ring-fd 4`). The caller of a forwarded event writes
//!   the request and reads the answer on its own thread, and the child's worker reads the
//!   request itself: no thread in between, and no system call at all while both sides
//!   spin. The pipes stay, for what they do well: the child's `hello` line and its
//!   doorbell come on fd 3 (a blank line when it sent something while the host was not
//!   reading, so a plugin's timer can still ask for a dialog), its end is seen as that
//!   pipe's end of file, and the host's end as the end of the child's stdin.
//! - [`Transport::Pipe`]: every message is a JSON line, to the child's stdin and back on
//!   fd 3, each read by a thread of its own (the transport of `serve` for the pi bridge).
//!   Elsewhere than Linux it is the only one.
//!
//! `PI_HOOKS_ISOLATE_TRANSPORT=pipe` (or `ring`) chooses one for the children started
//! from then on; [`set_transport`] does the same for a program that embeds the host.

#[cfg(target_os = "linux")]
pub mod ring;

use std::sync::RwLock;

/// Which transport an isolated plugin's child uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// JSON lines over pipes.
    Pipe,
    /// Frames in shared-memory rings (Linux).
    Ring,
}

static CHOSEN: RwLock<Option<Transport>> = RwLock::new(None);

/// Chooses the transport of the children started from now on (`None`: back to the
/// default, which `PI_HOOKS_ISOLATE_TRANSPORT` may set). `Ring` elsewhere than Linux means
/// `Pipe`.
pub fn set_transport(transport: Option<Transport>) {
    *CHOSEN.write().unwrap_or_else(|e| e.into_inner()) = transport;
}

/// The transport a child started now uses.
pub fn chosen() -> Transport {
    let set = *CHOSEN.read().unwrap_or_else(|e| e.into_inner());
    let wanted =
        set.unwrap_or_else(
            || match std::env::var("PI_HOOKS_ISOLATE_TRANSPORT").as_deref() {
                Ok("pipe") => Transport::Pipe,
                _ => Transport::Ring,
            },
        );
    if cfg!(target_os = "linux") {
        wanted
    } else {
        Transport::Pipe
    }
}

/// The host's end of a child's rings.
#[cfg(target_os = "linux")]
pub mod host {
    use std::os::fd::OwnedFd;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    pub use super::ring::RingError;
    use super::ring::{Consumer, Direction, Producer, Region};

    /// How long the host spins for an answer before it sleeps: a forwarded event the child
    /// answers within it costs no system call and no wake-up. (A longer spin, 300 µs, to
    /// outlast a sleeping child's wake-up after a pause, was tried: on a machine with no core
    /// to spare its yields gave the core to other work for whole time slices, milliseconds
    /// per call. A child woken early by [`HostRing::get_ready`] answers within this.)
    pub const SPIN: Duration = Duration::from_micros(50);

    /// The host's end: it writes requests and responses, reads everything the child sends.
    pub struct HostRing {
        region: Arc<Region>,
        to_child: Producer,
        from_child: Consumer,
    }

    impl HostRing {
        /// Creates the rings; the descriptor is the child's (its fd 4).
        pub fn create() -> Result<(HostRing, OwnedFd), String> {
            let (region, fd) = Region::create()?;
            let ring = HostRing {
                to_child: Producer::new(Arc::clone(&region), Direction::ToChild, SPIN),
                from_child: Consumer::new(Arc::clone(&region), Direction::ToHost),
                region,
            };
            Ok((ring, fd))
        }

        /// What closes the rings when the child has gone (called by the thread that sees
        /// its end), so a caller sleeping on them wakes.
        pub fn closer(&self) -> Box<dyn Fn() + Send> {
            let region = Arc::clone(&self.region);
            Box::new(move || region.close())
        }

        /// Sends one message; `Ok(false)` if `deadline` passed while the ring was full.
        pub fn send(&mut self, frame: &[u8], deadline: Option<Instant>) -> Result<bool, RingError> {
            self.check()?;
            self.to_child.send(frame, deadline)
        }

        /// The next message, waiting until `deadline` (`Ok(None)`: it passed).
        pub fn receive(&mut self, deadline: Option<Instant>) -> Result<Option<Vec<u8>>, RingError> {
            self.check()?;
            self.from_child.receive(deadline, SPIN)
        }

        /// The control words the child may have written that no wait looks at while
        /// messages flow: its `closed` word is a broken protocol (`Region::closed`).
        fn check(&self) -> Result<(), RingError> {
            match self.region.closed() {
                Some(RingError::Broken(why)) => Err(RingError::Broken(why)),
                _ => Ok(()),
            }
        }

        /// Says whether the host reads now (a call or a drain is under way): the child rings
        /// its doorbell only when it does not.
        pub fn set_reading(&self, reading: bool) {
            self.region.set_host_reading(reading);
        }

        /// Whether the child sent something not read yet.
        pub fn has_data(&self) -> bool {
            self.from_child.has_data()
        }

        /// Tells the child a request is likely soon: its reader, if it sleeps, wakes and
        /// spins for it a while ([`super::ring::Region::get_ready`]).
        pub fn get_ready(&self) {
            self.region.get_ready();
        }
    }
}

/// Elsewhere than Linux there are no rings: [`chosen`] is always [`Transport::Pipe`], and
/// this end can never be made.
#[cfg(not(target_os = "linux"))]
pub mod host {
    use std::time::Instant;

    /// Stands for the ring's errors (none can happen).
    #[derive(Debug)]
    pub enum RingError {
        /// The other side has gone.
        Closed,
        /// The shared pages were garbled.
        Broken(String),
    }

    /// The ring end that cannot exist here.
    pub enum HostRing {}

    impl HostRing {
        /// Refuses: rings are a Linux transport ([`super::chosen`] never picks them here).
        pub fn create() -> Result<(HostRing, std::os::fd::OwnedFd), String> {
            Err("the ring transport is only offered on Linux".into())
        }
        /// Never called: there is no ring to send on.
        pub fn send(&mut self, _: &[u8], _: Option<Instant>) -> Result<bool, RingError> {
            match *self {}
        }
        /// Never called.
        pub fn receive(&mut self, _: Option<Instant>) -> Result<Option<Vec<u8>>, RingError> {
            match *self {}
        }
        /// Never called.
        pub fn closer(&self) -> Box<dyn Fn() + Send> {
            match *self {}
        }
        /// Never called.
        pub fn set_reading(&self, _: bool) {
            match *self {}
        }
        /// Never called.
        pub fn has_data(&self) -> bool {
            match *self {}
        }
        /// Never called.
        pub fn get_ready(&self) {
            match *self {}
        }
    }
}
