//! The status of a completed operation (MPI-4.1 §3.2.5) as the core
//! knows it: who sent, with which tag, how many bytes, whether it was
//! cancelled, and an error code. Each ABI lays a status out its own way
//! (MPICH splits the count in two words and keeps the cancelled flag in
//! one of their bits); entry layers translate at their edge.

use super::peer::{Rank, Tag};
use super::{Code, Comm};

/// A status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender: a rank of the communicator; [`Rank::Null`] for a
    /// receive from `MPI_PROC_NULL`; [`Rank::Any`] in the empty status.
    pub source: Rank,
    /// The message's tag; [`Tag::Any`] in the empty status.
    pub tag: Tag,
    /// An error code (`MPI_SUCCESS` unless the operation failed).
    pub error: Code,
    /// The bytes received (or sent).
    pub bytes: u64,
    /// The operation was cancelled (`MPI_Test_cancelled`).
    pub cancelled: bool,
}

impl Status {
    /// The empty status (MPI-4.1 §3.7.3): what a null or inactive request
    /// reports, and the status of an operation that receives nothing.
    pub const fn empty() -> Self {
        Self {
            source: Rank::Any,
            tag: Tag::Any,
            error: Code::SUCCESS,
            bytes: 0,
            cancelled: false,
        }
    }

    /// The status of a receive or probe from `MPI_PROC_NULL` (MPI-4.1
    /// §3.10): source `MPI_PROC_NULL`, tag `MPI_ANY_TAG`, no bytes.
    pub const fn proc_null() -> Self {
        Self {
            source: Rank::Null,
            ..Self::empty()
        }
    }

    /// The status of a receive cancelled before it matched: the empty
    /// status, marked cancelled.
    pub const fn cancelled() -> Self {
        Self {
            cancelled: true,
            ..Self::empty()
        }
    }

    /// The empty status recording error `code`, as a request that failed
    /// reports it (for `MPI_ERR_IN_STATUS`).
    pub const fn error(code: Code) -> Self {
        Self {
            error: code,
            ..Self::empty()
        }
    }

    /// The status of `bytes` received from `source` with `tag`.
    pub const fn received(source: Rank, tag: Tag, bytes: u64) -> Self {
        Self {
            source,
            tag,
            bytes,
            ..Self::empty()
        }
    }
}

impl Comm {
    /// An engine status as a status in this communicator: the sender's
    /// rank here ([`Rank::Any`] for a process outside it), and the MPI
    /// tag, the lower 32 bits of the engine tag.
    pub fn status_of(&self, st: &shm_engine::Status) -> Status {
        let source = self.peer_rank(st.source).map_or(Rank::Any, Rank::Proc);
        Status::received(source, Tag::Value(st.tag as u32 as i32), st.len as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Class;

    #[test]
    fn special_statuses_differ_from_the_empty_one_in_one_field() {
        let empty = Status::empty();
        assert_eq!((empty.source, empty.tag), (Rank::Any, Tag::Any));
        assert_eq!((empty.error, empty.bytes), (Code::SUCCESS, 0));
        assert!(!empty.cancelled);
        assert_eq!(
            Status::proc_null(),
            Status {
                source: Rank::Null,
                ..empty
            }
        );
        assert_eq!(
            Status::cancelled(),
            Status {
                cancelled: true,
                ..empty
            }
        );
        assert_eq!(
            Status::error(Class::Truncate.into()),
            Status {
                error: Class::Truncate.into(),
                ..empty
            }
        );
    }
}
