//! Sessions, process sets, and communicators made from groups without a
//! parent communicator (MPI-4.0 §11.3, §7.4.2).
//!
//! A session is a handle on the runtime with its own error handler and
//! thread level; it owns no communicators (MPI-4.0 §11.3.1: finalizing a
//! session does not free the objects derived from it). The world model is
//! a hidden session whose communicators are made here too
//! ([`Runtime::world_init`]).
//!
//! # Process sets (MPI-4.0 §11.3.2)
//!
//! Every job has `mpi://WORLD`, `mpi://SELF` and `mpix://SHARED` (the
//! processes of the caller's node, as the engine's bootstrap maps them),
//! `mpix://node` (the same members), `mpix://numa/K` for each NUMA node K
//! holding a process of the caller's node (the processes whose
//! [`Place`](shm_engine::Place) is NUMA node K, that is, bound within it;
//! K is the kernel's node number), followed by the sets the launcher names
//! (`app://NAME`, see
//! [`shm_engine::bootstrap::pset`]). The list is fixed for the job's life
//! and the same in every session. Names are compared ignoring ASCII case.
//!
//! # Context ids without a parent communicator
//!
//! `MPI_Comm_create_from_group` is collective over the group only: no
//! world communicator exists to agree on a context id. The group's members
//! agree among themselves:
//!
//! 1. Each member derives the same *bootstrap context* from the string tag
//!    and the group's member list: an FNV-1a hash folded into the id
//!    range at and above [`BOOT_CTX_BASE`], which normal communicators
//!    never use. A temporary communicator over the group with that context
//!    carries step 2.
//! 2. The members allreduce (maximum) their smallest unused context id
//!    over it, exactly as `MPI_Comm_dup` does over a parent; every member
//!    then marks the result and the next id used.
//!
//! `MPI_Init` makes `MPI_COMM_WORLD` and `MPI_COMM_SELF` through the same
//! function, but with the context ids reserved for them ([`WORLD_CTX`],
//! [`SELF_CTX`]): the world model starts at most once per process, so
//! those ids need no agreement, and `MPI_Init` sends no message (it works
//! on virtual nodes the engine cannot yet connect, too).
//!
//! Traffic of two creations cannot be confused: creations with different
//! tags or groups almost always use different bootstrap contexts, and two
//! that share one are ordered at every common member (a member takes part
//! in one creation at a time, and the engine keeps each sender's messages
//! of one tag in order), so each receive matches the message of its own
//! creation.

use std::collections::BTreeMap;

use shm_engine::Endpoint;

use super::Class;
use super::errh::Errhandler;
use super::group::Group;
use super::{Comm, MpiError, MpiResult, Phase, Runtime, SELF, WORLD};

/// Context ids from here up are bootstrap contexts of
/// `MPI_Comm_create_from_group`; the ids agreed for communicators stay
/// below.
pub const BOOT_CTX_BASE: u32 = 0x8000_0000;

/// Context ids reserved for `MPI_COMM_WORLD` and `MPI_COMM_SELF`, each
/// followed by the ids of its duplicates ([`super::comm::ChildIds`]);
/// agreed ids start above them.
pub const WORLD_CTX: u32 = 0;
pub const SELF_CTX: u32 = WORLD_CTX + super::comm::BLOCK;
pub const FIRST_AGREED_CTX: u32 = SELF_CTX + super::comm::BLOCK;

/// The names of the predefined process sets.
pub const WORLD_PSET: &str = "mpi://WORLD";
pub const SELF_PSET: &str = "mpi://SELF";
pub const SHARED_PSET: &str = "mpix://SHARED";
pub const NODE_PSET: &str = "mpix://node";
/// Prefix of the NUMA node sets, followed by the node's number.
pub const NUMA_PSET: &str = "mpix://numa/";

/// A thread support level (MPI-4.1 §11.6), in the standard's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThreadLevel {
    Single,
    Funneled,
    Serialized,
    Multiple,
}

impl ThreadLevel {
    /// The most this library provides: threads call at once
    /// ([`super::threads`]).
    pub const PROVIDED: ThreadLevel = ThreadLevel::Multiple;

    /// What the library provides when `asked` for a level: that level, at
    /// most [`Self::PROVIDED`].
    pub fn provided(asked: ThreadLevel) -> ThreadLevel {
        asked.min(Self::PROVIDED)
    }

    /// The level's name, as the `thread_level` info key spells it.
    pub fn name(self) -> &'static str {
        match self {
            ThreadLevel::Single => "MPI_THREAD_SINGLE",
            ThreadLevel::Funneled => "MPI_THREAD_FUNNELED",
            ThreadLevel::Serialized => "MPI_THREAD_SERIALIZED",
            ThreadLevel::Multiple => "MPI_THREAD_MULTIPLE",
        }
    }

    /// The level a `thread_level` info value names (any case, MPI-4.1
    /// §11.3.1); `MPI_THREAD_SINGLE` for anything else.
    pub fn from_name(name: &str) -> ThreadLevel {
        [Self::Multiple, Self::Serialized, Self::Funneled]
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name))
            .unwrap_or(Self::Single)
    }
}

/// A named process set: engine process ids, in the rank order of the
/// group made from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pset {
    pub name: String,
    pub members: Vec<u32>,
}

/// One open session.
#[derive(Debug)]
pub struct Session {
    /// Its error handler (an entry-layer handle).
    pub errhandler: Errhandler,
    /// The thread level it provides.
    pub thread_level: ThreadLevel,
    /// The world model's session, which applications have no handle to.
    pub hidden: bool,
    /// Its buffer for buffered sends (`MPI_Session_attach_buffer`).
    pub bsend: Option<super::bsend::Attached>,
}

/// The process sets of the job this endpoint belongs to.
pub(super) fn job_psets(ep: &mut Endpoint) -> MpiResult<Vec<Pset>> {
    let (me, node) = (ep.rank(), ep.node());
    let shared: Vec<u32> = ep.world().filter(|&r| ep.node_of(r) == node).collect();
    let named = shm_engine::bootstrap::pset::read(ep.bootstrap())
        .map_err(|e| MpiError::new(Class::Other, format!("process sets: {e}")))?;
    let mut psets = vec![
        Pset {
            name: WORLD_PSET.into(),
            members: ep.world().collect(),
        },
        Pset {
            name: SELF_PSET.into(),
            members: vec![me],
        },
        Pset {
            name: SHARED_PSET.into(),
            members: shared.clone(),
        },
        Pset {
            name: NODE_PSET.into(),
            members: shared.clone(),
        },
    ];
    psets.extend(numa_psets(ep, &shared));
    psets.extend(
        named
            .into_iter()
            .map(|(name, members)| Pset { name, members }),
    );
    Ok(psets)
}

/// `mpix://numa/K` for every NUMA node K holding a process of `local`
/// (this node's processes), in increasing K.
fn numa_psets(ep: &Endpoint, local: &[u32]) -> Vec<Pset> {
    let mut by_node: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &r in local {
        if let Some(numa) = ep.place(r).map(|p| p.numa)
            && numa != shm_engine::locality::UNKNOWN
        {
            by_node.entry(numa).or_default().push(r);
        }
    }
    by_node
        .into_iter()
        .map(|(k, members)| Pset {
            name: format!("{NUMA_PSET}{k}"),
            members,
        })
        .collect()
}

/// FNV-1a over `bytes`, continuing from `h`.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The bootstrap context of creating a communicator over `members` with
/// `tag`: the same at every member, even, at or above [`BOOT_CTX_BASE`].
pub fn boot_ctx(tag: &str, members: &[u32]) -> u32 {
    let mut h = fnv1a(0xcbf2_9ce4_8422_2325, tag.as_bytes());
    for m in members {
        h = fnv1a(h, &m.to_le_bytes());
    }
    let folded = (h ^ (h >> 32)) as u32;
    BOOT_CTX_BASE | (folded & (BOOT_CTX_BASE - 2))
}

/// A set operation of `MPIX_Pset_create_op` (the seed's
/// `MPIDYNRES_pset_create_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsetOp {
    Union,
    Difference,
    Intersection,
}

impl PsetOp {
    fn name(self) -> &'static str {
        match self {
            Self::Union => "union",
            Self::Difference => "difference",
            Self::Intersection => "intersection",
        }
    }
}

impl Runtime {
    /// Append the process sets created since the last look (by any
    /// process of the launcher's jobs): the list only grows, so an index
    /// of `MPI_Session_get_nth_pset` keeps naming the same set.
    pub fn refresh_psets(&mut self) -> MpiResult<()> {
        let new = self
            .ep
            .bootstrap()
            .created_psets(self.created_psets)
            .map_err(|e| MpiError::new(Class::Other, format!("process sets: {e}")))?;
        self.created_psets += new.len();
        self.psets.extend(
            new.into_iter()
                .map(|(name, members)| Pset { name, members }),
        );
        Ok(())
    }

    /// `MPIX_Pset_create_op`: a new process set, the result of `op` on
    /// sets `a` and `b`, of which the caller must be in one; returns its
    /// name, which every process of the launcher's jobs then sees.
    pub fn pset_create_op(&mut self, a: &str, b: &str, op: PsetOp) -> MpiResult<String> {
        self.refresh_psets()?;
        let (x, y) = (self.pset(a)?.members.clone(), self.pset(b)?.members.clone());
        let me = self.ep.rank();
        if !x.contains(&me) && !y.contains(&me) {
            return Err(MpiError::new(
                Class::Arg,
                format!("the calling process is in neither {a:?} nor {b:?}"),
            ));
        }
        let members: Vec<u32> = match op {
            PsetOp::Union => x
                .iter()
                .chain(y.iter().filter(|p| !x.contains(p)))
                .copied()
                .collect(),
            PsetOp::Difference => x.iter().filter(|p| !y.contains(p)).copied().collect(),
            PsetOp::Intersection => x.iter().filter(|p| y.contains(p)).copied().collect(),
        };
        let name = self
            .ep
            .bootstrap()
            .create_pset(op.name(), &members)
            .map_err(|e| MpiError::new(Class::Other, format!("MPIX_Pset_create_op: {e}")))?;
        self.refresh_psets()?;
        Ok(name)
    }

    /// The process set called `name` (ignoring case).
    pub fn pset(&self, name: &str) -> MpiResult<&Pset> {
        self.psets
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| MpiError::new(Class::Arg, format!("no process set is named {name:?}")))
    }

    /// Open a session; returns its slot.
    pub fn session_open(&mut self, s: Session) -> usize {
        if s.thread_level == ThreadLevel::Multiple {
            super::threads::enable(self.ep.waker());
        }
        self.sessions.insert(s)
    }

    /// The application's session in `slot`.
    pub fn session(&self, slot: usize) -> MpiResult<&Session> {
        self.sessions
            .get(slot)
            .filter(|s| !s.hidden)
            .ok_or_else(|| MpiError::new(Class::Session, "invalid session"))
    }

    pub fn session_mut(&mut self, slot: usize) -> MpiResult<&mut Session> {
        self.session(slot)?;
        Ok(self.sessions.get_mut(slot).expect("checked above"))
    }

    /// Close the application's session in `slot` (local: the objects
    /// derived from it stay until freed, MPI-4.0 §11.3.1).
    pub fn session_close(&mut self, slot: usize) -> MpiResult<()> {
        self.session(slot)?;
        // Finalizing detaches the buffer (MPI-4.1 §3.6.1).
        self.detach_buffer(super::bsend::Scope::Session(slot))?;
        self.sessions.remove(slot);
        Ok(())
    }

    /// A new group of the members of process set `name`; its slot in
    /// [`Runtime::groups`].
    pub fn group_from_pset(&mut self, session: usize, name: &str) -> MpiResult<usize> {
        let members = self.pset(name)?.members.clone();
        Ok(self.groups.insert(Group {
            members,
            session: Some(session),
        }))
    }

    /// `MPI_Comm_create_from_group`: collective over the members of
    /// `group` only; returns the new communicator's slot (`None` for the empty group). See the module
    /// docs for the context-id agreement.
    pub fn comm_from_group(
        &mut self,
        group: &Group,
        tag: &str,
        errhandler: Errhandler,
    ) -> MpiResult<Option<usize>> {
        // A process left out passes the empty group and gets no
        // communicator (MPI-4.1 §7.4.2), without communicating.
        if group.members.is_empty() {
            return Ok(None);
        }
        // A set may hold processes of other jobs of the launcher (added by
        // a resource change, or spawned): the process sets introduce them.
        self.ep.admit(group.members.iter().copied());
        let slot = self.make_comm(group.members.clone(), tag, errhandler, None)?;
        self.comm_mut(slot)?.session = group.session;
        Ok(Some(slot))
    }

    /// A communicator over `members` in a new slot, or in predefined
    /// communicator `reserved`'s slot with its reserved context id.
    fn make_comm(
        &mut self,
        members: Vec<u32>,
        tag: &str,
        errhandler: Errhandler,
        reserved: Option<usize>,
    ) -> MpiResult<usize> {
        let me = self.ep.rank();
        if !members.contains(&me) {
            return Err(MpiError::new(
                Class::Group,
                "the calling process is not a member of the group",
            ));
        }
        let ctx = match reserved {
            Some(WORLD) => WORLD_CTX,
            Some(_) => SELF_CTX,
            None => {
                let boot = Comm::new(members.clone(), me, boot_ctx(tag, &members));
                let tmp = self.place_comm(boot, None);
                let agreed = self.agree_ctx(tmp);
                self.comms[tmp] = None;
                agreed?
            }
        };
        let mut c = Comm::new(members, me, ctx);
        c.errhandler = errhandler;
        c.name = match reserved {
            Some(WORLD) => Some("MPI_COMM_WORLD".into()),
            Some(_) => Some("MPI_COMM_SELF".into()),
            None => None,
        };
        Ok(self.place_comm(c, reserved))
    }

    /// `MPI_Init`: open the world's hidden session and make
    /// `MPI_COMM_WORLD` and `MPI_COMM_SELF` from `mpi://WORLD` and
    /// `mpi://SELF` (local: their context ids are reserved).
    pub fn world_init(&mut self, thread_level: ThreadLevel) -> MpiResult<()> {
        let session = self.session_open(Session {
            errhandler: Errhandler::Fatal,
            thread_level,
            hidden: true,
            bsend: None,
        });
        for (slot, name) in [(WORLD, WORLD_PSET), (SELF, SELF_PSET)] {
            let members = self.pset(name)?.members.clone();
            self.make_comm(members, name, Errhandler::Fatal, Some(slot))?;
        }
        super::publish_threads(thread_level);
        self.set_world(Phase::Running { session });
        // A spawned job meets its parents (MPI-4.1 §11.8.2).
        self.connect_parent()
    }

    /// `MPI_Finalize`: a barrier over `MPI_COMM_WORLD`, then the world's
    /// communicators and session go. The engine stays (module docs of
    /// [`crate::core`]).
    pub fn world_finalize(&mut self) -> MpiResult<()> {
        let Phase::Running { session } = self.world else {
            return Err(MpiError::new(
                Class::Other,
                "the world model is not initialized",
            ));
        };
        // Buffered sends and requests freed while active finish first.
        self.complete_pending()?;
        crate::coll::barrier(self, WORLD)?;
        self.comms[WORLD] = None;
        self.comms[SELF] = None;
        self.sessions.remove(session);
        self.set_world(Phase::After);
        Ok(())
    }

    /// Move the world model to `phase`, also where `MPI_Initialized` and
    /// `MPI_Finalized` read it without the lock (`super::publish_world`).
    fn set_world(&mut self, phase: Phase) {
        self.world = phase;
        super::publish_world(phase);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_contexts_are_even_high_and_depend_on_tag_and_members() {
        let a = boot_ctx("t", &[0, 1, 2]);
        assert_eq!(a, boot_ctx("t", &[0, 1, 2]));
        for c in [a, boot_ctx("u", &[0, 1, 2]), boot_ctx("t", &[2, 1, 0])] {
            assert!(c >= BOOT_CTX_BASE && c % 2 == 0 && c.checked_add(1).is_some());
        }
        assert_ne!(a, boot_ctx("u", &[0, 1, 2]));
        assert_ne!(a, boot_ctx("t", &[2, 1, 0]));
    }

    #[test]
    fn thread_levels_by_name_are_provided_up_to_multiple() {
        assert_eq!(
            ThreadLevel::from_name("mpi_thread_multiple"),
            ThreadLevel::Multiple
        );
        assert_eq!(
            ThreadLevel::from_name("MPI_THREAD_FUNNELED"),
            ThreadLevel::Funneled
        );
        assert_eq!(ThreadLevel::from_name("bogus"), ThreadLevel::Single);
        assert_eq!(
            ThreadLevel::provided(ThreadLevel::Multiple),
            ThreadLevel::Multiple
        );
        assert_eq!(
            ThreadLevel::provided(ThreadLevel::Funneled),
            ThreadLevel::Funneled
        );
        assert_eq!(ThreadLevel::Serialized.name(), "MPI_THREAD_SERIALIZED");
    }
}
