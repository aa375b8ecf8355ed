//! Synchronization of windows (MPI-4.1 §12.5): fence, locks, flushes,
//! `MPI_Win_sync`, and post-start-complete-wait (the parent module's docs
//! say how each works).

use super::wire::{Out, TO_ORIGIN, TO_TARGET, kind};
use super::{LockType, Win, sync_error};
use crate::core::progress::Poll;
use crate::core::{Class, MpiError, MpiResult, Runtime};

impl Runtime {
    pub(super) fn check_rank(&self, slot: usize, rank: i32) -> MpiResult<u32> {
        let n = self.win(slot)?.peers.len();
        u32::try_from(rank)
            .ok()
            .filter(|&r| (r as usize) < n)
            .ok_or_else(|| {
                MpiError::new(Class::Rank, format!("invalid rank {rank} for the window"))
            })
    }

    pub(super) fn flush_touched(&mut self, slot: usize) -> MpiResult<()> {
        let mut ranks: Vec<u32> = self.win_mut(slot)?.touched.drain().collect();
        ranks.sort_unstable();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.control(slot, kind::FLUSH, 0, &ranks)
    }

    /// `MPI_Win_fence`: this process's operations complete at their
    /// targets, then a barrier; a fence epoch stays open unless
    /// `nosucceed`.
    pub fn win_fence(&mut self, slot: usize, noprecede: bool, nosucceed: bool) -> MpiResult<()> {
        let w = self.win(slot)?;
        if w.in_epoch() {
            return Err(sync_error("MPI_Win_fence inside another epoch"));
        }
        if !noprecede {
            self.flush_touched(slot)?;
        }
        let comm = self.win(slot)?.comm;
        crate::coll::barrier(self, comm)?;
        self.win_mut(slot)?.fence = !nosucceed;
        Ok(())
    }

    /// `MPI_Win_lock`.
    pub fn win_lock(&mut self, slot: usize, lock: LockType, rank: i32) -> MpiResult<()> {
        let r = self.check_rank(slot, rank)?;
        let w = self.win(slot)?;
        if w.locks.contains_key(&r) || w.lock_all {
            return Err(sync_error("the target is locked already"));
        }
        self.control(
            slot,
            kind::LOCK,
            u32::from(lock == LockType::Exclusive),
            &[r],
        )?;
        self.win_mut(slot)?.locks.insert(r, lock);
        Ok(())
    }

    /// `MPI_Win_unlock`: the operations to `rank` complete there, and the
    /// lock goes.
    pub fn win_unlock(&mut self, slot: usize, rank: i32) -> MpiResult<()> {
        let r = self.check_rank(slot, rank)?;
        let lock = self
            .win_mut(slot)?
            .locks
            .remove(&r)
            .ok_or_else(|| sync_error("the target is not locked"))?;
        self.win_mut(slot)?.touched.remove(&r);
        self.control(
            slot,
            kind::UNLOCK,
            u32::from(lock == LockType::Exclusive),
            &[r],
        )
    }

    /// `MPI_Win_lock_all`: a shared lock on every rank.
    pub fn win_lock_all(&mut self, slot: usize) -> MpiResult<()> {
        let w = self.win(slot)?;
        if w.lock_all || !w.locks.is_empty() {
            return Err(sync_error("a lock is held already"));
        }
        let ranks: Vec<u32> = (0..w.peers.len() as u32).collect();
        self.control(slot, kind::LOCK, 0, &ranks)?;
        self.win_mut(slot)?.lock_all = true;
        Ok(())
    }

    /// `MPI_Win_unlock_all`.
    pub fn win_unlock_all(&mut self, slot: usize) -> MpiResult<()> {
        let w = self.win_mut(slot)?;
        if !w.lock_all {
            return Err(sync_error("MPI_Win_lock_all was not called"));
        }
        w.lock_all = false;
        w.touched.clear();
        let ranks: Vec<u32> = (0..w.peers.len() as u32).collect();
        self.control(slot, kind::UNLOCK, 0, &ranks)
    }

    /// `MPI_Win_flush` (`rank` `Some`) or `MPI_Win_flush_all`: the
    /// operations complete at their targets (the local forms too: the
    /// stronger completion).
    pub fn win_flush(&mut self, slot: usize, rank: Option<i32>) -> MpiResult<()> {
        let ranks = match rank {
            Some(r) => self.check_rank(slot, r).map(|r| r..r + 1)?,
            None => 0..self.win(slot)?.peers.len() as u32,
        };
        let w = self.win_mut(slot)?;
        if !(w.lock_all || ranks.clone().all(|r| w.locks.contains_key(&r))) {
            return Err(sync_error("flushing outside a passive-target epoch"));
        }
        // Operations on mapped memory are complete; the others are
        // behind a flush notice.
        let sent: Vec<u32> = if w.touched.is_empty() {
            Vec::new()
        } else {
            ranks.filter(|r| w.touched.remove(r)).collect()
        };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.control(slot, kind::FLUSH, 0, &sent)?;
        // Progress even when there was nothing to wait for: a process that
        // polls its own window with flushes (a spin lock over RMA) must
        // apply the operations others send it.
        self.poke();
        Ok(())
    }

    /// One turn of progress: the engine, the collectives, the windows.
    pub(super) fn poke(&mut self) {
        self.ep.progress();
        self.progress_colls();
        self.serve_windows();
    }

    /// `MPI_Win_sync`, inside a passive-target epoch: the window's memory
    /// is the process's own (the unified model), so a memory fence orders
    /// the application's loads and stores around the call.
    pub fn win_sync(&mut self, slot: usize) -> MpiResult<()> {
        let w = self.win(slot)?;
        if !w.lock_all && w.locks.is_empty() {
            return Err(sync_error("MPI_Win_sync outside a passive-target epoch"));
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.poke();
        Ok(())
    }

    /// `MPI_Win_post`: open an exposure epoch to `group` (window ranks).
    pub fn win_post(&mut self, slot: usize, group: Vec<u32>) -> MpiResult<()> {
        let w = self.win_mut(slot)?;
        if w.post_group.is_some() {
            return Err(sync_error("an exposure epoch is open already"));
        }
        w.post_group = Some(group.clone());
        for r in group {
            self.win_send(slot, r, TO_ORIGIN, Out::new(kind::POST, 0))?;
        }
        Ok(())
    }

    /// `MPI_Win_start`: open an access epoch to `group` once each of its
    /// processes posted.
    pub fn win_start(&mut self, slot: usize, group: Vec<u32>) -> MpiResult<()> {
        if self.win(slot)?.started.is_some() {
            return Err(sync_error("an access epoch is open already"));
        }
        self.wait_until(|rt| {
            let w = rt.win(slot)?;
            Ok(
                if group.iter().all(|r| w.posts.get(r).is_some_and(|&n| n > 0)) {
                    Poll::Ready(())
                } else {
                    Poll::Idle
                },
            )
        })?;
        let w = self.win_mut(slot)?;
        for r in &group {
            *w.posts.get_mut(r).expect("waited for") -= 1;
        }
        w.started = Some(group);
        Ok(())
    }

    /// `MPI_Win_complete`: close the access epoch; each target learns it
    /// after the operations are done there.
    pub fn win_complete(&mut self, slot: usize) -> MpiResult<()> {
        let group = self
            .win_mut(slot)?
            .started
            .take()
            .ok_or_else(|| sync_error("MPI_Win_start was not called"))?;
        // Gets by message must have their data here before the epoch
        // ends; the notice follows the operations at each target.
        let w = self.win_mut(slot)?;
        let sent: Vec<u32> = group
            .iter()
            .copied()
            .filter(|r| w.touched.remove(r))
            .collect();
        self.control(slot, kind::FLUSH, 0, &sent)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        for r in group {
            self.win_send(slot, r, TO_TARGET, Out::new(kind::DONE, 0))?;
        }
        Ok(())
    }

    /// `MPI_Win_wait` (`block`) or `MPI_Win_test`: whether every origin
    /// of the exposure epoch completed; closes it then.
    pub fn win_wait(&mut self, slot: usize, block: bool) -> MpiResult<bool> {
        if self.win(slot)?.post_group.is_none() {
            return Err(sync_error("MPI_Win_post was not called"));
        }
        let all_done = |w: &Win| {
            w.post_group
                .iter()
                .flatten()
                .all(|r| w.dones.get(r).is_some_and(|&n| n > 0))
        };
        if block {
            self.wait_until(|rt| {
                Ok(if all_done(rt.win(slot)?) {
                    Poll::Ready(())
                } else {
                    Poll::Idle
                })
            })?;
        } else {
            self.poke();
            if !all_done(self.win(slot)?) {
                return Ok(false);
            }
        }
        let w = self.win_mut(slot)?;
        for r in w.post_group.take().into_iter().flatten() {
            *w.dones.get_mut(&r).expect("waited for") -= 1;
        }
        Ok(true)
    }
}
