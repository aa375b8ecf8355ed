//! The one progress loop: it polls the intra-node path and the network
//! plugin, and waiting loops back off through [`Backoff`] (spin, yield,
//! then sleep where every transport in use can wake the process: the
//! doorbell futex on one node; with a plugin open, `poll` on the plugin's
//! descriptor and an eventfd local peers write to). Before each sleep a
//! waiting process checks that its launcher is still there, and ends
//! itself when it is not.

use super::{Completion, Endpoint, Request};
use crate::board::{self, Watch};
use crate::error::{Error, InitError};
use crate::net::Net;
use crate::sync::spin_hint;
use crate::sys;

/// The state of a waiting loop: it spins, then yields the core, then
/// sleeps on the doorbell futex (woken by any message), so that an
/// oversubscribed job keeps moving. See [`Endpoint::progress_or_back_off`].
#[derive(Debug, Default, Clone)]
pub struct Backoff {
    idle: u32,
}

impl Endpoint {
    /// Make progress on every outstanding operation without blocking.
    /// Returns whether anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = self.progress_shm();
        if self.net.is_some() {
            did |= self.progress_net();
        }
        did
    }

    /// Progress once and report whether `req` is complete.
    pub fn test(&mut self, req: &Request) -> bool {
        self.progress();
        self.is_complete(req)
    }

    /// A handle that ends this endpoint's sleep from another thread (see
    /// [`super::Waker`]).
    pub fn waker(&self) -> super::Waker {
        self.shm.waker()
    }

    /// Whether `req` is complete, without progressing.
    pub fn is_complete(&self, req: &Request) -> bool {
        self.reqs.is_complete(req.id)
    }

    /// One step of a waiting loop: progress once; when nothing happened,
    /// back off one step (spin, then yield, then sleep on the futex until
    /// a message arrives or the configured sleep ends). Returns whether
    /// progress happened. A loop waiting for several requests (or for
    /// something the engine does not know) calls this between its checks.
    pub fn progress_or_back_off(&mut self, backoff: &mut Backoff) -> bool {
        if self.progress() || self.steal_round() {
            self.shm.advertise(false);
            backoff.idle = 0;
            self.watched.clear();
            return true;
        }
        backoff.idle += 1;
        if backoff.idle > super::ADVERTISE_AFTER.min(self.cfg.spin) {
            // Each change of the advertisement is an atomic write on the
            // node's one stealer mask: a process waiting for a short
            // message does not make it (in a ping-pong, both would, twice
            // a message). It still steals at every step; it advertises
            // before it yields or sleeps, so an owner wakes it (SM1).
            self.shm.advertise(true);
        }
        self.idle(&mut backoff.idle);
        self.watched.clear();
        false
    }

    /// Watch a board flag during the next back-off step
    /// ([`Endpoint::progress_or_back_off`]): a waiter for a flag of an
    /// intra-node collective registers it before it backs off, so that a
    /// post between its last look and its sleep is not missed
    /// ([`crate::board`], BP3). Cleared after that step.
    pub fn watch(&mut self, w: Watch) {
        self.watched.push(w);
    }

    /// After posting on a board: wake those of the local processes `ids`
    /// that sleep ([`crate::board`], BP3). Costs a fence and a load of each
    /// one's bell; no write unless one sleeps. Counts the post
    /// (`TESSEL_STATS`).
    #[inline]
    pub fn wake_sleepers(&mut self, ids: impl IntoIterator<Item = u32>) {
        board::after_post();
        self.stats.board_post();
        for id in ids {
            let Some(l) = self.router.local(id) else {
                continue;
            };
            self.shm.wake_if_sleeping(l);
        }
    }

    /// Count a collective that ran on a tiered flag board
    /// (`TESSEL_STATS`).
    #[inline]
    pub fn count_tiered(&mut self) {
        self.stats.board_tiered();
    }

    /// Wait until one of `reqs` completes (backing off while idle) and
    /// return its index; the request stays to be waited for. `None` for
    /// an empty slice.
    pub fn wait_any(&mut self, reqs: &[&Request]) -> Option<usize> {
        if reqs.is_empty() {
            return None;
        }
        let mut backoff = Backoff::default();
        loop {
            if let Some(i) = reqs.iter().position(|r| self.is_complete(r)) {
                return Some(i);
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Wait until `req` completes, then return its result. Waiting spins,
    /// then yields the core, then sleeps on the futex (woken by any
    /// message), so oversubscribed jobs keep moving.
    pub fn wait(&mut self, req: Request) -> Result<Completion, Error> {
        let mut backoff = Backoff::default();
        while !self.is_complete(&req) {
            self.progress_or_back_off(&mut backoff);
        }
        self.reqs.finish(req.id)
    }

    /// One step of backing off while there is nothing to do.
    fn idle(&mut self, idle: &mut u32) {
        let (mut spin, yields) = (self.cfg.spin, self.cfg.yields);
        if self.oversubscribed {
            // The peer we wait for may need our core: no spinning. At 4
            // processes on 2 cores, a barrier took 3.4 us this way and
            // 4.0 us after 4 polls of spinning; an 8 B allreduce 3.8 and
            // 4.8 us; the stencil did not change.
            spin = 0;
        }
        if *idle <= spin {
            spin_hint();
        } else if *idle <= spin + yields || self.shm.busy() {
            // A backlog waits for a peer to free ring cells or staging
            // slots, which rings no doorbell: sleeping on the futex would
            // last until its timeout, so keep yielding instead. Likewise
            // while helpers copy chunks of our transfers.
            sys::yield_now();
        } else if self.boot.launcher_gone() {
            // Nobody will end this job any more: its peers may be gone,
            // or waiting for this process.
            eprintln!(
                "Tessel: rank {} (pid {}): the launcher is gone (its PMI connection closed); \
                 ending this process",
                self.boot.rank(),
                std::process::id()
            );
            sys::exit_now(1);
        } else if self.stop_polling() {
            // Only a doorbell wakes a sleeper: its senders ring from now
            // on. What they published before they knew is handled now.
            *idle = 0;
        } else if let Some(net) = self.net.as_mut() {
            // The futex hears only this node: sleep in `poll` on the
            // plugin's descriptor and our eventfd, which local peers write
            // when they find us sleeping; or yield when the plugin cannot
            // wake us.
            match net.arm() {
                Some(fd) => self.shm.sleep_polling(fd, self.cfg.sleep, &self.watched),
                None => sys::yield_now(),
            }
            *idle = spin;
        } else {
            self.shm.sleep(self.cfg.sleep, &self.watched);
            *idle = spin;
        }
    }

    /// Leave the job: deliver every control message still owed to peers,
    /// then a collective fence and the bootstrap's finalize.
    pub fn finalize(mut self) -> Result<(), InitError> {
        let mut idle = 0;
        while self.shm.busy() || self.net.as_ref().is_some_and(Net::busy) {
            if self.progress() {
                idle = 0;
            } else {
                idle += 1;
                self.idle(&mut idle);
            }
        }
        // Our senders ring again, should this node's segment outlive us.
        self.stop_polling();
        self.shm.advertise(false);
        if self.cfg.stats {
            let text: String = self
                .stats_lines()
                .iter()
                .map(|l| l.clone() + "\n")
                .collect();
            // One write, so lines of different processes do not interleave.
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        self.boot.fence()?;
        self.boot.finalize()?;
        Ok(())
    }
}
