//! Statuses in MPICH's layout: the one place that knows it. MPICH keeps
//! the byte count in two words, `count_lo` and `count_hi_and_cancelled`,
//! the second holding the count's upper bits shifted left by one and the
//! cancelled flag in its lowest bit; source and tag are MPICH's values
//! (`MPI_PROC_NULL`, `MPI_ANY_SOURCE`, `MPI_ANY_TAG` included).
//!
//! The core speaks of [`Status`]; this layer turns it into the
//! application's status with [`status_out`] and reads an application's
//! status (`MPI_Get_count`, `MPI_Status_set_cancelled`, a generalized
//! request's query function...) with [`status_in`]. The two are exact
//! inverses: every field of an MPICH status survives a round trip.

use std::ffi::c_int;

use super::codes::{code_in, code_out};
use super::{rank_arg, rank_out, tag_arg, tag_out};
use crate::abi::{self, MPI_Status};
use crate::core::Status;

/// The cancelled flag of `count_hi_and_cancelled`.
const CANCELLED_BIT: c_int = 1;

/// A status as MPICH lays it out.
pub(crate) fn status_out(st: &Status) -> MPI_Status {
    MPI_Status {
        count_lo: st.bytes as u32 as c_int,
        count_hi_and_cancelled: ((st.bytes >> 32) << 1) as c_int
            | if st.cancelled { CANCELLED_BIT } else { 0 },
        MPI_SOURCE: rank_out(Some(st.source)),
        MPI_TAG: tag_out(st.tag),
        MPI_ERROR: code_out(st.error),
    }
}

/// An MPICH status as the core's.
pub(crate) fn status_in(st: &MPI_Status) -> Status {
    let hi = u64::from(st.count_hi_and_cancelled as u32) >> 1;
    Status {
        source: rank_arg(st.MPI_SOURCE),
        tag: tag_arg(st.MPI_TAG),
        error: code_in(st.MPI_ERROR),
        bytes: u64::from(st.count_lo as u32) | hi << 32,
        cancelled: st.count_hi_and_cancelled & CANCELLED_BIT != 0,
    }
}

/// Write `st` to the application's status argument, unless it is
/// `MPI_STATUS_IGNORE` (or null, which the argument checks reject
/// before).
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or writable (MPI contract).
pub(crate) unsafe fn write_status(status: *mut MPI_Status, st: Status) {
    if !status.is_null() && !abi::is_status_ignore(status) {
        // SAFETY: a status pointer other than MPI_STATUS_IGNORE is writable.
        unsafe { status.write(status_out(&st)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::peer::{Rank, Tag};

    #[test]
    fn count_round_trips_beyond_32_bits() {
        for bytes in [0u64, 1, 1 << 31, (1 << 32) + 5, (1 << 40) + 3] {
            let st = Status::received(Rank::Proc(1), Tag::Value(2), bytes);
            assert_eq!(status_in(&status_out(&st)), st);
        }
    }

    #[test]
    fn special_values_are_mpichs() {
        let empty = status_out(&Status::empty());
        assert_eq!(
            (empty.MPI_SOURCE, empty.MPI_TAG),
            (abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG)
        );
        assert_eq!(empty.MPI_ERROR, abi::MPI_SUCCESS);
        assert_eq!((empty.count_lo, empty.count_hi_and_cancelled), (0, 0));
        let null = status_out(&Status::proc_null());
        assert_eq!(
            (null.MPI_SOURCE, null.MPI_TAG),
            (abi::MPI_PROC_NULL, abi::MPI_ANY_TAG)
        );
        let cancelled = status_out(&Status::cancelled());
        assert_eq!(cancelled.count_hi_and_cancelled, 1);
    }

    #[test]
    fn the_cancelled_bit_leaves_the_count_alone() {
        let st = Status {
            cancelled: true,
            ..Status::received(Rank::Proc(3), Tag::Value(4), (1 << 33) + 5)
        };
        let m = status_out(&st);
        assert_eq!((m.count_lo, m.count_hi_and_cancelled), (5, (2 << 1) | 1));
        assert_eq!(status_in(&m), st);
    }

    #[test]
    fn every_mpich_status_survives_a_round_trip() {
        for (source, tag) in [(-1, -1), (-2, 7), (5, -1), (-9, i32::MIN)] {
            for hi in [0, 1, -1, i32::MIN, 6] {
                let m = MPI_Status {
                    count_lo: -3,
                    count_hi_and_cancelled: hi,
                    MPI_SOURCE: source,
                    MPI_TAG: tag,
                    MPI_ERROR: abi::MPI_ERR_TRUNCATE,
                };
                assert_eq!(status_out(&status_in(&m)), m);
            }
        }
    }
}
