//! The two ends of a window's messages: the target applies requests to
//! its memory and answers them; the origin takes the answers (data, lock
//! grants, acknowledgements) and the post notices.

use shm_engine::{Source, TagMatch};

use super::Flavor;
use super::acc::{AccGuard, AccLock};
use super::pieces::{apply, gather};
use super::wire::{In, Out, TO_ORIGIN, TO_TARGET, kind};
use crate::core::{Class, MpiError, MpiResult, Runtime};
use crate::ops::{Elem, Op};

impl Runtime {
    /// Handle the messages that arrived for every window; whether any did.
    pub fn serve_windows(&mut self) -> bool {
        let mut did = false;
        let mut next = self.wins.table.next_slot(0);
        while let Some(slot) = next {
            next = self.wins.table.next_slot(slot + 1);
            while let Some((from, request, data)) = self.window_message(slot) {
                did = true;
                let handled = if request {
                    self.serve_request(slot, from, &data)
                } else {
                    self.take_reply(slot, from, &data)
                };
                if let Err(e) = handled {
                    crate::core::report(&format!(
                        "a window message from rank {from} was refused: {}",
                        e.message
                    ));
                }
            }
            self.reap_sends(slot);
        }
        did
    }

    /// The next message that arrived for window `slot`: the sender's rank
    /// in the window, whether it is a request (else a reply or a notice),
    /// and its bytes.
    pub(super) fn window_message(&mut self, slot: usize) -> Option<(u32, bool, Vec<u8>)> {
        let c = self.comm(self.win(slot).ok()?.comm).ok()?;
        let m = TagMatch::masked(u64::from(c.ctx) << 32, 0xffff_ffff << 32);
        let (st, msg) = self.ep.improbe(Source::Any, m)?;
        let from = self
            .comm(self.win(slot).ok()?.comm)
            .ok()?
            .rank_of
            .get(&st.source)
            .copied();
        let r = self.ep.imrecv(msg, st.len);
        let data = match self.ep.wait(r) {
            Ok(done) => done.data.unwrap_or_default(),
            Err(e) => {
                crate::core::report(&format!("a window message was lost: {e}"));
                Vec::new()
            }
        };
        Some((from? as u32, st.tag as u32 as i32 == TO_TARGET, data))
    }

    /// Finish the sends of window `slot` that completed.
    pub(super) fn reap_sends(&mut self, slot: usize) {
        let Some(w) = self.wins.table.get_mut(slot) else {
            return;
        };
        for r in std::mem::take(&mut w.sends) {
            if self.ep.is_complete(&r) {
                // A failed send already failed the peer: the engine
                // reports a dead peer where the job ends.
                let _ = self.ep.wait(r);
            } else if let Some(w) = self.wins.table.get_mut(slot) {
                w.sends.push(r);
            }
        }
    }

    /// Wait for every send of window `slot` to complete.
    pub(super) fn drain_sends(&mut self, slot: usize) -> MpiResult<()> {
        let sends = std::mem::take(&mut self.win_mut(slot)?.sends);
        for r in sends {
            self.ep.wait(r)?;
        }
        Ok(())
    }

    /// This process's memory at `off` (in the window, or an absolute
    /// address in a dynamic one) for `len` bytes, after checking that the
    /// window exposes it.
    pub(super) fn local_range(&self, slot: usize, off: u64, len: u64) -> MpiResult<*mut u8> {
        let w = self.win(slot)?;
        let (off, len) = (off as usize, len as usize);
        let ok = match w.flavor {
            Flavor::Dynamic => w
                .attached
                .iter()
                .any(|&(a, l)| off >= a && off + len <= a + l),
            _ => off + len <= w.size,
        };
        if !ok {
            return Err(MpiError::new(
                Class::RmaRange,
                "an operation outside the exposed memory",
            ));
        }
        Ok(if w.flavor == Flavor::Dynamic {
            off as *mut u8
        } else {
            w.base.wrapping_add(off)
        })
    }

    pub(super) fn serve_request(&mut self, slot: usize, from: u32, data: &[u8]) -> MpiResult<()> {
        let mut i = In(data);
        let kind = i.u32()?;
        i.u32()?;
        let id = i.u64()?;
        match kind {
            kind::LOCK => {
                let exclusive = i.u32()? != 0;
                let w = self.win_mut(slot)?;
                if w.lock.queue.is_empty() && w.lock.grantable(exclusive) {
                    w.lock.take(exclusive);
                    self.reply(slot, from, id, &[])?;
                } else {
                    w.lock.queue.push_back((from, exclusive, id));
                }
                return Ok(());
            }
            kind::UNLOCK => {
                let exclusive = i.u32()? != 0;
                let w = self.win_mut(slot)?;
                if exclusive {
                    w.lock.exclusive = false;
                } else {
                    w.lock.shared = w.lock.shared.saturating_sub(1);
                }
                self.reply(slot, from, id, &[])?;
                let mut grants = Vec::new();
                let w = self.win_mut(slot)?;
                while let Some(&(o, x, gid)) = w.lock.queue.front() {
                    if !w.lock.grantable(x) {
                        break;
                    }
                    w.lock.take(x);
                    w.lock.queue.pop_front();
                    grants.push((o, gid));
                }
                for (o, gid) in grants {
                    self.reply(slot, o, gid, &[])?;
                }
                return Ok(());
            }
            kind::FLUSH => return self.reply(slot, from, id, &[]),
            kind::DONE => {
                *self.win_mut(slot)?.dones.entry(from).or_default() += 1;
                return Ok(());
            }
            _ => {}
        }
        let applied = self.apply_request(slot, from, kind, id, i);
        // An origin waiting for data gets a reply even when the request
        // is refused (it leaves the origin buffer as it was), so that it
        // never waits forever; the target reports the refusal.
        if applied.is_err() && matches!(kind, kind::GET | kind::GET_ACC | kind::CAS) {
            self.reply(slot, from, id, &[])?;
        }
        applied
    }

    /// Apply data request `kind` (`id`) from `from`, the rest of whose
    /// message `i` holds.
    pub(super) fn apply_request(
        &mut self,
        slot: usize,
        from: u32,
        kind: u32,
        id: u64,
        mut i: In,
    ) -> MpiResult<()> {
        let n = i.u64()? as usize;
        let mut pieces = Vec::with_capacity(n);
        for _ in 0..n {
            let (off, len) = (i.u64()?, i.u64()?);
            pieces.push((self.local_range(slot, off, len)?, len as usize));
        }
        let total: usize = pieces.iter().map(|p| p.1).sum();
        match kind {
            kind::PUT => {
                let src = i.take(total)?;
                let mut at = 0;
                for (p, len) in pieces {
                    // SAFETY: `local_range` checked that the window
                    // exposes these bytes of this process's memory.
                    unsafe { std::ptr::copy_nonoverlapping(src[at..].as_ptr(), p, len) };
                    at += len;
                }
                Ok(())
            }
            kind::GET => {
                let out = gather(&pieces);
                self.reply(slot, from, id, &out)
            }
            kind::ACC | kind::GET_ACC => {
                let op = Op::from_wire(i.u32()? as u8)
                    .ok_or_else(|| MpiError::new(Class::Intern, "unknown operation"))?;
                let elem = Elem::from_wire(i.u32()? as u8)
                    .ok_or_else(|| MpiError::new(Class::Intern, "unknown element kind"))?;
                let src = i.take(total)?;
                let old = {
                    let _held = self.hold_own_acc(slot)?;
                    let old = (kind == kind::GET_ACC).then(|| gather(&pieces));
                    apply(op, elem, src, &pieces);
                    old
                };
                match old {
                    Some(old) => self.reply(slot, from, id, &old),
                    None => Ok(()),
                }
            }
            kind::CAS => {
                let origin = i.take(total)?.to_vec();
                let compare = i.take(total)?;
                let old = {
                    let _held = self.hold_own_acc(slot)?;
                    let old = gather(&pieces);
                    if old == compare {
                        apply(Op::Replace, Elem::Byte, &origin, &pieces);
                    }
                    old
                };
                self.reply(slot, from, id, &old)
            }
            _ => Err(MpiError::new(Class::Intern, "unknown window request")),
        }
    }

    /// Hold this process's accumulate lock of window `slot`, if it has
    /// one: node peers may be applying operations to its memory
    /// themselves ([`super::acc`]).
    fn hold_own_acc(&self, slot: usize) -> MpiResult<Option<AccGuard<'static>>> {
        let w = self.win(slot)?;
        let lock = w.acc_lock.map(|l| {
            // SAFETY: the lock lives until the window is freed, which
            // cannot happen while this process serves the window.
            unsafe { &*l.as_ptr() }
        });
        Ok(lock.map(AccLock::hold))
    }

    /// Answer request `id` of `origin` with `data`.
    pub(super) fn reply(
        &mut self,
        slot: usize,
        origin: u32,
        id: u64,
        data: &[u8],
    ) -> MpiResult<()> {
        let mut o = Out::new(kind::REPLY, id);
        o.bytes(data);
        self.win_send(slot, origin, TO_ORIGIN, o)
    }

    pub(super) fn take_reply(&mut self, slot: usize, from: u32, data: &[u8]) -> MpiResult<()> {
        let mut i = In(data);
        let kind = i.u32()?;
        i.u32()?;
        let id = i.u64()?;
        let w = self.win_mut(slot)?;
        match kind {
            kind::POST => {
                *w.posts.entry(from).or_default() += 1;
                Ok(())
            }
            kind::REPLY => {
                let into = w
                    .awaiting
                    .remove(&id)
                    .ok_or_else(|| MpiError::new(Class::Intern, "a reply to no request"))?;
                if let Some(ub) = into {
                    // SAFETY: the origin buffer of a get stays the
                    // application's to write until the operation
                    // completes (MPI contract), which is now.
                    unsafe { ub.unpack(i.0) };
                }
                Ok(())
            }
            _ => Err(MpiError::new(Class::Intern, "unknown window reply")),
        }
    }
}
