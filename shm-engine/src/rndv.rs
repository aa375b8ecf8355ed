//! The receiver-initiated, adaptive protocol for large messages between
//! processes of a node: what the receiver decides, how a transfer is
//! described in the segment, and how any process runs one chunk of it.
//!
//! A sender announces a large message with an RTS naming its buffer. The
//! receiver, on the match, picks a [`Plan`] for the (peer, size class):
//!
//! | plan  | chunks                 | who copies                                   |
//! |-------|------------------------|----------------------------------------------|
//! | probe | fine (`TESSEL_CHUNK`)  | receiver, sender (asked by a CTS), stealers  |
//! | get   | none                   | the receiver alone, one `process_vm_readv`   |
//! | coop  | 2                      | receiver and sender, one half each (CTS)     |
//! | steal | as many as helpers seen| receiver, sender and stealers                |
//!
//! (A message may also skip all of this: when the receiver lent the sender
//! a landing buffer for a library-managed receive, the sender writes it
//! there at once, the *put* protocol in `endpoint`.)
//!
//! Chunks are [`CopyTask`]s on the receiver's steal queue; the transfer's
//! ends live in one of its transfer slots ([`XferDesc`](crate::layout::XferDesc)). Whoever copies a
//! chunk records itself and sets the chunk's bit ([`Completion::mark`]);
//! the receiver sends FIN once every bit is set, and learns from the number
//! of distinct copiers ([`Adapt::learn`]): 1 -> GET, 2 -> COOP, more ->
//! steal with that many chunks. Every `TESSEL_REPROBE` transfers it probes
//! again, so a changed pattern is noticed.
//!
//! **Who can copy a chunk.** A copier needs both ends addressable
//! ([`Addr`]): its own memory, any process's shared-heap memory (mapped
//! through [`PeerHeaps`]), or, for *one* end, another process's memory
//! through cross-memory attach (also the fallback when a peer's arena
//! cannot be mapped). So with both ends private
//! only the sender and the receiver can copy, and the task's hint restricts
//! it to them ([`Hint`]); with a shared end anyone can.

use std::collections::HashMap;
use std::io;

use crate::config::RndvMode;
use crate::heap::{HeapRef, PeerHeaps};
use crate::iov::Piece;
use crate::layout::{CopyTask, MAX_CHUNKS};
use crate::segment::XferView;
use crate::stats::Protocol;
use crate::steal::Completion;
use crate::sync::{AtomicU64, Ordering};

/// What the receiver does with one matched rendezvous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// One `process_vm_readv`, then FIN.
    Get,
    /// Finely chunked; the copiers counted.
    Probe,
    /// Two halves, the sender asked for one.
    Coop,
    /// This many chunks; 0 means finely chunked (a forced `steal`).
    Steal(u32),
}

impl Plan {
    /// The protocol this plan runs.
    pub fn protocol(self) -> Protocol {
        match self {
            Self::Get => Protocol::Get,
            Self::Probe => Protocol::Probe,
            Self::Coop => Protocol::Coop,
            Self::Steal(_) => Protocol::Steal,
        }
    }

    /// Bytes per chunk and number of chunks for `n` bytes, `fine` bytes per
    /// chunk when finely split (at most [`MAX_CHUNKS`] chunks, 64-byte
    /// multiples).
    pub fn chunking(self, n: usize, fine: usize) -> (usize, u32) {
        let parts = match self {
            Self::Get => 1,
            Self::Coop => 2,
            Self::Steal(k) if k > 0 => k as usize,
            Self::Probe | Self::Steal(_) => n.div_ceil(fine.max(64)),
        };
        let parts = parts.clamp(1, MAX_CHUNKS as usize);
        let len = n.div_ceil(parts).next_multiple_of(64).max(64);
        (len, n.div_ceil(len).max(1) as u32)
    }
}

/// The size class of a message: floor(log2(size)).
pub fn size_class(size: usize) -> u32 {
    usize::BITS - 1 - size.max(1).leading_zeros()
}

/// What the receiver learned about one (peer, size class).
#[derive(Clone, Copy, Debug)]
struct Class {
    next: Plan,
    since_probe: u32,
    /// Cooperative transfers in a row that found no helper.
    alone: u32,
}

/// A cooperative plan falls back to GET only after this many transfers in
/// a row that nobody helped with: one such transfer often means only that
/// the sender was not scheduled in time (measured on 2 cores: dropping at
/// the first one left the adaptive protocol at 0.93-1.42 of GET where
/// always-COOP reached 1.31-1.82).
pub const ALONE_BEFORE_GET: u32 = 3;

/// The adaptive choice per (peer, size class).
#[derive(Debug, Default)]
pub struct Adapt {
    classes: HashMap<(u32, u32), Class>,
}

impl Adapt {
    /// The plan for a `size`-byte message from local peer `peer`.
    pub fn plan(&mut self, mode: RndvMode, peer: u32, size: usize, reprobe: u32) -> Plan {
        match mode {
            RndvMode::Get => Plan::Get,
            RndvMode::Coop => Plan::Coop,
            RndvMode::Steal => Plan::Steal(0),
            RndvMode::Adaptive => {
                let c = self
                    .classes
                    .entry((peer, size_class(size)))
                    .or_insert(Class {
                        next: Plan::Probe,
                        since_probe: 0,
                        alone: 0,
                    });
                c.since_probe += 1;
                if reprobe > 0 && c.since_probe > reprobe {
                    c.since_probe = 0;
                    return Plan::Probe;
                }
                c.next
            }
        }
    }

    /// Record that a transfer of this class was copied by `helpers`
    /// distinct processes; `at_most_coop` when only sender and receiver
    /// could copy (both ends private). A cooperative plan that finds
    /// nobody helping keeps going for [`ALONE_BEFORE_GET`] transfers.
    pub fn learn(&mut self, peer: u32, size: usize, helpers: u32, at_most_coop: bool) {
        let Some(c) = self.classes.get_mut(&(peer, size_class(size))) else {
            return;
        };
        let next = match helpers {
            0 | 1 => Plan::Get,
            2 => Plan::Coop,
            _ if at_most_coop => Plan::Coop,
            h => Plan::Steal(h),
        };
        let cooperating = matches!(c.next, Plan::Coop | Plan::Steal(_));
        if next == Plan::Get && cooperating {
            c.alone += 1;
            if c.alone < ALONE_BEFORE_GET {
                return;
            }
        }
        c.alone = 0;
        c.next = next;
    }
}

/// One end of a transfer: which process's buffer, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// Local index of the process the buffer belongs to.
    pub proc: u32,
    /// Its pid (for cross-memory attach).
    pub pid: u32,
    /// The buffer's address in that process.
    pub addr: u64,
    /// Where the buffer lies in that process's shared heap, if it does:
    /// then any local process can map it.
    pub heap: Option<HeapRef>,
}

impl End {
    /// Whether only its owner can reach it without cross-memory attach.
    pub fn is_private(&self) -> bool {
        self.heap.is_none()
    }

    /// Store into five words of an [`XferDesc`](crate::layout::XferDesc).
    pub fn store(&self, w: &[AtomicU64; 5]) {
        let h = self.heap.unwrap_or(HeapRef {
            pid: 0,
            fd: 0,
            arena_len: 0,
            offset: 0,
        });
        let kind = u64::from(self.heap.is_some());
        w[0].store(
            kind | u64::from(self.proc) << 8 | u64::from(self.pid) << 32,
            Ordering::Relaxed,
        );
        w[1].store(self.addr, Ordering::Relaxed);
        w[2].store(u64::from(h.fd), Ordering::Relaxed);
        w[3].store(h.arena_len, Ordering::Relaxed);
        w[4].store(h.offset, Ordering::Relaxed);
    }

    /// Read back what [`store`](Self::store) wrote.
    pub fn load(w: &[AtomicU64; 5]) -> Self {
        let w0 = w[0].load(Ordering::Relaxed);
        let (proc, pid) = ((w0 >> 8) as u32 & 0xff_ffff, (w0 >> 32) as u32);
        let heap = (w0 & 0xff == 1).then(|| HeapRef {
            pid,
            fd: w[2].load(Ordering::Relaxed) as u32,
            arena_len: w[3].load(Ordering::Relaxed),
            offset: w[4].load(Ordering::Relaxed),
        });
        Self {
            proc,
            pid,
            addr: w[1].load(Ordering::Relaxed),
            heap,
        }
    }
}

/// How a copier reaches one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// Mapped here: plain loads and stores.
    Local(*mut u8),
    /// Another process's private memory: cross-memory attach.
    Remote {
        /// The owner.
        pid: u32,
        /// The address there.
        addr: u64,
    },
}

impl End {
    /// How process `me` reaches this end: its own memory, a mapping of
    /// the owner's shared heap, or else cross-memory attach.
    pub fn reach(&self, me: u32, heaps: &mut PeerHeaps) -> Addr {
        if self.proc == me {
            return Addr::Local(self.addr as usize as *mut u8);
        }
        match self.heap.map(|r| heaps.resolve(&r)) {
            Some(Ok(p)) => Addr::Local(p),
            _ => Addr::Remote {
                pid: self.pid,
                addr: self.addr,
            },
        }
    }
}

/// Whether a process reaching the ends as `src` and `dst` can copy between
/// them (`cma`: whether it may use cross-memory attach).
pub fn can_copy(src: Addr, dst: Addr, cma: bool) -> bool {
    match (src, dst) {
        (Addr::Local(_), Addr::Local(_)) => true,
        (Addr::Remote { .. }, Addr::Remote { .. }) => false,
        _ => cma,
    }
}

/// Copy bytes `off..off+len` from `src` to `dst`.
///
/// # Safety
/// The caller holds the task for those bytes (claimed from a steal queue,
/// or posted by itself): nobody else writes them, and the transfer's
/// protocol keeps both buffers alive and unchanged (the sender waits for
/// FIN, the receiver for the last chunk bit) until the chunk is marked.
/// `Local` addresses are mapped here for `off + len` bytes.
pub unsafe fn copy(src: Addr, dst: Addr, off: usize, len: usize) -> io::Result<()> {
    match (src, dst) {
        // SAFETY: both mapped here (caller), distinct buffers.
        (Addr::Local(s), Addr::Local(d)) => unsafe {
            crate::copy::bytes(s.add(off), d.add(off), len);
            Ok(())
        },
        // SAFETY: `d + off` is ours to write for `len` bytes (caller).
        (Addr::Remote { pid, addr }, Addr::Local(d)) => unsafe {
            let local = [Piece::new(d.add(off), len)];
            let remote = [Piece::new((addr as usize + off) as *mut u8, len)];
            if crate::copy::from_remote(pid, &local, &remote)? < len {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            Ok(())
        },
        // SAFETY: `s + off` is readable for `len` bytes (caller); the task
        // gives us the remote range.
        (Addr::Local(s), Addr::Remote { pid, addr }) => unsafe {
            crate::copy::to_remote(pid, addr + off as u64, s.add(off), len)
        },
        (Addr::Remote { .. }, Addr::Remote { .. }) => {
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

/// The hint pushed with each task: the transfer slot, its generation, and
/// who besides the receiver may take the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// Transfer slot of the receiver.
    pub slot: u32,
    /// `Some(p)`: only local process `p` (the sender) may steal it, because
    /// both ends are private.
    pub only: Option<u32>,
}

impl Hint {
    /// As a word.
    pub fn encode(self) -> u64 {
        u64::from(self.slot) | self.only.map_or(0, |p| u64::from(p + 1) << 32)
    }

    /// From a word.
    pub fn decode(w: u64) -> Self {
        let only = (w >> 32) as u32;
        Self {
            slot: w as u32,
            only: only.checked_sub(1),
        }
    }

    /// Whether local process `me` may take it.
    pub fn allows(self, me: u32) -> bool {
        self.only.is_none_or(|p| p == me)
    }
}

/// A task of transfer slot `slot` (generation `generation`): chunk `chunk`
/// at byte `off`, `len` bytes.
pub fn task(slot: u32, generation: u64, chunk: u32, off: usize, len: usize) -> CopyTask {
    CopyTask::new(
        generation << 8 | u64::from(slot),
        chunk,
        off as u64,
        off as u64,
        len as u64,
    )
}

/// The transfer slot a task belongs to.
pub fn task_slot(t: &CopyTask) -> u32 {
    (t.request & 0xff) as u32
}

/// The completion set of a transfer slot holding `chunks` chunks.
pub fn completion<'a>(x: &XferView<'a>, chunks: u32) -> Completion<'a> {
    Completion::new(x.chunk_words, x.helper_words, chunks)
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn chunking_covers_the_message() {
        for n in [1usize, 63, 64, 65, 1 << 16, (1 << 20) + 7, 64 << 20] {
            for plan in [
                Plan::Probe,
                Plan::Coop,
                Plan::Steal(3),
                Plan::Steal(0),
                Plan::Get,
            ] {
                let (len, k) = plan.chunking(n, 1024);
                assert!(
                    (1..=MAX_CHUNKS).contains(&k) && len % 64 == 0,
                    "{plan:?} {n}"
                );
                assert!(
                    len * k as usize >= n && len * (k as usize - 1) < n,
                    "{plan:?} {n}"
                );
            }
        }
        assert_eq!(Plan::Probe.chunking(1 << 20, 1024), (1024, 1024));
        assert_eq!(Plan::Probe.chunking(64 << 20, 1024).1, MAX_CHUNKS);
        assert_eq!(Plan::Coop.chunking(1 << 20, 1024), (1 << 19, 2));
    }

    #[test]
    fn adapts_to_the_helpers_seen_and_reprobes() {
        let mut a = Adapt::default();
        let m = RndvMode::Adaptive;
        assert_eq!(a.plan(m, 1, 100_000, 100), Plan::Probe);
        a.learn(1, 100_000, 3, false);
        assert_eq!(a.plan(m, 1, 120_000, 100), Plan::Steal(3));
        // Another peer, another class: probed separately.
        assert_eq!(a.plan(m, 2, 100_000, 100), Plan::Probe);
        assert_eq!(a.plan(m, 1, 1 << 20, 100), Plan::Probe);
        a.learn(1, 100_000, 2, false);
        assert_eq!(a.plan(m, 1, 100_000, 100), Plan::Coop);
        // Cooperation that found no helper is kept up for a while.
        for _ in 1..ALONE_BEFORE_GET {
            a.learn(1, 100_000, 1, false);
            assert_eq!(a.plan(m, 1, 100_000, 100), Plan::Coop);
        }
        a.learn(1, 100_000, 1, false);
        assert_eq!(a.plan(m, 1, 100_000, 100), Plan::Get);
        a.learn(1, 100_000, 5, true);
        assert_eq!(a.plan(m, 1, 100_000, 100), Plan::Coop, "both ends private");
        // A probe nobody helped with means GET at once; the fifth transfer
        // of a class probes again.
        let mut a = Adapt::default();
        assert_eq!(a.plan(m, 1, 100_000, 4), Plan::Probe);
        a.learn(1, 100_000, 1, false);
        for _ in 0..3 {
            assert_eq!(a.plan(m, 1, 100_000, 4), Plan::Get);
        }
        assert_eq!(
            a.plan(m, 1, 100_000, 4),
            Plan::Probe,
            "fifth transfer reprobes"
        );
        assert_eq!(a.plan(RndvMode::Get, 1, 100_000, 4), Plan::Get);
        assert_eq!(a.plan(RndvMode::Steal, 1, 100_000, 4), Plan::Steal(0));
    }

    #[test]
    fn ends_and_hints_round_trip() {
        let words: [AtomicU64; 5] = Default::default();
        let ends = [
            End {
                proc: 70,
                pid: 4242,
                addr: 0x7fff_0000_1000,
                heap: None,
            },
            End {
                proc: 3,
                pid: 99,
                addr: 0x7f00_0000_2000,
                heap: Some(HeapRef {
                    pid: 99,
                    fd: 17,
                    arena_len: 64 << 20,
                    offset: 4096,
                }),
            },
        ];
        for e in ends {
            e.store(&words);
            assert_eq!(End::load(&words), e);
        }
        for h in [
            Hint {
                slot: 5,
                only: None,
            },
            Hint {
                slot: 15,
                only: Some(0),
            },
            Hint {
                slot: 0,
                only: Some(63),
            },
        ] {
            assert_eq!(Hint::decode(h.encode()), h);
        }
        assert!(
            Hint {
                slot: 1,
                only: Some(2)
            }
            .allows(2)
        );
        assert!(
            !Hint {
                slot: 1,
                only: Some(2)
            }
            .allows(3)
        );
        let t = task(7, 1234, 9, 4096, 1024);
        assert_eq!((task_slot(&t), t.chunk, t.src, t.len), (7, 9, 4096, 1024));
        assert_eq!(size_class(65536), 16);
        assert_eq!(size_class(65535), 15);
    }

    #[test]
    fn who_can_copy() {
        let l = Addr::Local(std::ptr::null_mut());
        let r = Addr::Remote { pid: 1, addr: 0 };
        assert!(can_copy(l, l, false));
        assert!(can_copy(l, r, true) && can_copy(r, l, true));
        assert!(!can_copy(l, r, false) && !can_copy(r, r, true));
    }
}
