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

impl Comm {
    /// Check a `what` rank argument (`MPI_ANY_SOURCE` only where
    /// `wildcard`).
    pub fn check_rank(&self, rank: Rank, what: &str, wildcard: bool) -> MpiResult<()> {
        let invalid = |r: &dyn std::fmt::Display| {
            MpiError::new(
                Class::Rank,
                format!(
                    "invalid {what} rank {r} in a communicator of size {}",
                    self.size()
                ),
            )
        };
        match rank {
            Rank::Proc(r) if (0..self.size()).contains(&r) => Ok(()),
            Rank::Proc(r) => Err(invalid(&r)),
            Rank::Null => Ok(()),
            Rank::Any if wildcard => Ok(()),
            Rank::Any => Err(invalid(&"MPI_ANY_SOURCE")),
        }
    }

    /// Check the root of a collective on an intracommunicator (a rank of
    /// it; MPI-4.1 §6.1).
    pub fn check_root(&self, root: i32) -> MpiResult<usize> {
        if (0..self.size()).contains(&root) {
            Ok(root as usize)
        } else {
            Err(MpiError::new(
                Class::Root,
                format!(
                    "invalid root {root} in a communicator of size {}",
                    self.size()
                ),
            ))
        }
    }

    /// The job rank a send to `dest` goes to (`None` for `MPI_PROC_NULL`),
    /// and the engine tag, after checking both.
    pub fn send_to(&self, dest: Rank, tag: Tag) -> MpiResult<(Option<u32>, u64)> {
        self.check_rank(dest, "destination", false)?;
        let tag = check_tag(tag, false)?.expect("a checked send tag is a value");
        let to = match dest {
            Rank::Proc(r) => Some(self.members[r as usize]),
            _ => None,
        };
        Ok((to, Comm::tag(self.ctx, tag)))
    }

    /// Whom a receive or probe from `source` with `tag` accepts, after
    /// checking both.
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
            Rank::Proc(r) => Some((Source::Rank(self.members[r as usize]), matcher)),
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
