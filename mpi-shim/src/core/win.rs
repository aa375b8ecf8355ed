//! One-sided communication (MPI-4.1 chapter 12): windows, the calls that
//! move data into and out of them, and their synchronization.
//!
//! # Active messages
//! Every window has a private duplicate of the communicator it was made
//! from, whose point-to-point context carries the window's messages. Each
//! operation (put, get, accumulate, get-accumulate, compare-and-swap) is
//! a message to the target: the origin packs its data and the target's
//! layout (the target datatype as byte pieces), and the target's library
//! applies it to its memory the next time it makes progress (every wait
//! and test does: [`Runtime::serve_windows`]). A get's data comes back as
//! a reply. The target applies the operations of a window one at a time,
//! in arrival order, which gives accumulates the element-wise atomicity
//! of MPI-4.1 §12.7.1, and the ordering of accumulates from one origin.
//!
//! Two engine tags on the window's context, one per direction, keep each
//! direction's messages between two processes in order (the engine
//! matches one sender's messages of one tag in order): a flush, unlock or
//! completion notice arrives after the operations issued before it, so
//! when the target has answered it, they are applied; and the answer
//! comes after the replies to earlier gets, so their data is in place.
//!
//! # Synchronization
//! - Fence: flush every target sent operations since the last fence,
//!   then a barrier.
//! - Locks: the target keeps a shared/exclusive lock with a queue in
//!   arrival order; `MPI_Win_lock` waits for the grant, `MPI_Win_unlock`
//!   for the release (which follows the operations).
//! - Post-start-complete-wait: `post` tells each origin of the group;
//!   `start` waits for those notices; `complete` flushes each target it
//!   sent operations and sends each a completion notice; `wait` waits for
//!   one from each origin.
//!
//! # Mapped memory
//! Window memory in the engine's shared heap (every `MPI_Win_allocate`
//! and `MPI_Win_allocate_shared` window, and `MPI_Win_create` over
//! `MPI_Alloc_mem` memory) is mapped by the other processes of its node
//! at creation ([`PeerHeaps`]). Puts and gets to such a target are plain
//! copies into or out of the mapping, complete at once and without the
//! target's participation; a flush then has nothing to wait for. The
//! accumulating operations still go to the target as messages, since
//! their atomicity needs one place that applies them. A shared window is
//! one block of rank 0's heap, contiguous across the ranks.
//!
//! # Progress
//! Operations by message need the target process to enter the library
//! now and then (MPI-4.1 §12.7 allows it): a target computing outside MPI
//! delays them, and a lock is granted by the target's library.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ptr::NonNull;
use std::sync::Arc;

use shm_engine::heap::{self, HeapRef, PeerHeaps};
use shm_engine::{Source, TagMatch};

use super::attr::Attr;
use super::buffer::UserBuf;
use super::datatype::Datatype;
use super::errh::Errhandler;
use super::info::Info;
use super::progress::Poll;
use super::table::Table;
use super::{Class, Comm, MpiError, MpiResult, Runtime};
use crate::ops::{Elem, Op, kernel};

/// How a window's memory came about (`MPI_WIN_CREATE_FLAVOR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Create,
    Allocate,
    Dynamic,
    Shared,
}

/// A lock type (`MPI_LOCK_SHARED`, `MPI_LOCK_EXCLUSIVE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    Shared,
    Exclusive,
}

/// What one process of the window exposes.
#[derive(Clone, Copy, Debug)]
pub struct Exposed {
    pub size: usize,
    pub disp_unit: usize,
    /// A shared-memory window's memory of that process, mapped here.
    pub base: *mut u8,
}

/// Engine tags on the window's context: requests to a target, and
/// replies and notices to an origin.
const TO_TARGET: i32 = 1;
const TO_ORIGIN: i32 = 2;

/// The kinds of message.
mod kind {
    pub const PUT: u32 = 1;
    pub const GET: u32 = 2;
    pub const ACC: u32 = 3;
    pub const GET_ACC: u32 = 4;
    pub const CAS: u32 = 5;
    pub const LOCK: u32 = 6;
    pub const UNLOCK: u32 = 7;
    pub const FLUSH: u32 = 8;
    pub const DONE: u32 = 9;
    /// To an origin: the reply to request `id` (data, a grant, an
    /// acknowledgement).
    pub const REPLY: u32 = 10;
    /// To an origin: an exposure epoch is open for it (`MPI_Win_post`).
    pub const POST: u32 = 11;
}

/// A window.
#[derive(Debug)]
pub struct Win {
    /// Slot of the private communicator carrying its messages.
    pub comm: usize,
    pub flavor: Flavor,
    /// This process's memory (null for a dynamic window).
    pub base: *mut u8,
    pub size: usize,
    pub disp_unit: usize,
    /// What each rank exposes.
    pub peers: Vec<Exposed>,
    /// Memory the library allocated for the window, freed with it.
    owned: Option<NonNull<u8>>,
    /// Regions attached to a dynamic window: (address, length).
    attached: Vec<(usize, usize)>,
    pub name: Option<String>,
    pub info: Info,
    pub errhandler: Errhandler,
    /// Cached attributes (keyval slot, value).
    pub attrs: Vec<Attr>,
    next_id: u64,
    /// Requests whose reply has not come: where its data goes, if any.
    awaiting: HashMap<u64, Option<UserBuf>>,
    /// Engine sends not yet complete.
    sends: Vec<shm_engine::Request>,
    /// Targets sent operations since their last flush (operations on
    /// mapped memory complete at once and leave no trace here).
    touched: HashSet<u32>,
    /// Access epochs open at this process.
    fence: bool,
    locks: HashMap<u32, LockType>,
    lock_all: bool,
    /// The group of `MPI_Win_start`, while its access epoch is open.
    started: Option<Vec<u32>>,
    /// `MPI_Win_post` notices received, by target, not yet used by a start.
    posts: HashMap<u32, usize>,
    /// Target side: the lock, and the exposure epoch of `MPI_Win_post`.
    lock: TargetLock,
    /// The group of `MPI_Win_post`, while its exposure epoch is open.
    post_group: Option<Vec<u32>>,
    /// Completion notices received, by origin, not yet used by a wait.
    dones: HashMap<u32, usize>,
}

impl Win {
    /// Whether an epoch other than a fence's is open here.
    fn in_epoch(&self) -> bool {
        !self.locks.is_empty()
            || self.lock_all
            || self.started.is_some()
            || self.post_group.is_some()
    }
}

/// The lock of a window at its target.
#[derive(Debug, Default)]
struct TargetLock {
    exclusive: bool,
    shared: usize,
    /// Waiting requests: origin, exclusive, request id.
    queue: VecDeque<(u32, bool, u64)>,
}

impl TargetLock {
    fn grantable(&self, exclusive: bool) -> bool {
        !self.exclusive && (!exclusive || self.shared == 0)
    }

    fn take(&mut self, exclusive: bool) {
        if exclusive {
            self.exclusive = true;
        } else {
            self.shared += 1;
        }
    }
}

/// The windows of the process, and the node peers' shared heaps mapped
/// for shared-memory windows.
#[derive(Debug)]
pub struct Windows {
    pub table: Table<Win>,
    heaps: PeerHeaps,
}

impl Default for Windows {
    fn default() -> Self {
        Self {
            table: Table::new(0),
            heaps: PeerHeaps::new(),
        }
    }
}

/// Where an operation goes at its target: the offset of the target
/// datatype's start in the window (an absolute address for a dynamic
/// window) and the datatype's pieces, relative to it.
#[derive(Clone, Debug)]
pub struct Target {
    pub rank: u32,
    pub disp: i64,
    pub count: usize,
    pub dt: Arc<Datatype>,
}

/// A message being written.
struct Out(Vec<u8>);

impl Out {
    fn new(kind: u32, id: u64) -> Self {
        let mut o = Out(Vec::with_capacity(64));
        o.u32(kind);
        o.u32(0);
        o.u64(id);
        o
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

/// A message being read.
struct In<'a>(&'a [u8]);

impl In<'_> {
    fn u32(&mut self) -> MpiResult<u32> {
        Ok(u32::from_ne_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> MpiResult<u64> {
        Ok(u64::from_ne_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn take(&mut self, n: usize) -> MpiResult<&[u8]> {
        if self.0.len() < n {
            return Err(MpiError::new(Class::Intern, "short window message"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
}

fn sync_error(what: &str) -> MpiError {
    MpiError::new(Class::RmaSync, what.to_string())
}

/// The element kind and operation of an accumulate, checked: a
/// predefined operation (or `MPI_REPLACE`, `MPI_NO_OP`) on a datatype of
/// one basic kind it applies to.
pub fn check_accumulate(op: Op, dt: &Datatype) -> MpiResult<Elem> {
    let elem = dt.elem.filter(|e| e.wire().is_some()).ok_or_else(|| {
        MpiError::new(
            Class::Type,
            "accumulate needs a datatype of one predefined kind",
        )
    })?;
    if !matches!(op, Op::Replace | Op::NoOp) && kernel(op, elem).is_none() {
        return Err(MpiError::new(
            Class::Op,
            format!("{} does not apply to this datatype", op.name()),
        ));
    }
    Ok(elem)
}

impl Runtime {
    pub fn win(&self, slot: usize) -> MpiResult<&Win> {
        self.wins
            .table
            .get(slot)
            .ok_or_else(|| MpiError::new(Class::Win, "invalid window"))
    }

    pub fn win_mut(&mut self, slot: usize) -> MpiResult<&mut Win> {
        self.wins
            .table
            .get_mut(slot)
            .ok_or_else(|| MpiError::new(Class::Win, "invalid window"))
    }

    /// Collective over intracommunicator `parent`: a window of `size`
    /// bytes at `base` (`Create`), of memory the library allocates
    /// (`Allocate`, `Shared`: contiguous across the ranks, mapped by
    /// every process, which must share a node), or with none yet
    /// (`Dynamic`). Returns the slot and this process's base.
    pub fn win_create(
        &mut self,
        parent: usize,
        flavor: Flavor,
        base: *mut u8,
        size: usize,
        disp_unit: usize,
        info: Info,
    ) -> MpiResult<(usize, *mut u8)> {
        let members = self.intra(parent)?.members.clone();
        if flavor == Flavor::Shared {
            let me = self.ep.rank();
            let boot = self.ep.bootstrap();
            let node = boot.node_of(me);
            if members.iter().any(|&m| boot.node_of(m) != node) {
                return Err(MpiError::new(
                    Class::RmaShared,
                    "MPI_Win_allocate_shared needs processes of one node",
                ));
            }
        }
        let comm = self.comm_dup(parent)?;
        let made = self.win_memory(comm, flavor, base, size, disp_unit);
        let (peers, owned, base) = match made {
            Ok(m) => m,
            Err(e) => {
                self.comm_free(comm)?;
                return Err(e);
            }
        };
        let win = Win {
            comm,
            flavor,
            base,
            size,
            disp_unit,
            peers,
            owned,
            attached: Vec::new(),
            name: None,
            info,
            // The default for windows (MPI-4.1 §9.3).
            errhandler: Errhandler::Fatal,
            attrs: Vec::new(),
            next_id: 0,
            awaiting: HashMap::new(),
            sends: Vec::new(),
            touched: HashSet::new(),
            fence: false,
            locks: HashMap::new(),
            lock_all: false,
            started: None,
            posts: HashMap::new(),
            lock: TargetLock::default(),
            post_group: None,
            dones: HashMap::new(),
        };
        Ok((self.wins.table.insert(win), base))
    }

    /// Collective over the window's communicator `comm`: what each rank
    /// exposes, the memory the library allocated, and this process's base.
    #[allow(clippy::type_complexity)]
    fn win_memory(
        &mut self,
        comm: usize,
        flavor: Flavor,
        base: *mut u8,
        size: usize,
        disp_unit: usize,
    ) -> MpiResult<(Vec<Exposed>, Option<NonNull<u8>>, *mut u8)> {
        let c = self.comm(comm)?;
        let (me, members) = (c.rank as usize, c.members.clone());
        let mut owned = None;
        // This process's memory (a shared window's comes from rank 0,
        // below), and where the processes of its node can map it: its
        // place in the shared heap, if it lies there.
        let mine = match flavor {
            Flavor::Create => base,
            Flavor::Dynamic | Flavor::Shared => std::ptr::null_mut(),
            Flavor::Allocate => {
                let block = alloc(size)?;
                owned = Some(block);
                block.as_ptr()
            }
        };
        let place = (!mine.is_null())
            .then(|| heap::locate(mine, size.max(1)))
            .flatten();
        let mut row = Out(Vec::new());
        row.u64(size as u64);
        row.u64(disp_unit as u64);
        put_ref(&mut row, place.as_ref());
        let rows = self.allgather_var(comm, &row.0)?;
        let node = self.ep.node();
        let mut peers = Vec::with_capacity(rows.len());
        for (r, bytes) in rows.iter().enumerate() {
            let mut i = In(bytes);
            let (size, disp_unit) = (i.u64()? as usize, i.u64()? as usize);
            let place = take_ref(&mut i)?;
            let local = self.ep.bootstrap().node_of(members[r]) == node;
            // A peer whose memory cannot be mapped here (the kernel
            // refuses) is reached by messages, as one on another node.
            let base = match place {
                _ if r == me => mine,
                Some(p) if local => self.wins.heaps.resolve(&p).unwrap_or(std::ptr::null_mut()),
                _ => std::ptr::null_mut(),
            };
            peers.push(Exposed {
                size,
                disp_unit,
                base,
            });
        }
        let base = match flavor {
            Flavor::Shared => {
                let total: usize = peers.iter().map(|p| p.size).sum();
                // Rank 0 allocates for everyone; an empty reference tells
                // the others it could not.
                let (block, failed) = match (me, alloc(total)) {
                    (0, Ok(b)) => (Some(b), None),
                    (0, Err(e)) => (None, Some(e)),
                    _ => (None, None),
                };
                let place = block.and_then(|b| heap::locate(b.as_ptr(), total.max(1)));
                let mut o = Out(Vec::new());
                put_ref(&mut o, place.as_ref());
                let refs = self.allgather_var(comm, &o.0)?;
                if let Some(e) = failed {
                    return Err(e);
                }
                let r = take_ref(&mut In(&refs[0]))?.ok_or_else(|| {
                    MpiError::new(Class::NoMem, "rank 0 could not allocate the shared window")
                })?;
                let start = self.wins.heaps.resolve(&r).map_err(|e| {
                    MpiError::new(
                        Class::RmaShared,
                        format!("cannot map rank 0's window memory: {e}"),
                    )
                })?;
                owned = block;
                let mut at = 0;
                for p in &mut peers {
                    p.base = start.wrapping_add(at);
                    at += p.size;
                }
                peers[me].base
            }
            _ => mine,
        };
        Ok((peers, owned, base))
    }

    /// `MPI_Win_free` (collective): every process's operations complete,
    /// then the window and its memory go.
    pub fn win_free(&mut self, slot: usize) -> MpiResult<()> {
        let w = self.win(slot)?;
        if w.in_epoch() {
            return Err(sync_error("MPI_Win_free inside an epoch"));
        }
        self.flush_touched(slot)?;
        let comm = self.win(slot)?.comm;
        crate::coll::barrier(self, comm)?;
        self.drain_sends(slot)?;
        let w = self.wins.table.remove(slot).expect("checked above");
        if let Some(b) = w.owned {
            // SAFETY: allocated for this window by `alloc`; after the
            // barrier no process touches it through the window.
            unsafe { heap::free(b) }.map_err(|e| MpiError::new(Class::Intern, e.to_string()))?;
        }
        self.comm_free(w.comm)
    }

    /// `MPI_Win_attach`: expose `len` bytes at `addr` in a dynamic window.
    pub fn win_attach(&mut self, slot: usize, addr: usize, len: usize) -> MpiResult<()> {
        let w = self.win_mut(slot)?;
        if w.flavor != Flavor::Dynamic {
            return Err(MpiError::new(
                Class::RmaFlavor,
                "MPI_Win_attach needs a dynamic window",
            ));
        }
        w.attached.push((addr, len));
        Ok(())
    }

    /// `MPI_Win_detach`: withdraw the region attached at `addr`.
    pub fn win_detach(&mut self, slot: usize, addr: usize) -> MpiResult<()> {
        let w = self.win_mut(slot)?;
        if w.flavor != Flavor::Dynamic {
            return Err(MpiError::new(
                Class::RmaFlavor,
                "MPI_Win_detach needs a dynamic window",
            ));
        }
        let i = w
            .attached
            .iter()
            .position(|&(a, _)| a == addr)
            .ok_or_else(|| {
                MpiError::new(Class::RmaAttach, "no region is attached at that address")
            })?;
        w.attached.remove(i);
        Ok(())
    }

    // -----------------------------------------------------------------
    // Operations.

    /// Check that an access epoch to `rank` is open and the target range
    /// is in its window; the target pieces, as (offset in the window or
    /// absolute address, length).
    fn target_pieces(&self, slot: usize, t: &Target) -> MpiResult<Vec<(u64, u64)>> {
        let w = self.win(slot)?;
        let peer = w
            .peers
            .get(t.rank as usize)
            .ok_or_else(|| MpiError::new(Class::Rank, format!("invalid target rank {}", t.rank)))?;
        let open = w.fence
            || w.lock_all
            || w.locks.contains_key(&t.rank)
            || w.started.as_ref().is_some_and(|g| g.contains(&t.rank));
        if !open {
            return Err(sync_error("no access epoch to the target is open"));
        }
        let unit = if w.flavor == Flavor::Dynamic {
            1
        } else {
            peer.disp_unit as i64
        };
        let start = t
            .disp
            .checked_mul(unit)
            .ok_or_else(|| MpiError::new(Class::RmaRange, "target displacement overflows"))?;
        let mut out = Vec::new();
        for p in t.dt.pieces(std::ptr::null(), t.count) {
            let off = start + p.ptr as isize as i64;
            let inside = w.flavor == Flavor::Dynamic
                || (off >= 0 && off as u64 + p.len as u64 <= peer.size as u64);
            if !inside {
                return Err(MpiError::new(
                    Class::RmaRange,
                    format!(
                        "the target range ends beyond the {} bytes rank {} exposes",
                        peer.size, t.rank
                    ),
                ));
            }
            out.push((off as u64, p.len as u64));
        }
        Ok(out)
    }

    /// Send message `o` to `rank` of window `slot` with `tag`.
    fn win_send(&mut self, slot: usize, rank: u32, tag: i32, o: Out) -> MpiResult<()> {
        let w = self.win(slot)?;
        let c = self.comm(w.comm)?;
        let to = c.members[rank as usize];
        let tag = Comm::tag(c.ctx, tag);
        let r = self.ep.isend(to, tag, o.0)?;
        self.win_mut(slot)?.sends.push(r);
        Ok(())
    }

    fn new_id(&mut self, slot: usize, into: Option<UserBuf>) -> MpiResult<u64> {
        let w = self.win_mut(slot)?;
        w.next_id += 1;
        w.awaiting.insert(w.next_id, into);
        Ok(w.next_id)
    }

    /// A request header with the operation's target layout.
    fn op_message(kind: u32, id: u64, pieces: &[(u64, u64)]) -> Out {
        let mut o = Out::new(kind, id);
        o.u64(pieces.len() as u64);
        for &(off, len) in pieces {
            o.u64(off);
            o.u64(len);
        }
        o
    }

    /// Where `rank`'s window memory is mapped in this process, if it is
    /// (see the module docs).
    fn direct(&self, slot: usize, rank: u32) -> Option<*mut u8> {
        let w = self.win(slot).ok()?;
        let base = w.peers.get(rank as usize)?.base;
        (w.flavor != Flavor::Dynamic && !base.is_null()).then_some(base)
    }

    /// `MPI_Put`: `data` (packed) into the target.
    pub fn win_put(&mut self, slot: usize, data: &[u8], t: &Target) -> MpiResult<()> {
        let pieces = self.target_pieces(slot, t)?;
        if let Some(base) = self.direct(slot, t.rank) {
            let mut at = 0;
            for (off, len) in pieces {
                let len = len as usize;
                // SAFETY: `target_pieces` checked the range against the
                // size the target exposes, which its mapping here covers;
                // MPI makes an access that conflicts with this one
                // erroneous (MPI-4.1 §12.7).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data[at..at + len].as_ptr(),
                        base.add(off as usize),
                        len,
                    )
                };
                at += len;
            }
            return Ok(());
        }
        let mut o = Self::op_message(kind::PUT, 0, &pieces);
        o.bytes(data);
        self.win_send(slot, t.rank, TO_TARGET, o)?;
        self.win_mut(slot)?.touched.insert(t.rank);
        Ok(())
    }

    /// `MPI_Get`: the target's data into `into`, at once from a mapped
    /// target, else when the reply comes: the id of the reply (a request
    /// waits for it).
    pub fn win_get(&mut self, slot: usize, into: UserBuf, t: &Target) -> MpiResult<Option<u64>> {
        let pieces = self.target_pieces(slot, t)?;
        if let Some(base) = self.direct(slot, t.rank) {
            let mapped: Vec<(*mut u8, usize)> = pieces
                .iter()
                .map(|&(off, len)| (base.wrapping_add(off as usize), len as usize))
                .collect();
            let data = gather(&mapped);
            // SAFETY: the origin buffer is the application's to write until
            // the operation completes (MPI contract), which is now.
            unsafe { into.unpack(&data) };
            return Ok(None);
        }
        let id = self.new_id(slot, Some(into))?;
        let o = Self::op_message(kind::GET, id, &pieces);
        self.win_send(slot, t.rank, TO_TARGET, o)?;
        self.win_mut(slot)?.touched.insert(t.rank);
        Ok(Some(id))
    }

    /// `MPI_Accumulate` (`fetch` `None`) or `MPI_Get_accumulate` (the
    /// target's former data into `fetch` when the reply comes): `data`
    /// (packed elements of kind `elem`) combined into the target with
    /// `op`. The id of the reply, if any.
    pub fn win_accumulate(
        &mut self,
        slot: usize,
        data: &[u8],
        op: Op,
        elem: Elem,
        fetch: Option<UserBuf>,
        t: &Target,
    ) -> MpiResult<Option<u64>> {
        let pieces = self.target_pieces(slot, t)?;
        let (kind, id) = match fetch {
            Some(into) => (kind::GET_ACC, Some(self.new_id(slot, Some(into))?)),
            None => (kind::ACC, None),
        };
        let mut o = Self::op_message(kind, id.unwrap_or(0), &pieces);
        o.u32(u32::from(op.wire()));
        o.u32(u32::from(elem.wire().expect("checked by check_accumulate")));
        o.bytes(data);
        self.win_send(slot, t.rank, TO_TARGET, o)?;
        self.win_mut(slot)?.touched.insert(t.rank);
        Ok(id)
    }

    /// `MPI_Compare_and_swap`: one element; the target's former value
    /// into `result` when the reply comes.
    pub fn win_cas(
        &mut self,
        slot: usize,
        origin: &[u8],
        compare: &[u8],
        result: UserBuf,
        t: &Target,
    ) -> MpiResult<u64> {
        let pieces = self.target_pieces(slot, t)?;
        let id = self.new_id(slot, Some(result))?;
        let mut o = Self::op_message(kind::CAS, id, &pieces);
        o.bytes(origin);
        o.bytes(compare);
        self.win_send(slot, t.rank, TO_TARGET, o)?;
        self.win_mut(slot)?.touched.insert(t.rank);
        Ok(id)
    }

    /// Whether the reply to request `id` of window `slot` has come.
    pub fn win_replied(&self, slot: usize, id: u64) -> bool {
        self.win(slot).is_ok_and(|w| !w.awaiting.contains_key(&id))
    }

    /// Wait for the replies to `ids`.
    fn await_replies(&mut self, slot: usize, ids: &[u64]) -> MpiResult<()> {
        self.wait_until(|rt| {
            let w = rt.win(slot)?;
            Ok(if ids.iter().all(|id| !w.awaiting.contains_key(id)) {
                Poll::Ready(())
            } else {
                Poll::Idle
            })
        })
    }

    /// Send a control request (`LOCK`, `UNLOCK`, `FLUSH`) to each of
    /// `ranks` and wait for the replies.
    fn control(&mut self, slot: usize, kind: u32, arg: u32, ranks: &[u32]) -> MpiResult<()> {
        let mut ids = Vec::with_capacity(ranks.len());
        for &r in ranks {
            let id = self.new_id(slot, None)?;
            let mut o = Out::new(kind, id);
            o.u32(arg);
            self.win_send(slot, r, TO_TARGET, o)?;
            ids.push(id);
        }
        self.await_replies(slot, &ids)
    }

    // -----------------------------------------------------------------
    // Synchronization.

    fn check_rank(&self, slot: usize, rank: i32) -> MpiResult<u32> {
        let n = self.win(slot)?.peers.len();
        u32::try_from(rank)
            .ok()
            .filter(|&r| (r as usize) < n)
            .ok_or_else(|| {
                MpiError::new(Class::Rank, format!("invalid rank {rank} for the window"))
            })
    }

    fn flush_touched(&mut self, slot: usize) -> MpiResult<()> {
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
        let w = self.win(slot)?;
        let ranks: Vec<u32> = match rank {
            Some(r) => vec![self.check_rank(slot, r)?],
            None => (0..w.peers.len() as u32).collect(),
        };
        let w = self.win_mut(slot)?;
        if !(w.lock_all || ranks.iter().all(|r| w.locks.contains_key(r))) {
            return Err(sync_error("flushing outside a passive-target epoch"));
        }
        // Operations on mapped memory are complete; the others are
        // behind a flush notice.
        let sent: Vec<u32> = ranks.into_iter().filter(|r| w.touched.remove(r)).collect();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.control(slot, kind::FLUSH, 0, &sent)?;
        // Progress even when there was nothing to wait for: a process that
        // polls its own window with flushes (a spin lock over RMA) must
        // apply the operations others send it.
        self.poke();
        Ok(())
    }

    /// One turn of progress: the engine, the collectives, the windows.
    fn poke(&mut self) {
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

    // -----------------------------------------------------------------
    // The target and origin sides of the messages.

    /// Handle the messages that arrived for every window; whether any did.
    pub fn serve_windows(&mut self) -> bool {
        if self.wins.table.iter().next().is_none() {
            return false;
        }
        let slots: Vec<usize> = self.wins.table.iter().map(|(s, _)| s).collect();
        let mut did = false;
        for slot in slots {
            while let Some((from, request, data)) = self.window_message(slot) {
                did = true;
                let handled = if request {
                    self.serve_request(slot, from, &data)
                } else {
                    self.take_reply(slot, from, &data)
                };
                if let Err(e) = handled {
                    super::report(&format!(
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
    fn window_message(&mut self, slot: usize) -> Option<(u32, bool, Vec<u8>)> {
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
                super::report(&format!("a window message was lost: {e}"));
                Vec::new()
            }
        };
        Some((from? as u32, st.tag as u32 as i32 == TO_TARGET, data))
    }

    /// Finish the sends of window `slot` that completed.
    fn reap_sends(&mut self, slot: usize) {
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
    fn drain_sends(&mut self, slot: usize) -> MpiResult<()> {
        let sends = std::mem::take(&mut self.win_mut(slot)?.sends);
        for r in sends {
            self.ep.wait(r)?;
        }
        Ok(())
    }

    /// This process's memory at `off` (in the window, or an absolute
    /// address in a dynamic one) for `len` bytes, after checking that the
    /// window exposes it.
    fn local_range(&self, slot: usize, off: u64, len: u64) -> MpiResult<*mut u8> {
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

    fn serve_request(&mut self, slot: usize, from: u32, data: &[u8]) -> MpiResult<()> {
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
    fn apply_request(
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
                if kind == kind::GET_ACC {
                    let old = gather(&pieces);
                    self.reply(slot, from, id, &old)?;
                }
                apply(op, elem, src, &pieces);
                Ok(())
            }
            kind::CAS => {
                let origin = i.take(total)?.to_vec();
                let compare = i.take(total)?;
                let old = gather(&pieces);
                if old == compare {
                    apply(Op::Replace, Elem::Byte, &origin, &pieces);
                }
                self.reply(slot, from, id, &old)
            }
            _ => Err(MpiError::new(Class::Intern, "unknown window request")),
        }
    }

    /// Answer request `id` of `origin` with `data`.
    fn reply(&mut self, slot: usize, origin: u32, id: u64, data: &[u8]) -> MpiResult<()> {
        let mut o = Out::new(kind::REPLY, id);
        o.bytes(data);
        self.win_send(slot, origin, TO_ORIGIN, o)
    }

    fn take_reply(&mut self, slot: usize, from: u32, data: &[u8]) -> MpiResult<()> {
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

/// Write where memory lies in the shared heap (or that it does not).
fn put_ref(o: &mut Out, r: Option<&HeapRef>) {
    match r {
        Some(r) => {
            o.u64(1);
            o.u64(u64::from(r.pid));
            o.u64(u64::from(r.fd));
            o.u64(r.arena_len);
            o.u64(r.offset);
        }
        None => o.u64(0),
    }
}

fn take_ref(i: &mut In) -> MpiResult<Option<HeapRef>> {
    if i.u64()? == 0 {
        return Ok(None);
    }
    Ok(Some(HeapRef {
        pid: i.u64()? as u32,
        fd: i.u64()? as u32,
        arena_len: i.u64()?,
        offset: i.u64()?,
    }))
}

/// Memory for an allocated window, from the shared heap (at least one
/// byte, so that every window has an address).
fn alloc(size: usize) -> MpiResult<NonNull<u8>> {
    heap::alloc(size.max(1)).map_err(|e| {
        MpiError::new(
            Class::NoMem,
            format!("cannot allocate {size} bytes of window memory: {e}"),
        )
    })
}

/// The bytes of `pieces`, in order.
fn gather(pieces: &[(*mut u8, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pieces.iter().map(|p| p.1).sum());
    for &(p, len) in pieces {
        // SAFETY: checked window memory of this process (`local_range`).
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(p, len) });
    }
    out
}

/// Combine `src` (packed elements of kind `elem`) into `pieces` with
/// `op`.
fn apply(op: Op, elem: Elem, src: &[u8], pieces: &[(*mut u8, usize)]) {
    let f = kernel(op, elem);
    let mut at = 0;
    for &(p, len) in pieces {
        // SAFETY: checked window memory of this process (`local_range`),
        // which nothing else in this process reads or writes during the
        // call.
        let dst = unsafe { std::slice::from_raw_parts_mut(p, len) };
        let s = &src[at..at + len];
        match (op, f) {
            (Op::NoOp, _) => {}
            (Op::Replace, _) | (_, None) => dst.copy_from_slice(s),
            (_, Some(k)) => k(s, dst),
        }
        at += len;
    }
}
