//! Intercommunicators (MPI-4.1 §7.6): two disjoint groups, where
//! point-to-point ranks name the other group ([`Comm::peers`]) and
//! collectives move data between the groups (`crate::coll::inter`).
//!
//! Context ids: both groups use the same ids, agreed as for
//! intracommunicators, as the largest "next free id" of every process of
//! both groups. Once an intercommunicator exists, both groups agree over
//! *the union*: its members in an order both groups compute alike (the
//! group holding the lower job rank of the two rank 0s first), with a
//! ring over the union on the intercommunicator's collective context.
//! `MPI_Intercomm_create` has no union yet: each group agrees inside its
//! local communicator, the two leaders trade their results and member
//! lists over the peer communicator, and each leader passes the outcome
//! to its group. `MPI_Intercomm_create_from_groups` knows both groups, so
//! its processes agree over the union directly, on a bootstrap context
//! derived from the string tag (as `MPI_Comm_create_from_group` does,
//! see [`super::session`]).

use shm_engine::{Source, TagMatch};

use super::comm::{Remote, u32_at};
use super::errh::Errhandler;
use super::group::Group;
use super::peer::Rank;
use super::session::boot_ctx;
use super::{Class, Comm, MpiError, MpiResult, Runtime};

/// Tag of the agreements over an intercommunicator's union, on its
/// collective context (see `comm` for the other tags there).
const UNION: u32 = 0x4000_0003;

/// Tag of the agreement inside the local communicator of
/// `MPI_Intercomm_create`, on its collective context.
const CREATE_LOCAL: u32 = 0x4000_0004;

/// Tag of the leaders' exchange in `MPI_Intercomm_create`, on the peer
/// communicator's collective context: these bits plus the low bits of the
/// application's tag, so that creations with different tags between the
/// same leaders do not mix.
const CREATE_PEER: u32 = 0x5000_0000;
const CREATE_PEER_TAG_MASK: u32 = 0x0fff_ffff;

/// Tag of the leader's broadcast in `MPI_Intercomm_create`, on the local
/// communicator's collective context.
const CREATE_BCAST: u32 = 0x4000_0005;

/// Native-endian bytes of `vals`.
fn bytes(vals: &[u32]) -> Vec<u8> {
    vals.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// The `u32`s of `b`.
fn words(b: &[u8]) -> Vec<u32> {
    (0..b.len() / 4).map(|i| u32_at(b, 4 * i)).collect()
}

/// One process's row of a union agreement: its values, and whether it is
/// in the caller's local group.
struct Row {
    vals: Vec<u32>,
    local: bool,
}

impl Comm {
    /// Both groups in the order both compute alike, and this process's
    /// index there.
    fn union(&self) -> (Vec<u32>, usize) {
        let remote = self.peers();
        let local_first = self.members[0] < remote[0];
        let (first, second) = if local_first {
            (self.members.as_slice(), remote)
        } else {
            (remote, self.members.as_slice())
        };
        let mut all = first.to_vec();
        all.extend_from_slice(second);
        let me = self.rank as usize + if local_first { 0 } else { remote.len() };
        (all, me)
    }
}

impl Runtime {
    /// Communicator `slot`, which must be an intracommunicator.
    pub fn intra(&self, slot: usize) -> MpiResult<&Comm> {
        let c = self.comm(slot)?;
        if c.is_inter() {
            return Err(MpiError::new(
                Class::Comm,
                "this call needs an intracommunicator",
            ));
        }
        Ok(c)
    }

    /// Collective over both groups of intercommunicator `slot`: every
    /// process's `vals` (all of one length, with this process's next free
    /// context id appended), in union order; returns the rows and the
    /// agreed context id (taken).
    fn union_agree(&mut self, slot: usize, vals: &[u32]) -> MpiResult<(Vec<Row>, u32)> {
        let next = self.free_ctx()?;
        let c = self.comm(slot)?;
        let (all, me) = c.union();
        let ctx = c.ctx + 1;
        let local: Vec<bool> = all.iter().map(|p| c.rank_of.contains_key(p)).collect();
        let mut mine = vals.to_vec();
        mine.push(next);
        let table = self.allgather_among(&all, me, ctx, UNION, &bytes(&mine))?;
        let rows: Vec<Row> = table
            .chunks_exact(4 * mine.len())
            .zip(local)
            .map(|(b, local)| Row {
                vals: words(b),
                local,
            })
            .collect();
        let agreed = rows.iter().map(|r| r.vals[vals.len()]).max();
        let ctx = self.take_ctx(agreed.unwrap_or(next))?;
        Ok((rows, ctx))
    }

    /// An intercommunicator of `local` and `remote` (job ranks) with
    /// context `ctx`, derived from `parent` (its error handler and
    /// session).
    fn derive_inter(
        &mut self,
        parent: usize,
        local: Vec<u32>,
        remote: Vec<u32>,
        ctx: u32,
    ) -> MpiResult<usize> {
        let slot = self.derive(parent, local, ctx)?;
        self.comm_mut(slot)?.remote = Some(Remote::new(remote));
        Ok(slot)
    }

    /// `MPI_Comm_split` of intercommunicator `parent` (MPI-4.1 §7.4.2):
    /// the processes of each group with this process's colour, ordered by
    /// `(key, rank)`; `None` for no colour or when the other group has
    /// no process of that colour.
    pub(super) fn intercomm_split(
        &mut self,
        parent: usize,
        color: Option<u32>,
        key: i32,
    ) -> MpiResult<Option<usize>> {
        let wire = color.unwrap_or(u32::MAX);
        let me = self.ep.rank();
        let (rows, ctx) = self.union_agree(parent, &[wire, key as u32, me])?;
        if color.is_none() {
            return Ok(None);
        }
        let side = |local: bool| {
            let mut mates: Vec<(i32, usize, u32)> = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.local == local && r.vals[0] == wire)
                .map(|(i, r)| (r.vals[1] as i32, i, r.vals[2]))
                .collect();
            mates.sort_unstable();
            mates
                .into_iter()
                .map(|(_, _, pid)| pid)
                .collect::<Vec<u32>>()
        };
        let (local, remote) = (side(true), side(false));
        if remote.is_empty() {
            return Ok(None);
        }
        self.derive_inter(parent, local, remote, ctx).map(Some)
    }

    /// `MPI_Comm_create` on intercommunicator `parent` (MPI-4.1 §7.4.2):
    /// `members` (of the local group, in their new order, alike at every
    /// local process) against what the other group chose; `None` where
    /// this process is left out or either choice is empty.
    pub(super) fn intercomm_subset(
        &mut self,
        parent: usize,
        members: Vec<u32>,
    ) -> MpiResult<Option<usize>> {
        let me = self.ep.rank();
        let place = members
            .iter()
            .position(|&p| p == me)
            .map_or(u32::MAX, |i| i as u32);
        let (rows, ctx) = self.union_agree(parent, &[place, me])?;
        let mut remote: Vec<(u32, u32)> = rows
            .iter()
            .filter(|r| !r.local && r.vals[0] != u32::MAX)
            .map(|r| (r.vals[0], r.vals[1]))
            .collect();
        remote.sort_unstable();
        if place == u32::MAX || remote.is_empty() {
            return Ok(None);
        }
        let remote = remote.into_iter().map(|(_, pid)| pid).collect();
        self.derive_inter(parent, members, remote, ctx).map(Some)
    }

    /// `MPI_Intercomm_merge` (MPI-4.1 §7.6.2): an intracommunicator of
    /// both groups, the group that passed `high` false first (the union's
    /// first group when both passed the same).
    pub fn intercomm_merge(&mut self, inter: usize, high: bool) -> MpiResult<usize> {
        let c = self.comm(inter)?;
        if !c.is_inter() {
            return Err(MpiError::new(
                Class::Comm,
                "MPI_Intercomm_merge needs an intercommunicator",
            ));
        }
        let (local, remote) = (c.members.clone(), c.peers().to_vec());
        let (rows, ctx) = self.union_agree(inter, &[u32::from(high)])?;
        let their_high = rows.iter().find(|r| !r.local).map(|r| r.vals[0] != 0);
        let local_in_first = rows[0].local;
        let local_first = match their_high {
            Some(h) if h != high => !high,
            _ => local_in_first,
        };
        let members = if local_first {
            [local, remote].concat()
        } else {
            [remote, local].concat()
        };
        self.derive(inter, members, ctx)
    }

    /// `MPI_Intercomm_create` (MPI-4.1 §7.6.2): collective over
    /// intracommunicator `local` (both groups call it); `remote_leader`
    /// (a rank of `peer`) and `tag` matter at the local leader only.
    pub fn intercomm_create(
        &mut self,
        local: usize,
        local_leader: i32,
        peer: usize,
        remote_leader: i32,
        tag: i32,
    ) -> MpiResult<usize> {
        self.intercomm_via(local, local_leader, |rt, members, local_max| {
            let p = rt.comm(peer)?;
            p.check_rank(Rank::Proc(remote_leader), "remote leader", false)?;
            super::peer::check_tag(super::peer::Tag::Value(tag), false)?;
            let other = p.peers()[remote_leader as usize];
            let engine_tag = Comm::tag(
                p.ctx + 1,
                (CREATE_PEER | tag as u32 & CREATE_PEER_TAG_MASK) as i32,
            );
            rt.leaders_trade(members, local_max, other, engine_tag)
        })
    }

    /// Collective over intracommunicator `local`: an intercommunicator
    /// with another group, whose leader the local leader (rank
    /// `local_leader`) reaches through `trade` (called there only, with
    /// the group's members and largest next free context id, and
    /// returning the agreed id and the remote members, as
    /// [`Runtime::leaders_trade`] does). `MPI_Intercomm_create`, spawning,
    /// ports and `MPI_Comm_join` differ only in how the leaders meet.
    pub(super) fn intercomm_via(
        &mut self,
        local: usize,
        local_leader: i32,
        trade: impl FnOnce(&mut Self, &[u32], u32) -> MpiResult<(u32, Vec<u32>)>,
    ) -> MpiResult<usize> {
        let l = self.intra(local)?;
        let (members, me, ctx) = (l.members.clone(), l.rank as usize, l.ctx + 1);
        let leader = usize::try_from(local_leader)
            .ok()
            .filter(|&r| r < members.len())
            .ok_or_else(|| {
                MpiError::new(Class::Rank, format!("invalid local leader {local_leader}"))
            })?;
        let next = self.free_ctx()?;
        let all = self.allgather_among(&members, me, ctx, CREATE_LOCAL, &next.to_ne_bytes())?;
        let local_max = words(&all).into_iter().max().unwrap_or(next);
        // A leader that fails tells its group with an empty outcome, so
        // that nobody waits for it.
        let (outcome, failed) = if me == leader {
            match trade(self, &members, local_max) {
                Ok((agreed, remote)) => (Some(bytes(&[&[agreed][..], &remote].concat())), None),
                Err(e) => (Some(Vec::new()), Some(e)),
            }
        } else {
            (None, None)
        };
        let outcome = words(&self.bcast_among(&members, me, leader, ctx, outcome)?);
        if let Some(e) = failed {
            return Err(e);
        }
        let (agreed, remote) = outcome.split_first().ok_or_else(|| {
            MpiError::new(
                Class::Comm,
                "the local leader could not create the intercommunicator",
            )
        })?;
        let ctx = self.take_ctx(*agreed)?;
        // The other group may be processes this one has not met before
        // (spawned, or connected through a port).
        self.ep.admit(remote.iter().copied());
        self.derive_inter(local, members, remote.to_vec(), ctx)
    }

    /// The local leader's half of creating an intercommunicator: trade
    /// the group's members and largest next free context id with the
    /// remote leader, process `other`, on engine tag `engine_tag`; the
    /// agreed id and the remote members.
    pub(super) fn leaders_trade(
        &mut self,
        members: &[u32],
        local_max: u32,
        other: u32,
        engine_tag: u64,
    ) -> MpiResult<(u32, Vec<u32>)> {
        let head = self.sendrecv_bytes(
            other,
            other,
            engine_tag,
            &bytes(&[local_max, members.len() as u32]),
            8,
        )?;
        let head = words(&head);
        let body = self.sendrecv_bytes(
            other,
            other,
            engine_tag,
            &bytes(members),
            4 * head[1] as usize,
        )?;
        Ok((local_max.max(head[0]), words(&body)))
    }

    /// Collective over `members` (this process is `members[me]`): the
    /// bytes `data` of `members[root]` (`Some` there), sent with a length
    /// first, on collective context `ctx`.
    pub(super) fn bcast_among(
        &mut self,
        members: &[u32],
        me: usize,
        root: usize,
        ctx: u32,
        data: Option<Vec<u8>>,
    ) -> MpiResult<Vec<u8>> {
        let tag = u64::from(ctx) << 32 | u64::from(CREATE_BCAST);
        if me == root {
            let data = data.unwrap_or_default();
            let len = (data.len() as u32).to_ne_bytes();
            for (_, &to) in members.iter().enumerate().filter(|&(i, _)| i != root) {
                self.ep.send(to, tag, &len)?;
                self.ep.send(to, tag, &data)?;
            }
            return Ok(data);
        }
        let from = members[root];
        let mut len = [0u8; 4];
        self.ep
            .recv(Source::Rank(from), TagMatch::exact(tag), &mut len)?;
        let mut data = vec![0u8; u32::from_ne_bytes(len) as usize];
        self.ep
            .recv(Source::Rank(from), TagMatch::exact(tag), &mut data)?;
        Ok(data)
    }

    /// `MPI_Intercomm_create_from_groups` (MPI-4.1 §7.6.2): collective
    /// over both groups, each passing its own as `local` with its leader;
    /// the processes agree over the union on a bootstrap context from
    /// `tag`.
    pub fn intercomm_from_groups(
        &mut self,
        local: &Group,
        local_leader: i32,
        remote: &Group,
        remote_leader: i32,
        tag: &str,
        errhandler: Errhandler,
    ) -> MpiResult<usize> {
        let me = self.ep.rank();
        let rank = local.rank_of(me).ok_or_else(|| {
            MpiError::new(
                Class::Group,
                "the calling process is not in the local group",
            )
        })?;
        let leader = |g: &Group, r: i32, what: &str| {
            g.members
                .get(usize::try_from(r).unwrap_or(usize::MAX))
                .copied()
                .ok_or_else(|| MpiError::new(Class::Rank, format!("invalid {what} leader {r}")))
        };
        let (la, lb) = (
            leader(local, local_leader, "local")?,
            leader(remote, remote_leader, "remote")?,
        );
        if remote.members.iter().any(|p| local.members.contains(p)) {
            return Err(MpiError::new(
                Class::Group,
                "the local and remote groups overlap",
            ));
        }
        let (first, second) = if la < lb {
            (&local.members, &remote.members)
        } else {
            (&remote.members, &local.members)
        };
        let union = [first.as_slice(), second].concat();
        self.ep.admit(union.iter().copied());
        let tmp = Comm::new(union.clone(), me, boot_ctx(tag, &union));
        let tmp = self.place_comm(tmp, None);
        let agreed = self.agree_ctx(tmp);
        self.comms[tmp] = None;
        let mut c = Comm::new(local.members.clone(), me, agreed?);
        debug_assert_eq!(c.rank, rank);
        c.errhandler = errhandler;
        c.session = local.session;
        c.remote = Some(Remote::new(remote.members.clone()));
        Ok(self.add_comm(c))
    }
}
