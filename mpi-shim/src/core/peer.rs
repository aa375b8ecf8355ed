//! Ranks and tags as point-to-point calls name them (MPI-4.1 §3.2.3,
//! §3.2.4, §3.11): a process of the communicator or a tag value, or one of
//! the special values, which each ABI spells its own way. Entry layers
//! decode their constants into [`Rank`] and [`Tag`]; the core checks them
//! against the communicator and turns them into the engine's addresses
//! and matchers.

use shm_engine::{Source, TagMatch};

use super::Class;
use super::{Comm, MpiError, MpiResult};

/// A rank argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// A rank in the communicator, or a value that names no special rank
    /// (negative or too large: an error where it is checked).
    Proc(i32),
    /// `MPI_PROC_NULL`: the operation completes at once, moving nothing.
    Null,
    /// `MPI_ANY_SOURCE`, where a receive or probe allows it.
    Any,
}

/// A tag argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// A tag value (negative ones are errors where it is checked).
    Value(i32),
    /// `MPI_ANY_TAG`, where a receive or probe allows it.
    Any,
}

/// Whom a receive or probe accepts, in the engine's terms; `None` for
/// `MPI_PROC_NULL`.
pub type RecvFrom = Option<(Source, TagMatch)>;

/// The root argument of a rooted collective (MPI-4.1 §6.2.2): a rank,
/// or on an intercommunicator one of the two values the root's group
/// passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// A rank: of the communicator, or of the remote group (the root) on
    /// an intercommunicator.
    Rank(i32),
    /// `MPI_ROOT`: this process is the root (intercommunicators).
    Here,
    /// `MPI_PROC_NULL`: a process of the root's group other than the
    /// root (intercommunicators).
    Null,
}

/// A checked root, from this process's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootIs {
    /// Rank `r` of an intracommunicator.
    Intra(usize),
    /// Remote rank `r` of an intercommunicator: this process's group
    /// receives from it (or sends to it).
    Remote(usize),
    /// This process, the root of an intercommunicator collective.
    Here,
    /// This process is in the root's group, not the root: it takes no
    /// part.
    Idle,
}

impl Comm {
    /// The size of the group point-to-point ranks name ([`Comm::peers`]).
    pub fn peer_size(&self) -> i32 {
        self.peers().len() as i32
    }

    /// Check a `what` rank argument (`MPI_ANY_SOURCE` only where
    /// `wildcard`).
    pub fn check_rank(&self, rank: Rank, what: &str, wildcard: bool) -> MpiResult<()> {
        let invalid = |r: &dyn std::fmt::Display| {
            let group = if self.is_inter() {
                "remote group"
            } else {
                "communicator"
            };
            MpiError::new(
                Class::Rank,
                format!(
                    "invalid {what} rank {r} in a {group} of size {}",
                    self.peer_size()
                ),
            )
        };
        match rank {
            Rank::Proc(r) if (0..self.peer_size()).contains(&r) => Ok(()),
            Rank::Proc(r) => Err(invalid(&r)),
            Rank::Null => Ok(()),
            Rank::Any if wildcard => Ok(()),
            Rank::Any => Err(invalid(&"MPI_ANY_SOURCE")),
        }
    }

    /// Check the root of a collective (MPI-4.1 §6.1, §6.2.2): a rank of
    /// an intracommunicator; `MPI_ROOT`, `MPI_PROC_NULL` or a remote rank
    /// on an intercommunicator.
    #[inline]
    pub fn check_root(&self, root: Root) -> MpiResult<RootIs> {
        let n = self.peer_size();
        match (root, self.is_inter()) {
            (Root::Rank(r), false) if (0..n).contains(&r) => Ok(RootIs::Intra(r as usize)),
            (Root::Rank(r), true) if (0..n).contains(&r) => Ok(RootIs::Remote(r as usize)),
            (Root::Here, true) => Ok(RootIs::Here),
            (Root::Null, true) => Ok(RootIs::Idle),
            (root, inter) => {
                let what = match root {
                    Root::Rank(r) => r.to_string(),
                    Root::Here => "MPI_ROOT".into(),
                    Root::Null => "MPI_PROC_NULL".into(),
                };
                let place = if inter {
                    "for an intercommunicator whose remote group has size"
                } else {
                    "in a communicator of size"
                };
                Err(MpiError::new(
                    Class::Root,
                    format!("invalid root {what} {place} {n}"),
                ))
            }
        }
    }

    /// The job rank a send to `dest` goes to (`None` for `MPI_PROC_NULL`),
    /// and the engine tag, after checking both.
    #[inline]
    pub fn send_to(&self, dest: Rank, tag: Tag) -> MpiResult<(Option<u32>, u64)> {
        self.check_rank(dest, "destination", false)?;
        let tag = check_tag(tag, false)?.expect("a checked send tag is a value");
        let to = match dest {
            Rank::Proc(r) => Some(self.peers()[r as usize]),
            _ => None,
        };
        Ok((to, Comm::tag(self.ctx, tag)))
    }

    /// Whom a receive or probe from `source` with `tag` accepts, after
    /// checking both.
    #[inline]
    pub fn recv_from(&self, source: Rank, tag: Tag) -> MpiResult<RecvFrom> {
        self.check_rank(source, "source", true)?;
        let tag = check_tag(tag, true)?;
        let matcher = match tag {
            // Any tag of the context, but not a partitioned message's.
            None => TagMatch::masked(
                u64::from(self.ctx) << 32,
                0xffff_ffff << 32 | super::partitioned::PARTITIONED,
            ),
            Some(t) => TagMatch::exact(Comm::tag(self.ctx, t)),
        };
        Ok(match source {
            Rank::Null => None,
            Rank::Any => Some((Source::Any, matcher)),
            Rank::Proc(r) => Some((Source::Rank(self.peers()[r as usize]), matcher)),
        })
    }
}

/// Check a tag argument (`MPI_ANY_TAG` only where `wildcard`); the value,
/// `None` for `MPI_ANY_TAG`.
pub fn check_tag(tag: Tag, wildcard: bool) -> MpiResult<Option<i32>> {
    match tag {
        Tag::Value(t) if t >= 0 => Ok(Some(t)),
        Tag::Any if wildcard => Ok(None),
        Tag::Value(t) => Err(MpiError::new(Class::Tag, format!("invalid tag {t}"))),
        Tag::Any => Err(MpiError::new(
            Class::Tag,
            "MPI_ANY_TAG is not a tag to send with",
        )),
    }
}
