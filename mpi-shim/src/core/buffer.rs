//! Message buffers as the application describes them (MPI-4.1 §3.2.2):
//! `count` elements of a datatype at an address, checked, and the way
//! the engine moves them ([`Wire`]): the memory itself when contiguous or
//! worth moving piece by piece, a packed copy otherwise.

use std::borrow::Cow;
use std::ffi::c_void;

use shm_engine::{Endpoint, Piece, Source};

use super::datatype::TypeRef;
use super::{Class, MpiError, MpiResult};

/// Addresses below this are never mapped (Linux's `vm.mmap_min_addr` is
/// at least one page): a buffer reaching there from a null address is a
/// mistake, not `MPI_BOTTOM` with absolute displacements.
const LOWEST_VALID_ADDRESS: isize = 4096;

/// A non-contiguous buffer is packed (rather than moved piece by piece)
/// when its blocks average fewer bytes than this, for messages the engine
/// copies itself (inline, eager, and the staging pipeline when CMA is
/// off): each piece costs a cursor step and a `memcpy` call that a
/// packing loop over small blocks does not, so below a few hundred bytes
/// packing and copying once more is faster.
pub const MIN_AVG_PIECE: usize = 256;

/// The same for the receiver of a rendezvous over CMA: its pieces are the
/// local side of `process_vm_readv`, where each costs the kernel a step
/// of its copy loop (tens of ns) that the user-space unpack of a packed
/// receive beats for blocks of about 1 KiB (measured with a 4 MiB vector
/// ping-pong: even at 2 KiB, a clear gain from 4 KiB).
pub const MIN_AVG_PIECE_CMA_LOCAL: usize = 2048;

/// The same for the sender of a rendezvous over CMA: its pieces are the
/// remote side of the receiver's `process_vm_readv`, and the kernel pins
/// and unpins the pages of each remote piece separately (half a
/// microsecond or more each), which packing (a user-space copy, then one
/// contiguous read) beats until blocks reach several KiB (measured: packing
/// wins at 4 KiB, pieces at 16 KiB).
pub const MIN_AVG_PIECE_CMA_REMOTE: usize = 8192;

/// A non-contiguous buffer of more pieces than this is packed: its piece
/// list (16 bytes a piece, held by the request) would itself be a large
/// allocation, and its walk a long one.
pub const MAX_PIECES: usize = 1 << 20;

/// A count argument: negative ones are `MPI_ERR_COUNT`.
pub fn check_count(count: i64) -> MpiResult<usize> {
    usize::try_from(count)
        .map_err(|_| MpiError::new(Class::Count, format!("negative count {count}")))
}

/// A committed datatype and the bytes of `count` of its elements.
pub fn committed_bytes(dt: TypeRef, count: usize) -> MpiResult<(TypeRef, usize)> {
    if !dt.committed {
        return Err(MpiError::new(Class::Type, "datatype not committed"));
    }
    let len = dt
        .bytes(count)
        .ok_or_else(|| MpiError::new(Class::Count, "message size overflows"))?;
    Ok((dt, len))
}

/// A message buffer as the engine sees it: pieces of memory, and the
/// packed copy they point into when the datatype is better packed (the
/// request keeps it alive: moving the `Vec` leaves its storage put).
/// The common case, one contiguous piece of the user's memory, is a
/// plain value: nothing to allocate or free.
#[derive(Debug)]
pub enum Wire {
    /// The user's memory, in one piece.
    Direct(Piece),
    /// The user's memory, piece by piece.
    Pieces(Vec<Piece>),
    /// A packed copy, and the piece that spans it.
    Packed(Vec<u8>, Piece),
}

impl Wire {
    /// The pieces to hand to the engine.
    pub fn pieces(&self) -> &[Piece] {
        match self {
            Self::Direct(one) | Self::Packed(_, one) => std::slice::from_ref(one),
            Self::Pieces(many) => many,
        }
    }

    /// The packed copy, if the buffer is moved through one.
    pub fn packed(self) -> Option<Vec<u8>> {
        match self {
            Self::Packed(packed, _) => Some(packed),
            Self::Direct(_) | Self::Pieces(_) => None,
        }
    }

    /// Whether the buffer is moved through a packed copy.
    pub fn is_packed(&self) -> bool {
        matches!(self, Self::Packed(..))
    }
}

/// Which way a buffer moves, and the process at the other end (engine
/// ids): a send's destination, the senders a receive accepts.
#[derive(Clone, Copy, Debug)]
pub enum Way {
    Send(u32),
    Recv(Source),
}

/// `count` elements of a datatype at `ptr`: a message buffer as the
/// application describes it, checked.
#[derive(Debug)]
pub struct UserBuf {
    pub ptr: *mut u8,
    pub count: usize,
    pub dt: TypeRef,
    /// Bytes of data (`count * dt.size`).
    pub len: usize,
}

impl UserBuf {
    /// Check a buffer argument: the datatype is committed, the size fits,
    /// and a null `buf` (`MPI_BOTTOM`) comes with absolute displacements
    /// (MPI-4.1 §5.1.12).
    ///
    /// # Safety
    /// `buf` addresses `count` elements of `dt` (MPI contract); they are
    /// only written through if the caller is a receive.
    #[inline]
    pub unsafe fn new(buf: *const c_void, count: usize, dt: TypeRef) -> MpiResult<Self> {
        let (dt, len) = committed_bytes(dt, count)?;
        if buf.is_null()
            && dt
                .lowest_offset(count)
                .is_some_and(|a| a < LOWEST_VALID_ADDRESS)
        {
            return Err(MpiError::new(Class::Buffer, "null buffer"));
        }
        Ok(Self {
            ptr: buf.cast_mut().cast(),
            count,
            dt,
            len,
        })
    }

    /// The message's bytes: the user's memory itself when the datatype is
    /// contiguous, a packed copy otherwise.
    ///
    /// # Safety
    /// The buffer is readable (the promise of [`UserBuf::new`]).
    #[inline]
    pub unsafe fn data(&self) -> Cow<'_, [u8]> {
        if self.len == 0 {
            Cow::Borrowed(&[])
        } else if self.dt.is_contiguous() {
            // SAFETY: `len` contiguous readable bytes (MPI contract).
            Cow::Borrowed(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
        } else {
            let mut v = vec![0; self.len];
            // SAFETY: `count` elements of `dt` at `ptr` (MPI contract).
            unsafe { self.dt.pack(self.ptr, self.count, &mut v) };
            Cow::Owned(v)
        }
    }

    /// Whether `ep` should move this non-contiguous buffer piece by piece
    /// rather than through a packed copy: only when its blocks are large
    /// on average for the way the engine will move it ([`MIN_AVG_PIECE`]
    /// and its CMA variants; a receive's capacity stands for the size of
    /// the message) and not too many ([`MAX_PIECES`]).
    fn piecewise(&self, ep: &Endpoint, way: Way) -> bool {
        let to_self = ep.config().self_direct
            && match way {
                Way::Send(to) => to == ep.rank(),
                Way::Recv(from) => from == Source::Rank(ep.rank()),
            };
        let min_avg = if to_self || !ep.uses_cma() || self.len <= ep.config().eager_max {
            MIN_AVG_PIECE
        } else if matches!(way, Way::Send(_)) {
            MIN_AVG_PIECE_CMA_REMOTE
        } else {
            MIN_AVG_PIECE_CMA_LOCAL
        };
        let pieces = self.count.saturating_mul(self.dt.blocks.len());
        pieces <= MAX_PIECES && self.len >= pieces.saturating_mul(min_avg)
    }

    /// The buffer as `ep` moves it (see [`Wire`]) `way`: the user's memory
    /// when contiguous or worth moving piecewise, else a packed copy (of
    /// the data for a send, left from an earlier use for a receive).
    ///
    /// # Safety
    /// For a send the buffer is readable (the promise of
    /// [`UserBuf::new`]).
    #[inline]
    pub unsafe fn wire(&self, ep: &Endpoint, way: Way) -> Wire {
        if self.len == 0 || self.dt.is_contiguous() {
            return Wire::Direct(Piece::new(self.ptr, self.len));
        }
        let send = matches!(way, Way::Send(_));
        if self.piecewise(ep, way) {
            return Wire::Pieces(self.dt.pieces(self.ptr, self.count));
        }
        let mut packed = super::pool::take(self.len);
        if send {
            // SAFETY: `count` elements of `dt` at `ptr` (the caller).
            unsafe { self.dt.pack(self.ptr, self.count, &mut packed) };
        }
        let one = Piece::new(packed.as_mut_ptr(), self.len);
        Wire::Packed(packed, one)
    }

    /// Write packed data (at most `len` bytes) into the buffer.
    ///
    /// # Safety
    /// The buffer is writable (the promise of [`UserBuf::new`]).
    pub unsafe fn unpack(&self, packed: &[u8]) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.dt
                .unpack(&packed[..packed.len().min(self.len)], self.count, self.ptr)
        };
    }
}
