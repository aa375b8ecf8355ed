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
//! target's participation; a flush then has nothing to wait for. So are
//! the accumulating operations, under the target's accumulate lock,
//! which the target also holds while it applies those that come as
//! messages: that lock gives them their atomicity (module `acc`). A shared
//! window is one block of rank 0's heap, contiguous across the ranks.
//!
//! # Progress
//! Operations by message need the target process to enter the library
//! now and then (MPI-4.1 §12.7 allows it): a target computing outside MPI
//! delays them, and a lock is granted by the target's library.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ptr::NonNull;

use shm_engine::heap::{self, HeapRef, PeerHeaps};

use super::attr::Attr;
use super::buffer::UserBuf;
use super::datatype::{Datatype, TypeRef};
use super::errh::Errhandler;
use super::info::Info;
use super::pool;
use super::progress::Poll;
use super::table::Table;
use super::{Class, Comm, MpiError, MpiResult, Runtime};
use crate::ops::{Elem, Op, kernel};

mod acc;
mod pieces;
mod sync;
mod target;
mod wire;

use acc::AccLock;
use pieces::{Pieces, apply, copy_out, with_bytes};
use wire::{In, Out, TO_TARGET, kind, put_ref, take_ref};

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
    /// That process's accumulate lock, mapped here (null if it is not).
    acc: *const AccLock,
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
    /// This process's accumulate lock, freed with the window.
    acc_lock: Option<NonNull<AccLock>>,
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
    pub dt: TypeRef,
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
            let node = self.ep.node();
            if members.iter().any(|&m| self.ep.node_of(m) != node) {
                return Err(MpiError::new(
                    Class::RmaShared,
                    "MPI_Win_allocate_shared needs processes of one node",
                ));
            }
        }
        let comm = self.comm_dup(parent)?;
        let made = self.win_memory(comm, flavor, base, size, disp_unit);
        let (peers, owned, acc_lock, base) = match made {
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
            acc_lock,
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
    /// exposes, the memory the library allocated, this process's
    /// accumulate lock, and this process's base.
    #[allow(clippy::type_complexity)]
    fn win_memory(
        &mut self,
        comm: usize,
        flavor: Flavor,
        base: *mut u8,
        size: usize,
        disp_unit: usize,
    ) -> MpiResult<(
        Vec<Exposed>,
        Option<NonNull<u8>>,
        Option<NonNull<AccLock>>,
        *mut u8,
    )> {
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
        // Without a lock (the heap is full), the accumulates to this
        // process come as messages, which it applies one at a time.
        let acc_lock = (flavor != Flavor::Dynamic)
            .then(AccLock::alloc)
            .and_then(Result::ok);
        let lock_place = acc_lock.and_then(|l| heap::locate(l.as_ptr().cast(), acc::BLOCK));
        let mut row = Out(Vec::new());
        row.u64(size as u64);
        row.u64(disp_unit as u64);
        put_ref(&mut row, place.as_ref());
        put_ref(&mut row, lock_place.as_ref());
        let rows = self.allgather_var(comm, &row.0)?;
        let node = self.ep.node();
        let mut peers = Vec::with_capacity(rows.len());
        for (r, bytes) in rows.iter().enumerate() {
            let mut i = In(bytes);
            let (size, disp_unit) = (i.u64()? as usize, i.u64()? as usize);
            let place = take_ref(&mut i)?;
            let lock_place = take_ref(&mut i)?;
            let local = self.ep.node_of(members[r]) == node;
            // A peer whose memory cannot be mapped here (the kernel
            // refuses) is reached by messages, as one on another node.
            let mut map = |place: Option<HeapRef>| match place {
                Some(p) if local => self.wins.heaps.resolve(&p).unwrap_or(std::ptr::null_mut()),
                _ => std::ptr::null_mut(),
            };
            let (base, acc) = if r == me {
                let own = acc_lock.map_or(std::ptr::null(), |l| l.as_ptr().cast_const());
                (mine, own)
            } else {
                (map(place), map(lock_place).cast_const().cast::<AccLock>())
            };
            peers.push(Exposed {
                size,
                disp_unit,
                base,
                acc,
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
        Ok((peers, owned, acc_lock, base))
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
        if let Some(l) = w.acc_lock {
            // SAFETY: after the barrier no process applies operations to
            // this window's memory any more.
            unsafe { AccLock::free(l) }?;
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
    fn target_pieces(&self, slot: usize, t: &Target) -> MpiResult<Pieces<(u64, u64)>> {
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
        let piece = |off: i64, len: usize| {
            let inside = w.flavor == Flavor::Dynamic
                || (off >= 0 && off as u64 + len as u64 <= peer.size as u64);
            if !inside {
                return Err(MpiError::new(
                    Class::RmaRange,
                    format!(
                        "the target range ends beyond the {} bytes rank {} exposes",
                        peer.size, t.rank
                    ),
                ));
            }
            Ok((off as u64, len as u64))
        };
        let total = t.dt.size * t.count;
        if total == 0 {
            return Ok(Pieces::none());
        }
        if t.dt.is_contiguous() {
            return Ok(Pieces::One([piece(start, total)?]));
        }
        let pieces = t.dt.pieces(std::ptr::null(), t.count);
        let pieces = pieces
            .iter()
            .map(|p| piece(start + p.ptr as isize as i64, p.len));
        Ok(Pieces::Many(pieces.collect::<MpiResult<_>>()?))
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

    /// Where `rank`'s window memory and accumulate lock are mapped in
    /// this process, if both are: then this process applies its
    /// accumulating operations to that rank itself (module `acc`). The
    /// target's `pieces` come back as addresses here.
    fn direct_acc(
        &self,
        slot: usize,
        rank: u32,
        pieces: &Pieces<(u64, u64)>,
    ) -> Option<(Pieces<(*mut u8, usize)>, &'static AccLock)> {
        let base = self.direct(slot, rank)?;
        let lock = self.win(slot).ok()?.peers.get(rank as usize)?.acc;
        // SAFETY: a lock mapped at creation stays mapped and allocated
        // until the window's collective free, which no operation on the
        // window outlives (MPI-4.1 §12.2.5).
        let lock = unsafe { lock.as_ref() }?;
        Some((mapped(base, pieces), lock))
    }

    /// `MPI_Put`: `data` (packed) into the target.
    pub fn win_put(&mut self, slot: usize, data: &[u8], t: &Target) -> MpiResult<()> {
        let pieces = self.target_pieces(slot, t)?;
        if let Some(base) = self.direct(slot, t.rank) {
            let mut at = 0;
            for &(off, len) in pieces.iter() {
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
            // SAFETY: the origin buffer is the application's to write until
            // the operation completes (MPI contract), which is now.
            with_bytes(&mapped(base, &pieces), |data| unsafe { into.unpack(data) });
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
        if let Some((mapped, lock)) = self.direct_acc(slot, t.rank, &pieces) {
            let Some(into) = fetch else {
                let _held = lock.hold();
                apply(op, elem, data, &mapped);
                return Ok(None);
            };
            // The former value is copied out before the combine and
            // unpacked after it, so a result buffer that is (erroneously)
            // the origin buffer still gets the former value and the
            // target the origin's.
            let total = pieces.iter().map(|p| p.1 as usize).sum::<usize>();
            let mut small = [0u8; FETCH_ON_STACK];
            let mut large = (total > FETCH_ON_STACK).then(|| pool::take(total));
            let old = match &mut large {
                Some(v) => &mut v[..],
                None => &mut small[..total],
            };
            {
                let _held = lock.hold();
                copy_out(&mapped, old);
                apply(op, elem, data, &mapped);
            }
            // SAFETY: the result buffer is the application's to write
            // until the operation completes (MPI contract), which is now.
            unsafe { into.unpack(old) };
            if let Some(v) = large {
                pool::give(v);
            }
            return Ok(None);
        }
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
    /// into `result`, at once on a mapped target, else when the reply
    /// comes: the id of the reply (a request waits for it). `origin` and
    /// `compare` are copies, which writing `result` cannot change.
    pub fn win_cas(
        &mut self,
        slot: usize,
        origin: &[u8],
        compare: &[u8],
        result: UserBuf,
        t: &Target,
    ) -> MpiResult<Option<u64>> {
        let pieces = self.target_pieces(slot, t)?;
        if let Some((mapped, lock)) = self.direct_acc(slot, t.rank, &pieces) {
            let _held = lock.hold();
            let equal = with_bytes(&mapped, |old| {
                let equal = old == compare;
                // SAFETY: as for a get-accumulate's result; `origin` and
                // `compare` are the caller's copies.
                unsafe { result.unpack(old) };
                equal
            });
            if equal {
                apply(Op::Replace, Elem::Byte, origin, &mapped);
            }
            return Ok(None);
        }
        let id = self.new_id(slot, Some(result))?;
        let mut o = Self::op_message(kind::CAS, id, &pieces);
        o.bytes(origin);
        o.bytes(compare);
        self.win_send(slot, t.rank, TO_TARGET, o)?;
        self.win_mut(slot)?.touched.insert(t.rank);
        Ok(Some(id))
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
}

/// The largest former value a fetching accumulate on mapped memory
/// stages on the stack (every predefined element is at most 32 bytes);
/// larger ones go through a buffer of the pool.
const FETCH_ON_STACK: usize = 64;

/// The target's `pieces` as addresses in its memory mapped at `base`.
fn mapped(base: *mut u8, pieces: &Pieces<(u64, u64)>) -> Pieces<(*mut u8, usize)> {
    pieces.map(|&(off, len)| (base.wrapping_add(off as usize), len as usize))
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
