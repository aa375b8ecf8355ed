//! Communicators (MPI-4.0 chapter 7): members, context ids, and what is
//! attached to them (name, error handler, info hints, attributes,
//! topology); the collective operations that create them.
//!
//! Context ids: a communicator owns an even id for point-to-point traffic
//! and the next one for its collectives. A new communicator's id is the
//! largest "next free id" among the processes that create it, so ids stay
//! unique at every process; communicators with disjoint members (the parts
//! of a split) may share an id, which is harmless since messages match on
//! their sender too.
//!
//! Duplicates need no agreement: an agreed id comes with the block of ids
//! after it ([`ChildIds`], [`BLOCK`] in all), which every member reserves
//! when it takes the id, and the k-th duplicate of a communicator (dup or
//! idup: all members duplicate in the same order) takes the block's k-th
//! id. `MPI_Comm_idup` is therefore done at once, whatever the other
//! members are doing. A duplicate has no block of its own; it and a
//! communicator whose block is used up duplicate by agreement: a
//! nonblocking allreduce of the next free ids (`coll::ctx_agreement`),
//! whose end gives the new communicator its id. While one such agreement
//! is in flight at a process, its next free id is promised, so any other
//! creation there first waits for the agreement to end (progressing it).
//! That wait can deadlock only a program in which some member starts the
//! duplication after something this process does after its next
//! creation; a duplicate from a reserved block never waits.

use std::collections::HashMap;

use shm_engine::{Source, TagMatch};

use super::Class;
use super::attr::Attr;
use super::errh::Errhandler;
use super::info::Info;
use super::topo::Topology;
use super::{MpiError, MpiResult, Runtime, SELF};

/// Tag of the exchange in `MPI_Comm_split`, on the parent's collective
/// context (the collectives of `coll` use small tags).
const SPLIT: i32 = 0x4000_0000;

/// Tag of the exchange in [`Runtime::comm_split_node`].
const SPLIT_NODE: u32 = 0x4000_0002;

/// Tag of [`Runtime::allgather_var`], on the parent's collective context.
const EXCHANGE: u32 = 0x4000_0001;

/// The context id of a communicator whose agreement is in flight
/// (`MPI_Comm_idup`): no communicator uses it, and using the new
/// communicator before the request completes is erroneous.
const PENDING_CTX: u32 = u32::MAX - 1;

/// Bit set on the application's tag for the context agreement of
/// `MPI_Comm_create_group` (application tags are non-negative).
const CREATE_GROUP: u32 = 0x8000_0000;

/// How many duplicates of a communicator take reserved ids.
pub const CHILD_IDS: u32 = 32;

/// The ids an agreed context id stands for: its own pair and the pairs of
/// its [`CHILD_IDS`] duplicates.
pub const BLOCK: u32 = 2 + 2 * CHILD_IDS;

/// The reserved ids for a communicator's duplicates not yet handed out.
#[derive(Clone, Copy, Debug)]
pub struct ChildIds {
    next: u32,
    end: u32,
}

impl ChildIds {
    /// The block after agreed id `ctx` (none for the ids outside the
    /// agreed range: bootstrap contexts and pending ones).
    fn after(ctx: u32) -> Option<Self> {
        (ctx < super::session::BOOT_CTX_BASE).then_some(Self {
            next: ctx + 2,
            end: ctx + BLOCK,
        })
    }

    /// The next id of the block, if any is left.
    fn take(&mut self) -> Option<u32> {
        (self.next < self.end).then(|| {
            self.next += 2;
            self.next - 2
        })
    }
}

/// A communicator: who is in it, in rank order, and its context ids.
#[derive(Debug)]
pub struct Comm {
    /// Job rank (engine process id) of each member.
    pub members: Vec<u32>,
    /// Member index of each job rank in the communicator.
    pub rank_of: HashMap<u32, i32>,
    /// This process's rank in the communicator.
    pub rank: i32,
    /// Even context id: point-to-point; `ctx + 1`: collectives.
    pub ctx: u32,
    pub errhandler: Errhandler,
    /// Set by `MPI_Comm_set_name` (MPI-4.0 §7.8).
    pub name: Option<String>,
    /// Info hints given at creation or by `MPI_Comm_set_info`.
    pub info: Info,
    /// Cached attributes, in the order they were first set.
    pub attrs: Vec<Attr>,
    pub topo: Option<Topology>,
    /// Collective calls made on this communicator so far: every member
    /// numbers them alike (the engine tag of a collective carries it).
    pub coll_seq: u32,
    /// The session it derives from (slot), if not the world model's.
    pub session: Option<usize>,
    /// Its buffer for buffered sends (`MPI_Comm_attach_buffer`).
    pub bsend: Option<super::bsend::Attached>,
    /// The remote group of an intercommunicator (MPI-4.1 §7.6); `None`
    /// for an intracommunicator.
    pub remote: Option<Remote>,
    /// The ids left for its duplicates.
    pub children: Option<ChildIds>,
    /// Its flag boards for collectives within the node: `None` until its
    /// first collective decides (`crate::coll::builder`).
    pub board: Option<crate::coll::board::Boards>,
}

/// The remote group of an intercommunicator: point-to-point ranks name
/// its members, and collectives move data between it and the local group
/// (`members`).
#[derive(Clone, Debug)]
pub struct Remote {
    /// Job rank of each member, in remote rank order.
    pub members: Vec<u32>,
    /// Remote rank of each job rank.
    pub rank_of: HashMap<u32, i32>,
}

impl Remote {
    pub fn new(members: Vec<u32>) -> Self {
        let rank_of = index(&members);
        Self { members, rank_of }
    }
}

/// The index of each job rank in `members`.
fn index(members: &[u32]) -> HashMap<u32, i32> {
    members
        .iter()
        .enumerate()
        .map(|(i, &w)| (w, i as i32))
        .collect()
}

impl Comm {
    /// A communicator of `members`, among which is `me`.
    pub fn new(members: Vec<u32>, me: u32, ctx: u32) -> Self {
        let rank_of = index(&members);
        Self {
            rank: rank_of[&me],
            members,
            rank_of,
            ctx,
            errhandler: Errhandler::Fatal,
            name: None,
            info: Info::default(),
            attrs: Vec::new(),
            topo: None,
            coll_seq: 0,
            session: None,
            bsend: None,
            remote: None,
            children: ChildIds::after(ctx),
            board: None,
        }
    }

    /// The size of the local group.
    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// The processes point-to-point ranks name: the remote group of an
    /// intercommunicator, the members of an intracommunicator.
    pub fn peers(&self) -> &[u32] {
        self.remote.as_ref().map_or(&self.members, |r| &r.members)
    }

    /// The point-to-point rank of job rank `pid` (a rank in the remote
    /// group of an intercommunicator).
    pub fn peer_rank(&self, pid: u32) -> Option<i32> {
        let (members, map) = match &self.remote {
            Some(r) => (&r.members, &r.rank_of),
            None => (&self.members, &self.rank_of),
        };
        // Ranks equal job ranks in the world and its duplicates: no hash
        // (every receive completes through here).
        if members.get(pid as usize) == Some(&pid) {
            return Some(pid as i32);
        }
        map.get(&pid).copied()
    }

    /// Every process of the communicator, the local group first, then
    /// the remote one: the address book of its collectives.
    pub fn everyone(&self) -> Vec<u32> {
        let mut all = self.members.clone();
        if let Some(r) = &self.remote {
            all.extend_from_slice(&r.members);
        }
        all
    }

    /// The engine tag of MPI tag `tag` (>= 0) in context `ctx`.
    pub fn tag(ctx: u32, tag: i32) -> u64 {
        u64::from(ctx) << 32 | u64::from(tag as u32)
    }
}

pub(super) fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl Runtime {
    /// Store a new communicator; returns its slot. Slots are not reused:
    /// a request still pending on a freed communicator (MPI-4.0 §7.4.3
    /// lets it complete) must never find another communicator there.
    pub fn add_comm(&mut self, c: Comm) -> usize {
        self.comms.push(Some(c));
        self.comms.len() - 1
    }

    /// Store `c` in predefined communicator slot `slot` (`WORLD`, `SELF`),
    /// or in a new slot.
    pub fn place_comm(&mut self, c: Comm, slot: Option<usize>) -> usize {
        match slot {
            Some(s) => {
                self.comms[s] = Some(c);
                s
            }
            None => self.add_comm(c),
        }
    }

    /// A communicator of `members` (which include this process) with
    /// context `ctx`, inheriting `parent`'s error handler (MPI-4.0 §9.3).
    pub(super) fn derive(
        &mut self,
        parent: usize,
        members: Vec<u32>,
        ctx: u32,
    ) -> MpiResult<usize> {
        let p = self.comm(parent)?;
        let (errhandler, session) = (p.errhandler, p.session);
        let mut c = Comm::new(members, self.ep.rank(), ctx);
        c.errhandler = errhandler;
        c.session = session;
        Ok(self.add_comm(c))
    }

    /// Collective over `parent`: a new communicator with the same groups,
    /// topology and info hints, and fresh context ids (MPI-4.1 §7.4.2;
    /// attributes are the entry layer's business, since copying them
    /// calls the application).
    pub fn comm_dup(&mut self, parent: usize) -> MpiResult<usize> {
        let (slot, agreement) = self.comm_idup(parent)?;
        if let Some(s) = agreement {
            self.wait_coll(Box::new(s))?;
        }
        Ok(slot)
    }

    /// `MPI_Comm_idup`: the new communicator at once, with the next
    /// reserved id of `parent` or, when there is none, with its id to come
    /// from the returned agreement, a collective schedule that sets it
    /// when it ends (see the module docs).
    pub fn comm_idup(
        &mut self,
        parent: usize,
    ) -> MpiResult<(usize, Option<crate::coll::Schedule>)> {
        let reserved = self
            .comm_mut(parent)?
            .children
            .as_mut()
            .and_then(ChildIds::take);
        let next = match reserved {
            Some(_) => self.next_ctx,
            None => self.free_ctx()?,
        };
        let p = self.comm(parent)?;
        let (members, remote) = (p.members.clone(), p.remote.clone());
        let (topo, info) = (p.topo.clone(), p.info.clone());
        let slot = self.derive(parent, members, reserved.unwrap_or(PENDING_CTX))?;
        let c = self.comm_mut(slot)?;
        (c.remote, c.topo, c.info) = (remote, topo, info);
        c.children = None;
        if reserved.is_some() {
            return Ok((slot, None));
        }
        let agreement = crate::coll::ctx_agreement(self, parent, next, slot)?;
        self.agreements += 1;
        Ok((slot, Some(agreement)))
    }

    /// The end of schedule `s`, if it is a context-id agreement that just
    /// ended: its communicator takes the agreed id.
    pub(super) fn settle_agreement(&mut self, s: &mut crate::coll::Schedule) {
        let Some((slot, agreed)) = s.take_activation() else {
            return;
        };
        self.agreements -= 1;
        let taken = agreed.and_then(|ctx| self.take_ctx(ctx));
        match taken {
            Ok(ctx) => {
                // The application may have freed it meanwhile (erroneous).
                if let Ok(c) = self.comm_mut(slot) {
                    c.ctx = ctx;
                    c.children = ChildIds::after(ctx);
                }
            }
            Err(e) => s.record_error(e),
        }
    }

    /// This process's next free context id, once every agreement in
    /// flight has ended (progressing them meanwhile).
    pub(super) fn free_ctx(&mut self) -> MpiResult<u32> {
        if self.agreements > 0 {
            self.wait_until(|rt| {
                Ok(if rt.agreements == 0 {
                    super::progress::Poll::Ready(())
                } else {
                    super::progress::Poll::Idle
                })
            })?;
        }
        Ok(self.next_ctx)
    }

    /// The smallest context id free at every member of `parent`.
    pub fn agree_ctx(&mut self, parent: usize) -> MpiResult<u32> {
        let mut buf = self.free_ctx()?.to_ne_bytes();
        crate::coll::allreduce_max_u32(self, parent, &mut buf)?;
        self.take_ctx(u32::from_ne_bytes(buf))
    }

    /// Use `ctx` (agreed, at least this process's next free id) and the
    /// block of its duplicates' ids.
    pub(super) fn take_ctx(&mut self, ctx: u32) -> MpiResult<u32> {
        // Ids from `BOOT_CTX_BASE` on are the sessions' agreement contexts.
        if ctx >= super::session::BOOT_CTX_BASE - BLOCK {
            return Err(MpiError::new(Class::Intern, "context ids exhausted"));
        }
        self.next_ctx = ctx + BLOCK;
        Ok(ctx)
    }

    pub fn comm_free(&mut self, slot: usize) -> MpiResult<()> {
        if slot <= SELF {
            return Err(MpiError::new(
                Class::Comm,
                "predefined communicators cannot be freed",
            ));
        }
        self.comm(slot)?;
        // Freeing detaches the buffer, waiting for its messages (MPI-4.1
        // §3.6.1); the application learns nothing of it.
        self.detach_buffer(super::bsend::Scope::Comm(slot))?;
        self.comms[slot] = None;
        Ok(())
    }

    /// Every member's `mine` (all of one length), in rank order: a ring
    /// over `members` (where this process is `members[me]`) with `tag` on
    /// collective context `ctx`.
    pub(super) fn allgather_among(
        &mut self,
        members: &[u32],
        me: usize,
        ctx: u32,
        tag: u32,
        mine: &[u8],
    ) -> MpiResult<Vec<u8>> {
        let (n, len) = (members.len(), mine.len());
        let mut all = vec![0u8; n * len];
        all[me * len..(me + 1) * len].copy_from_slice(mine);
        let engine_tag = u64::from(ctx) << 32 | u64::from(tag);
        let (right, left) = (members[(me + 1) % n], members[(me + n - 1) % n]);
        for step in 0..n.saturating_sub(1) {
            let send_block = (me + n - step) % n;
            let recv_block = (me + n - step - 1) % n;
            let out = &all[send_block * len..(send_block + 1) * len];
            let incoming = self.sendrecv_bytes(right, left, engine_tag, out, len)?;
            all[recv_block * len..(recv_block + 1) * len].copy_from_slice(&incoming);
        }
        Ok(all)
    }

    /// Send `out` to job rank `to` and receive `len` bytes from job rank
    /// `from` with engine tag `tag`, the receive posted first, so that
    /// processes trading with each other never all wait in their sends.
    pub(super) fn sendrecv_bytes(
        &mut self,
        to: u32,
        from: u32,
        tag: u64,
        out: &[u8],
        len: usize,
    ) -> MpiResult<Vec<u8>> {
        let mut inb = vec![0u8; len];
        // SAFETY: `inb` outlives the request, waited for below.
        let r = unsafe {
            self.ep.irecv_raw(
                Source::Rank(from),
                TagMatch::exact(tag),
                inb.as_mut_ptr(),
                len,
            )?
        };
        if let Err(e) = self.ep.send(to, tag, out) {
            // The engine cannot cancel the posted receive, which may still
            // land in `inb`: keep that memory alive.
            std::mem::forget(inb);
            return Err(e.into());
        }
        self.ep.wait(r)?;
        Ok(inb)
    }

    /// Collective over `comm`: every member's `mine` (of any length), in
    /// rank order.
    pub fn allgather_var(&mut self, comm: usize, mine: &[u8]) -> MpiResult<Vec<Vec<u8>>> {
        let c = self.comm(comm)?;
        let (members, me, ctx) = (c.members.clone(), c.rank as usize, c.ctx + 1);
        let lens = self.allgather_among(
            &members,
            me,
            ctx,
            EXCHANGE,
            &(mine.len() as u32).to_ne_bytes(),
        )?;
        let lens: Vec<usize> = (0..members.len())
            .map(|i| u32_at(&lens, 4 * i) as usize)
            .collect();
        let width = lens.iter().copied().max().unwrap_or(0);
        let mut padded = mine.to_vec();
        padded.resize(width, 0);
        let all = self.allgather_among(&members, me, ctx, EXCHANGE, &padded)?;
        Ok(lens
            .iter()
            .enumerate()
            .map(|(i, &n)| all[i * width..i * width + n].to_vec())
            .collect())
    }

    /// `MPI_Comm_split` (MPI-4.0 §7.4.2): collective over `parent`; the
    /// members of this process's `color` ordered by `(key, parent rank)`;
    /// `None` where `color` is `None` (`MPI_UNDEFINED`).
    pub fn comm_split(
        &mut self,
        parent: usize,
        color: Option<u32>,
        key: i32,
    ) -> MpiResult<Option<usize>> {
        let p = self.comm(parent)?;
        if p.is_inter() {
            return self.intercomm_split(parent, color, key);
        }
        let (members, me, ctx) = (p.members.clone(), p.rank as usize, p.ctx + 1);
        // On the wire, no colour is a value no colour (an `int` >= 0) has.
        let wire = color.unwrap_or(u32::MAX);
        let next = self.free_ctx()?;
        let mine: Vec<u8> = [wire, key as u32, self.ep.rank(), next]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let all = self.allgather_among(&members, me, ctx, SPLIT as u32, &mine)?;
        let rows: Vec<[u32; 4]> = all
            .chunks_exact(16)
            .map(|b| [u32_at(b, 0), u32_at(b, 4), u32_at(b, 8), u32_at(b, 12)])
            .collect();
        let agreed = rows.iter().map(|r| r[3]).max().unwrap_or(next);
        let new_ctx = self.take_ctx(agreed)?;
        if color.is_none() {
            return Ok(None);
        }
        let mut mates: Vec<(i32, usize, u32)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r[0] == wire)
            .map(|(i, r)| (r[1] as i32, i, r[2]))
            .collect();
        mates.sort_unstable();
        let members = mates.into_iter().map(|(_, _, pid)| pid).collect();
        self.derive(parent, members, new_ctx).map(Some)
    }

    /// `MPI_Comm_split_type` within nodes (MPI-4.0 §7.4.2): the members
    /// of `parent` on this process's node (the bootstrap's node map names
    /// them) that pass the same `color`, ordered by `(key, parent rank)`;
    /// `None` where `color` is `None`. Collective over those members only,
    /// so no message leaves the node.
    pub fn comm_split_node(
        &mut self,
        parent: usize,
        key: i32,
        color: Option<u32>,
    ) -> MpiResult<Option<usize>> {
        let node = self.ep.node();
        let me = self.ep.rank();
        let p = self.intra(parent)?;
        let (all, ctx) = (p.members.clone(), p.ctx + 1);
        let ep = &self.ep;
        let local: Vec<u32> = all
            .into_iter()
            .filter(|&pid| ep.node_of(pid) == node)
            .collect();
        let idx = local
            .iter()
            .position(|&p| p == me)
            .ok_or_else(|| MpiError::new(Class::Intern, "this process is not on its own node"))?;
        let take_part = u32::from(color.is_some());
        let next = self.free_ctx()?;
        let mine: Vec<u8> = [take_part, key as u32, next, color.unwrap_or(0)]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let rows = self.allgather_among(&local, idx, ctx, SPLIT_NODE, &mine)?;
        let rows: Vec<[u32; 4]> = rows
            .chunks_exact(16)
            .map(|b| [u32_at(b, 0), u32_at(b, 4), u32_at(b, 8), u32_at(b, 12)])
            .collect();
        let agreed = rows.iter().map(|r| r[2]).max().unwrap_or(next);
        let new_ctx = self.take_ctx(agreed)?;
        let Some(color) = color else {
            return Ok(None);
        };
        let mut mates: Vec<(i32, usize, u32)> = rows
            .iter()
            .zip(&local)
            .enumerate()
            .filter(|(_, (r, _))| r[0] != 0 && r[3] == color)
            .map(|(i, (r, &pid))| (r[1] as i32, i, pid))
            .collect();
        mates.sort_unstable();
        let members = mates.into_iter().map(|(_, _, pid)| pid).collect();
        self.derive(parent, members, new_ctx).map(Some)
    }

    /// Collective over `parent`: a communicator of `members` (a subset of
    /// the parent) if this process is among them, `None` otherwise
    /// (`MPI_Comm_create`, topology constructors). Processes in the new
    /// communicator pass the same `members`.
    pub fn comm_create(&mut self, parent: usize, members: Vec<u32>) -> MpiResult<Option<usize>> {
        if self.comm(parent)?.is_inter() {
            return self.intercomm_subset(parent, members);
        }
        let ctx = self.agree_ctx(parent)?;
        if !members.contains(&self.ep.rank()) {
            return Ok(None);
        }
        self.derive(parent, members, ctx).map(Some)
    }

    /// `MPI_Comm_create_group` (MPI-4.0 §7.4.2): collective over `members`
    /// only (a subset of `parent` that includes this process), which
    /// agree on a context id among themselves with `tag`.
    pub fn comm_create_group(
        &mut self,
        parent: usize,
        members: Vec<u32>,
        tag: i32,
    ) -> MpiResult<usize> {
        let me = self.ep.rank();
        let idx = members
            .iter()
            .position(|&p| p == me)
            .ok_or_else(|| MpiError::new(Class::Group, "the caller is not in the group"))?;
        let ctx = self.intra(parent)?.ctx + 1;
        let next = self.free_ctx()?;
        let all = self.allgather_among(
            &members,
            idx,
            ctx,
            CREATE_GROUP | tag as u32,
            &next.to_ne_bytes(),
        )?;
        let agreed = (0..members.len())
            .map(|i| u32_at(&all, 4 * i))
            .max()
            .unwrap_or(next);
        let ctx = self.take_ctx(agreed)?;
        self.derive(parent, members, ctx)
    }
}
