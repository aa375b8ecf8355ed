//! Waking a local peer that sleeps, wherever it sleeps.
//!
//! A process of a single-node job sleeps on its doorbell futex. A process
//! of a job that spans nodes must also hear its network plugin, so it
//! sleeps in `poll` on the plugin's descriptor and on an eventfd of its
//! own, published in its process area. Either way it first moves its bell
//! to `SLEEPING` ([`doorbell::prepare_sleep`]), so a peer that rings it
//! learns it must wake it: with a futex wake in a single-node job, else
//! with a write to the sleeper's eventfd, through a copy taken once with
//! `pidfd_getfd`. Where that copy cannot be taken (the kernel asks for
//! ptrace permission, as for cross-memory attach), the sleeper's timeout
//! (`TESSEL_SLEEP_US`) bounds the delay, as it does on the futex.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use super::Shm;
use crate::board::{self, Watch};
use crate::doorbell;
use crate::segment::{BellRef, NodeSegment};
use crate::sync::Ordering;
use crate::sys;

/// What we know of a local peer's eventfd.
#[derive(Debug)]
enum PeerFd {
    /// Not published yet (or not looked up yet).
    Unknown,
    /// Published, but we cannot take a copy: its timeout must do.
    Unreachable,
    Fd(OwnedFd),
}

/// This process's eventfd and its copies of its peers' ones.
#[derive(Debug)]
pub(super) struct Wakeups {
    /// The node's processes sleep in `poll` (the job spans nodes), not on
    /// their futex: a wake-up is an eventfd write, never a futex wake.
    polls: bool,
    /// Ours, when `polls` (and the system gave one).
    own: Option<Arc<OwnedFd>>,
    peers: Vec<PeerFd>,
}

impl Wakeups {
    /// For local process `me` of `nlocal`; `polls`: the job spans nodes,
    /// so processes sleep in `poll` (an eventfd is created and published).
    /// Without an eventfd (the system refused one), this process sleeps in
    /// `poll` with its timeout only, as before eventfds existed.
    pub(super) fn new(seg: &NodeSegment, me: u32, nlocal: u32, polls: bool) -> Self {
        let own = polls.then(sys::eventfd).and_then(Result::ok).map(Arc::new);
        if let Some(fd) = &own {
            seg.proc_area(me)
                .wake_fd
                .store(fd.as_raw_fd() as u32 + 1, Ordering::Release);
        }
        Self {
            polls,
            own,
            peers: (0..nlocal).map(|_| PeerFd::Unknown).collect(),
        }
    }

    /// The eventfd of local process `p`, if we can write to it.
    fn peer(&mut self, seg: &NodeSegment, p: u32, me: u32) -> Option<&OwnedFd> {
        if p == me {
            return self.own.as_deref();
        }
        let slot = &mut self.peers[p as usize];
        if let PeerFd::Unknown = slot {
            let area = seg.proc_area(p);
            let fd = area.wake_fd.load(Ordering::Acquire);
            if fd == 0 {
                return None;
            }
            let pid = area.pid.load(Ordering::Relaxed) as u32;
            *slot = match sys::pidfd_open(pid).and_then(|pidfd| sys::pidfd_getfd(&pidfd, fd - 1)) {
                Ok(copy) => PeerFd::Fd(copy),
                Err(_) => PeerFd::Unreachable,
            };
        }
        match slot {
            PeerFd::Fd(fd) => Some(fd),
            _ => None,
        }
    }
}

impl Shm {
    /// Wake local process `p`, which rang as `SLEEPING`: one syscall,
    /// where it sleeps (a peer without an eventfd we can write to sleeps
    /// in `poll` with its timeout only).
    pub(super) fn wake(&mut self, p: u32) {
        if !self.wakeups.polls {
            sys::futex_wake(self.seg.bell(p));
        } else if let Some(fd) = self.wakeups.peer(&self.seg, p, self.me) {
            sys::eventfd_signal(fd);
        }
    }

    /// Wake local process `p` if it sleeps, without a message: after a
    /// board post and its fence ([`board::after_post`]).
    pub(in crate::endpoint) fn wake_if_sleeping(&mut self, p: u32) {
        let bell = self.seg.bell(p);
        if board::wake_needed(bell) && doorbell::nudge(bell) {
            self.wake(p);
        }
    }

    /// Sleep until a local peer or the network plugin (readable `net`)
    /// wakes us, or `timeout` passes; not at all if a `watched` board flag
    /// was posted meanwhile.
    pub(in crate::endpoint) fn sleep_polling(
        &self,
        net: RawFd,
        timeout: Duration,
        watched: &[Watch],
    ) {
        let Some(own) = &self.wakeups.own else {
            sys::poll_readable(&[net], timeout);
            return;
        };
        let bell = self.seg.bell(self.me);
        if doorbell::prepare_sleep(bell) {
            if board::may_sleep(watched.iter().map(Watch::get))
                && sys::poll_readable(&[net, own.as_raw_fd()], timeout) & 2 != 0
            {
                sys::eventfd_clear(own);
            }
            doorbell::cancel_sleep(bell);
        }
    }
}

/// Wakes this process's waiting loop from another thread: the thread that
/// holds the endpoint may be asleep on its bell (or in `poll`) while
/// another thread of the process needs it, as when threads share an MPI
/// library. [`Waker::wake`] rings our own bell as a peer would
/// ([`doorbell::nudge`]): a sleep in progress ends at once, and one about
/// to start does not start, so no wake-up is lost.
#[derive(Clone, Debug)]
pub struct Waker {
    bell: BellRef,
    /// Our eventfd, when we sleep in `poll`.
    fd: Option<Arc<OwnedFd>>,
    polls: bool,
}

impl Waker {
    /// End the endpoint's sleep, or keep it from starting.
    pub fn wake(&self) {
        if doorbell::nudge(self.bell.get()) {
            if !self.polls {
                sys::futex_wake(self.bell.get());
            } else if let Some(fd) = &self.fd {
                sys::eventfd_signal(fd);
            }
        }
    }
}

impl Shm {
    /// A handle that wakes this endpoint from another thread.
    pub(in crate::endpoint) fn waker(&self) -> Waker {
        Waker {
            bell: self.seg.bell_ref(self.me),
            fd: self.wakeups.own.clone(),
            polls: self.wakeups.polls,
        }
    }
}
