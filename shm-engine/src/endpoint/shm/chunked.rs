//! The adaptive rendezvous in chunks ([`crate::rndv`]): the receiver
//! posts chunks of the copy on its steal queue and describes the
//! transfer's ends in one of its transfer slots; it copies what it takes
//! itself, asks the sender (a CTS) to take some, and idle processes waiting
//! in [`Endpoint::progress_or_back_off`] take others from the queues of
//! their peers, nearest first. A receive posted without a buffer gets one
//! from the shared heap at the match, so every process of the node can
//! copy into it.

use super::Shm;
use super::cell::{Control, Rts};
use crate::config::RndvMode;
use crate::doorbell;
use crate::endpoint::Endpoint;
use crate::endpoint::request::{Req, ReqId, truncation};
use crate::error::Error;
use crate::heap::{self, PeerHeaps};
use crate::iov::Buf;
use crate::layout::{CopyTask, XFER_SLOTS};
use crate::locality::Place;
use crate::queue::spmc::{Owner, PushError, Steal};
use crate::rndv::{self, End, Hint, Plan};
use crate::segment::XferView;
use crate::steal::{self, Snapshot};
use crate::sync::{Ordering, spin_hint};
use crate::sys;

/// A large receive being copied in chunks through transfer slot `slot`
/// (the receiver's side of [`rndv`]).
#[derive(Debug)]
pub(super) struct Xfer {
    req: ReqId,
    /// Local index of the sender, its request, its rank.
    j: u32,
    sreq: u64,
    source: u32,
    tag: u64,
    /// The message's size, the receive's capacity.
    size: usize,
    cap: usize,
    chunks: u32,
    chunk_len: usize,
    plan: Plan,
    /// Both ends private: only sender and receiver could copy.
    at_most_coop: bool,
}

impl Endpoint {
    /// Start receiving rendezvous `rts` into request `id` in chunks, as the
    /// plan for its (peer, size class) says. False when the plan is GET or
    /// the transfer cannot be chunked (non-contiguous buffers, no free
    /// transfer slot, nothing to copy): the caller then GETs.
    pub(super) fn start_chunked(&mut self, id: ReqId, rts: &Rts) -> bool {
        let tag = rts.tag;
        let me = self.shm.me;
        let (ptr, cap) = match self.reqs.get_mut(id) {
            Some(Req {
                buf: Buf::One(p),
                cap,
                ..
            }) => (p.ptr, *cap),
            _ => return false,
        };
        let n = rts.size.min(cap);
        let free = self.shm.xfers.iter().position(Option::is_none);
        let (Some(slot), false, true, Some(_)) =
            (free, rts.pieces != 0, n > 0, self.shm.own.as_ref())
        else {
            return false;
        };
        let plan = self
            .shm
            .adapt
            .plan(self.cfg.rndv, rts.from, rts.size, self.cfg.reprobe);
        if plan == Plan::Get {
            return false;
        }
        let src = End {
            proc: rts.from,
            pid: rts.pid,
            addr: rts.addr,
            heap: rts.heap,
        };
        let dst = End {
            proc: me,
            pid: sys::pid(),
            addr: ptr as u64,
            heap: heap::locate(ptr, n),
        };
        let at_most_coop = src.is_private() && dst.is_private();
        let (chunk_len, chunks) = plan.chunking(n, self.cfg.chunk);
        let slot = slot as u32;
        let x = self.shm.seg.xfer(me, slot);
        // Nobody reads this slot now: its last transfer completed, so no
        // task of it is left to claim. The pushes below publish these
        // stores to whoever takes a task (SQ1 of the steal queue).
        let generation = x.desc.generation.load(Ordering::Relaxed) + 1;
        for w in &x.chunk_words[..steal::words_for(chunks)] {
            w.store(0, Ordering::Relaxed);
        }
        for w in x.helper_words {
            w.store(0, Ordering::Relaxed);
        }
        x.desc.generation.store(generation, Ordering::Relaxed);
        x.desc.size.store(n as u64, Ordering::Relaxed);
        x.desc.chunk_len.store(chunk_len as u64, Ordering::Relaxed);
        x.desc.chunks.store(u64::from(chunks), Ordering::Relaxed);
        x.desc.error.store(0, Ordering::Relaxed);
        src.store(&x.desc.src);
        dst.store(&x.desc.dst);
        self.shm.xfers[slot as usize] = Some(Xfer {
            req: id,
            j: rts.from,
            sreq: rts.sreq,
            source: self.shm.peers[rts.from as usize].rank,
            tag,
            size: rts.size,
            cap,
            chunks,
            chunk_len,
            plan,
            at_most_coop,
        });
        self.shm.active += 1;
        let hint = Hint {
            slot,
            only: at_most_coop.then_some(rts.from),
        }
        .encode();
        let owner = self.shm.own.as_mut().expect("checked above");
        let mut ours = Vec::new();
        for k in 0..chunks {
            let off = k as usize * chunk_len;
            let t = rndv::task(slot, generation, k, off, chunk_len.min(n - off));
            if let Err(PushError::Full(t)) = owner.push_hinted(t, hint) {
                ours.push(t);
            }
        }
        // The sender waits for FIN anyway: ask it to copy what it can take.
        self.control(
            rts.from,
            Control::Cts {
                sreq: rts.sreq,
                slot: u64::from(slot),
            },
        );
        if !at_most_coop && chunks > 2 {
            self.wake_stealers(chunks - 2, rts.from);
        }
        for t in ours {
            self.run_task(me, t);
        }
        true
    }

    /// Nudge up to `k` advertised stealers other than `except`, nearest
    /// first, so that sleeping ones come and take chunks.
    fn wake_stealers(&mut self, k: u32, except: u32) {
        self.settle_steal_order();
        let idle = Snapshot::after_posting(self.shm.seg.stealers());
        if idle.count() == 0 {
            return;
        }
        let mut left = k;
        for i in 0..self.shm.steal_order.len() {
            let p = self.shm.steal_order[i];
            if left == 0 {
                break;
            }
            if p != except && idle.contains(p) {
                self.nudge(p);
                left -= 1;
            }
        }
    }

    /// Wake local process `p` without a message (it may be asleep).
    fn nudge(&mut self, p: u32) {
        if doorbell::nudge(self.shm.seg.bell(p)) {
            self.shm.wake(p);
        }
    }

    /// Copy chunk `t` of a transfer of local process `q` (ourselves or a
    /// peer whose queue we took it from), then mark it done.
    fn run_task(&mut self, q: u32, t: CopyTask) {
        let me = self.shm.me;
        let x = self.shm.seg.xfer(q, rndv::task_slot(&t));
        let (src, dst) = (End::load(&x.desc.src), End::load(&x.desc.dst));
        let (s, d) = (
            src.reach(me, &mut self.shm.heaps),
            dst.reach(me, &mut self.shm.heaps),
        );
        let copied = match (s, d) {
            (s, d) if rndv::can_copy(s, d, self.shm.cma) => {
                // SAFETY: we hold task `t` (posted by us, or claimed from
                // q's queue: nobody else copies these bytes); the sender
                // keeps its buffer until FIN and the receiver its own
                // until the last chunk bit, which we set only below.
                unsafe { rndv::copy(s, d, t.src as usize, t.len as usize) }
            }
            // A stealer checks this before claiming; the owner and the
            // sender can always copy (their own end is local, and chunked
            // transfers run only with cross-memory attach).
            _ => Err(std::io::Error::from(std::io::ErrorKind::Unsupported)),
        };
        if let Err(e) = copied {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let _ = x.desc.error.compare_exchange(
                0,
                errno as u64 + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        x.copiers[t.chunk as usize].store(me, Ordering::Relaxed);
        let chunks = x.desc.chunks.load(Ordering::Relaxed) as u32;
        let done = rndv::completion(&x, chunks);
        let first = done.mark(t.chunk, me);
        debug_assert!(first, "chunk {} of a transfer copied twice", t.chunk);
        if q != me {
            self.stats.helped_others(t.len);
            if done.is_complete() {
                self.nudge(q);
            }
        }
    }

    /// Try to claim a task from local process `q`'s queue that we can run.
    fn try_steal(&mut self, q: u32) -> Option<CopyTask> {
        let (me, cma) = (self.shm.me, self.shm.cma);
        let (seg, heaps, queue) = (
            &self.shm.seg,
            &mut self.shm.heaps,
            &self.shm.stealers[q as usize],
        );
        let mut can_run = |word: u64| {
            let h = Hint::decode(word);
            h.slot < XFER_SLOTS && h.allows(me) && runnable(&seg.xfer(q, h.slot), me, heaps, cma)
        };
        for _ in 0..16 {
            match queue.steal_if(&mut can_run) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => spin_hint(),
            }
        }
        None
    }

    /// A CTS from local peer `j`: copy what we can take from its queue.
    pub(super) fn help(&mut self, j: u32) {
        while let Some(t) = self.try_steal(j) {
            self.run_task(j, t);
        }
    }

    /// Learn of local peers that published their place since the last
    /// visit, and order those known nearest first. A segment may have room
    /// for many processes a later spawn would start (32 by default): each
    /// visit looks at one slot not yet placed, so that an idle poll costs
    /// one load here, not one per slot, and visits only queues that can
    /// hold a task (a peer that has not attached has none). A slot found
    /// placed makes the visit look at them all and order the peers anew.
    #[inline]
    fn settle_steal_order(&mut self) {
        let shm = &mut self.shm;
        if shm.unplaced.is_empty() {
            return;
        }
        let k = if shm.probe < shm.unplaced.len() {
            shm.probe
        } else {
            0
        };
        shm.probe = k + 1;
        if shm.seg.placed(shm.unplaced[k]) {
            self.order_placed_peers();
        }
    }

    /// Order the local peers that published their place nearest first.
    #[cold]
    fn order_placed_peers(&mut self) {
        let shm = &mut self.shm;
        let seg = &shm.seg;
        shm.unplaced.retain(|&p| !seg.placed(p));
        let places: Vec<Place> = (0..shm.local_size())
            .map(|p| seg.place(p).unwrap_or(Place::UNKNOWN))
            .collect();
        let unplaced = &shm.unplaced;
        shm.steal_order = crate::locality::steal_order(shm.me, &places)
            .into_iter()
            .filter(|p| !unplaced.contains(p))
            .collect();
    }

    /// Idle: take one task from the nearest peer that has one for us.
    pub(in crate::endpoint) fn steal_round(&mut self) -> bool {
        self.settle_steal_order();
        for i in 0..self.shm.steal_order.len() {
            let q = self.shm.steal_order[i];
            if self.shm.stealers[q as usize].is_empty() {
                continue;
            }
            if let Some(t) = self.try_steal(q) {
                self.run_task(q, t);
                return true;
            }
        }
        false
    }

    /// Run the tasks left on our own queue, then finish every transfer
    /// whose chunks are all copied. Returns whether anything happened.
    pub(super) fn progress_chunked(&mut self) -> bool {
        let mut did = false;
        while let Some(t) = self.shm.own.as_mut().and_then(Owner::pop) {
            self.run_task(self.shm.me, t);
            did = true;
        }
        for slot in 0..XFER_SLOTS {
            let Some(x) = &self.shm.xfers[slot as usize] else {
                continue;
            };
            if rndv::completion(&self.shm.seg.xfer(self.shm.me, slot), x.chunks).is_complete() {
                self.finish_chunked(slot);
                did = true;
            }
        }
        did
    }

    /// Every chunk of transfer slot `slot` is copied: FIN to the sender,
    /// complete the receive, learn how many helped.
    fn finish_chunked(&mut self, slot: u32) {
        let x = self.shm.xfers[slot as usize].take().expect("active slot");
        self.shm.active -= 1;
        let view = self.shm.seg.xfer(self.shm.me, slot);
        let helpers = rndv::completion(&view, x.chunks).helpers();
        if self.cfg.stats {
            // Who copied what: only for the statistics printed at finalize.
            let n = x.size.min(x.cap);
            for k in 0..x.chunks as usize {
                let who = view.copiers[k].load(Ordering::Relaxed) as usize;
                let len = x.chunk_len.min(n - k * x.chunk_len);
                if let Some(peer) = self.shm.peers.get(who) {
                    self.stats.helped_by(peer.rank, len as u64);
                }
            }
        }
        let errno = view.desc.error.load(Ordering::Relaxed);
        self.control(x.j, Control::Fin { sreq: x.sreq });
        if self.cfg.rndv == RndvMode::Adaptive {
            self.shm.adapt.learn(x.j, x.size, helpers, x.at_most_coop);
        }
        self.stats.transfer(x.plan.protocol(), x.size);
        let result = if errno != 0 {
            Err(Error::Copy {
                source: x.source,
                errno: (errno - 1) as i32,
            })
        } else {
            truncation(x.source, x.tag, x.size, x.cap)
        };
        self.reqs.complete(x.req, result);
    }
}

/// Whether local process `me` can copy the chunks of transfer `x`.
fn runnable(x: &XferView<'_>, me: u32, heaps: &mut PeerHeaps, cma: bool) -> bool {
    let (src, dst) = (End::load(&x.desc.src), End::load(&x.desc.dst));
    rndv::can_copy(src.reach(me, heaps), dst.reach(me, heaps), cma)
}

impl Shm {
    /// Set or clear our bit in the node's stealer mask: set while we wait
    /// idle (others may then wake us to take chunks), clear while busy.
    pub(in crate::endpoint) fn advertise(&mut self, idle: bool) {
        if idle != self.advertised {
            self.advertised = idle;
            if idle {
                steal::advertise(self.seg.stealers(), self.me);
            } else {
                steal::withdraw(self.seg.stealers(), self.me);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::endpoint::tests::WithRoom;
    use crate::endpoint::{Backoff, Endpoint};
    use crate::locality::{CpuMask, Place};

    #[test]
    fn idle_polls_visit_only_the_queues_of_placed_peers() {
        let mut ep = Endpoint::with_config(Box::new(WithRoom::default()), Config::default())
            .expect("one-process endpoint with room");
        let mut backoff = Backoff::default();
        for _ in 0..10 {
            ep.progress_or_back_off(&mut backoff);
        }
        // Nobody else attached: no queue to visit.
        assert_eq!(ep.shm.steal_order, [] as [u32; 0]);
        // Local process 2 attaches (publishes its place): a few idle polls
        // later (one look at a slot per poll), its queue is visited, and
        // only its.
        let place = Place::new([2, 2, 0, 0, 0]);
        let publish = |ep: &Endpoint, p| {
            ep.shm
                .seg
                .publish_place(p, place, &CpuMask::default(), false)
        };
        publish(&ep, 2);
        for _ in 0..3 {
            ep.progress_or_back_off(&mut backoff);
        }
        assert_eq!(ep.shm.steal_order, [2]);
        publish(&ep, 1);
        publish(&ep, 3);
        for _ in 0..2 {
            ep.progress_or_back_off(&mut backoff);
        }
        let mut order = ep.shm.steal_order.clone();
        order.sort_unstable();
        assert_eq!(order, [1, 2, 3]);
    }
}
