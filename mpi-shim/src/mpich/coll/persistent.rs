//! Persistent collectives (MPI-4.0 §6.13): what `collective!`'s
//! `MPI_X_init` forms share.

use super::*;

/// Initialize a persistent collective (MPI-4.0 §6.13): `prepare` checks
/// the communicator and keeps copies of the argument arrays (callers
/// need not keep them: mpi4py does not); each `MPI_Start` compiles the
/// schedule anew from them and starts it, so every round reads the
/// buffers as they are then and takes the communicator's next collective
/// number (processes start their persistent collectives in one order, as
/// they call the others). The info argument is checked; no hint applies.
pub(super) unsafe fn persistent<B>(
    name: &str,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
    prepare: impl FnOnce(&Runtime) -> MpiResult<B>,
) -> c_int
where
    B: FnMut(&mut Runtime) -> MpiResult<Schedule> + 'static,
{
    call_starting(name, comm, request, |rt| {
        info_hints(info)?;
        let mut build = prepare(rt)?;
        let start = move |rt: &mut Runtime| {
            let mut s = build(rt)?;
            s.advance(&mut rt.ep);
            Ok(Req::Coll(Box::new(s)))
        };
        Ok(super::p2p::persistent(rt, Box::new(start)))
    })
}

/// An argument of a persistent collective as its rounds see it: arrays
/// (of counts, displacements or datatypes) copied at initialization,
/// everything else as given.
pub(super) trait Kept: Copy {
    type Copy: 'static;
    /// The copy to keep; `len` is the array's length where it is
    /// significant (`None`: not significant here, kept as null).
    fn keep(self, len: Option<usize>) -> Self::Copy;
    /// The argument a round passes.
    fn lend(kept: &Self::Copy) -> Self;
    /// The value of an integer argument.
    fn value(self) -> Option<i64> {
        None
    }
}

macro_rules! kept_as_given {
    ($($t:ty),*) => {$(
        impl Kept for $t {
            type Copy = $t;
            fn keep(self, _: Option<usize>) -> $t {
                self
            }
            fn lend(kept: &$t) -> $t {
                *kept
            }
        }
    )*};
}
kept_as_given!(*const c_void, *mut c_void);

macro_rules! kept_scalar_or_array {
    ($($t:ty),*) => {$(
        impl Kept for $t {
            type Copy = $t;
            fn keep(self, _: Option<usize>) -> $t {
                self
            }
            fn lend(kept: &$t) -> $t {
                *kept
            }
            fn value(self) -> Option<i64> {
                Some(self.into())
            }
        }

        impl Kept for *const $t {
            type Copy = Option<Vec<$t>>;
            fn keep(self, len: Option<usize>) -> Option<Vec<$t>> {
                match len {
                    // SAFETY: a significant array has `n` entries (MPI
                    // contract); read once, here.
                    Some(n) if !self.is_null() => Some(unsafe { std::slice::from_raw_parts(self, n) }.to_vec()),
                    _ => None,
                }
            }
            fn lend(kept: &Option<Vec<$t>>) -> *const $t {
                kept.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
            }
        }
    )*};
}
kept_scalar_or_array!(c_int, i64);

/// Where the arrays of a persistent collective `name` (its compiler's
/// name) on `comm` are significant and how long they are: `None` at a
/// process other than the root of a rooted collective (`MPI_ROOT` on an
/// intercommunicator); else (receive side, send side) lengths: one per
/// rank of the group the blocks address (the remote group of an
/// intercommunicator, except for reduce-scatter's counts, one per local
/// rank), or for a neighbourhood collective the in- and out-degree.
pub(super) fn array_lengths(
    rt: &Runtime,
    comm: MPI_Comm,
    root: Option<i64>,
    name: &str,
) -> MpiResult<Option<(usize, usize)>> {
    let c = rt.comm(comm_slot(comm)?)?;
    let at_root = match root {
        None => true,
        Some(r) if c.is_inter() => r == i64::from(abi::MPI_ROOT),
        Some(r) => r == i64::from(c.rank),
    };
    if !at_root {
        return Ok(None);
    }
    let blocks = if name.starts_with("reduce_scatter") {
        c.size()
    } else {
        c.peer_size()
    } as usize;
    Ok(Some(match (&c.topo, name.starts_with("neighbor")) {
        (Some(t), true) => {
            let nb = t.neighbors(c.rank);
            (nb.sources.len(), nb.destinations.len())
        }
        _ => (blocks, blocks),
    }))
}

/// Whether an array argument describes the send side.
pub(super) fn send_side(name: &str) -> bool {
    name.starts_with("send") || name.starts_with("sdispl")
}
