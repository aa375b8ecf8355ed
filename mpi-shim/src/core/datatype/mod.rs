//! Datatypes as the library sees them, independent of any ABI (MPI-4.0
//! chapter 5): how many bytes of data one element holds, where they lie in
//! memory (its type map, flattened to contiguous blocks), its bounds, the
//! sequence of basic elements it is made of, and how it was constructed.
//!
//! Every path that moves user data (point-to-point, collectives, `Pack`)
//! goes through [`Datatype::pack`] / [`Datatype::unpack`] or, when
//! [`Datatype::is_contiguous`], straight to the user's memory.
//!
//! Every constructor reduces to one operation, [`compose`]: a list of
//! pieces, each `count` consecutive copies of an existing type at a byte
//! displacement (MPI-4.0 §5.1.2-§5.1.6 define all of them that way). Blocks
//! and basic-element runs are merged as they are appended, so a contiguous
//! run of a contiguous type stays one block however it was nested. The
//! blocks are also kept grouped into strided [`Run`]s, which packing walks
//! with constant-length copies for the common 4-, 8- and 16-byte blocks.
//!
//! Struct padding and partial-element counts follow MPICH where the
//! standard leaves room, since binaries built for MPICH run on this
//! library: see [`compose`] and [`Datatype::elements_in`].
//!
//! Addresses: a buffer address of null is `MPI_BOTTOM` (MPI-4.0 §5.1.12),
//! and the displacements are then absolute addresses, which
//! `MPI_Get_address` obtained with `pointer::expose_provenance`.

use std::sync::Arc;

use super::Class;
use super::{MpiError, MpiResult};
use crate::ops::Elem;

mod type_ref;
pub use type_ref::TypeRef;

/// A basic element kind, as element counting (`MPI_Get_elements`) and the
/// "external32" representation (MPI-4.0 §13.5.2) see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prim {
    /// Bytes in memory.
    pub size: u8,
    /// Bytes in external32.
    pub ext: u8,
    /// The unit whose bytes external32 reverses: the whole scalar, half a
    /// complex number, 1 for characters and bytes.
    pub unit: u8,
    /// A signed integer (sign-extended when external32 widens it back).
    pub signed: bool,
}

impl Prim {
    /// A basic element whose external32 form has the same size.
    pub const fn new(size: u8, unit: u8, signed: bool) -> Self {
        Self {
            size,
            ext: size,
            unit,
            signed,
        }
    }
}

/// `count` blocks of `len` bytes, the `k`-th at `off + k * stride`: the
/// blocks of a type map grouped for copying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub off: isize,
    pub len: usize,
    pub stride: isize,
    pub count: usize,
}

/// How a datatype was made (MPI-4.0 §5.1.13, `MPI_Type_get_envelope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Combiner {
    Named,
    Dup,
    Contiguous,
    Vector,
    Hvector,
    Indexed,
    Hindexed,
    IndexedBlock,
    HindexedBlock,
    Struct,
    Subarray,
    Darray,
    Resized,
    /// The parameterized Fortran types (MPI-4.1 §19.1.9): predefined
    /// types whose contents are the precision and range asked for.
    F90Real,
    F90Complex,
    F90Integer,
}

impl Combiner {
    /// Whether a type of this combiner is predefined (and so cannot be
    /// freed): a named type or a parameterized Fortran type.
    pub fn is_predefined(self) -> bool {
        matches!(
            self,
            Combiner::Named | Combiner::F90Real | Combiner::F90Complex | Combiner::F90Integer
        )
    }
}

/// The constructor and the arguments it was called with, as
/// `MPI_Type_get_contents` returns them: a `_c` constructor's
/// `MPI_Count` arguments are its large counts (MPI-4.1 §5.1.13), which
/// only `MPI_Type_get_contents_c` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub combiner: Combiner,
    pub ints: Vec<i32>,
    pub addrs: Vec<isize>,
    pub counts: Vec<i64>,
    pub types: Vec<Arc<Datatype>>,
}

impl Envelope {
    pub fn named() -> Self {
        Self::new(Combiner::Named, vec![], vec![], vec![])
    }

    pub fn new(
        combiner: Combiner,
        ints: Vec<i32>,
        addrs: Vec<isize>,
        types: Vec<Arc<Datatype>>,
    ) -> Self {
        Self {
            combiner,
            ints,
            addrs,
            counts: Vec::new(),
            types,
        }
    }
}

/// A datatype: predefined, or derived (committed or not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datatype {
    /// Bytes of data in one element (MPI "size").
    pub size: usize,
    /// Lower bound and extent (MPI "lb", "extent"): element `i` starts at
    /// `buf + i * extent`, and its blocks are relative to that start.
    pub lb: isize,
    pub extent: isize,
    /// Bounds of the data itself (MPI-4.0 §5.1.8, "true extent").
    pub true_lb: isize,
    pub true_extent: isize,
    /// Contiguous runs of one element's data, `(offset, length)`, in type
    /// map order; adjacent runs merged.
    pub blocks: Vec<(isize, usize)>,
    /// The same blocks grouped into strided runs (what packing walks).
    pub runs: Vec<Run>,
    /// The basic elements of one element in type map order, as runs of
    /// `(kind, count)`; adjacent runs of one kind merged.
    pub prims: Vec<(Prim, usize)>,
    /// Basic elements in one element.
    pub elements: usize,
    /// The basic element, when every basic element of the type is of the
    /// same kind (what a predefined reduction needs); `None` for a mix.
    pub elem: Option<Elem>,
    /// The strictest alignment of its basic elements (struct padding,
    /// MPI-4.0 §5.1.6).
    pub align: usize,
    pub envelope: Envelope,
    pub name: String,
    /// Usable in communication (predefined types always are).
    pub committed: bool,
    /// The entry layer's handle of a predefined type.
    pub predefined: Option<i32>,
}

/// `count` consecutive copies of `ty` starting at byte `disp`: the unit
/// every constructor is made of.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    pub disp: isize,
    pub count: usize,
    pub ty: &'a Datatype,
}

/// How an array is laid out (`MPI_ORDER_C`, `MPI_ORDER_FORTRAN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    C,
    Fortran,
}

/// How one dimension of a distributed array is split (MPI-4.0 §5.1.4);
/// `None` in a block size is `MPI_DISTRIBUTE_DFLT_DARG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrib {
    Block(Option<usize>),
    Cyclic(Option<usize>),
    None,
}

fn overflow() -> MpiError {
    MpiError::new(Class::Arg, "datatype size or bounds overflow")
}

fn mul(a: usize, b: usize) -> MpiResult<usize> {
    a.checked_mul(b).ok_or_else(overflow)
}

fn imul(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_mul(b).ok_or_else(overflow)
}

fn iadd(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_add(b).ok_or_else(overflow)
}

fn icast(a: usize) -> MpiResult<isize> {
    isize::try_from(a).map_err(|_| overflow())
}

/// Append a block, merging it with the last one when they touch.
fn push_block(blocks: &mut Vec<(isize, usize)>, off: isize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(last) = blocks.last_mut()
        && last.0 + last.1 as isize == off
    {
        last.1 += len;
        return;
    }
    blocks.push((off, len));
}

/// Append a run of basic elements, merging it with the last one of the
/// same kind.
fn push_prims(prims: &mut Vec<(Prim, usize)>, p: Prim, n: usize) {
    if n == 0 {
        return;
    }
    match prims.last_mut() {
        Some(last) if last.0 == p => last.1 += n,
        _ => prims.push((p, n)),
    }
}

/// Most blocks (or basic-element runs) a type map may flatten to: a guard
/// against a constructor call that would exhaust memory.
const MAX_BLOCKS: usize = 1 << 26;

/// The datatype made of `pieces`, in order; with `pad`, its extent is
/// rounded up to the strictest alignment of its basic elements (the
/// epsilon of MPI-4.0 §5.1.6, which the caller applies as MPICH does: to
/// structs of more than one kind of datatype, resized ones included).
pub fn compose(pieces: &[Piece<'_>], pad: bool, envelope: Envelope) -> MpiResult<Datatype> {
    let mut t = Datatype {
        size: 0,
        lb: 0,
        extent: 0,
        true_lb: 0,
        true_extent: 0,
        blocks: Vec::new(),
        runs: Vec::new(),
        prims: Vec::new(),
        elements: 0,
        elem: None,
        align: 1,
        envelope,
        name: String::new(),
        committed: false,
        predefined: None,
    };
    let mut bounds: Option<(isize, isize)> = None;
    let mut data: Option<(isize, isize)> = None;
    let mut elem: Option<Option<Elem>> = None;
    for p in pieces.iter().filter(|p| p.count > 0) {
        let ty = p.ty;
        let span = imul(icast(p.count - 1)?, ty.extent)?;
        let widen = |b: Option<(isize, isize)>, lo: isize, hi: isize| -> MpiResult<_> {
            let (lo, hi) = (
                iadd(iadd(p.disp, lo)?, span.min(0))?,
                iadd(iadd(p.disp, hi)?, span.max(0))?,
            );
            Ok(Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi)))))
        };
        bounds = widen(bounds, ty.lb, iadd(ty.lb, ty.extent)?)?;
        if ty.size > 0 {
            data = widen(data, ty.true_lb, iadd(ty.true_lb, ty.true_extent)?)?;
        }
        t.size = mul(ty.size, p.count)?
            .checked_add(t.size)
            .ok_or_else(overflow)?;
        t.elements = mul(ty.elements, p.count)?
            .checked_add(t.elements)
            .ok_or_else(overflow)?;
        t.align = t.align.max(ty.align);
        elem = Some(match elem {
            None => ty.elem,
            Some(e) if e == ty.elem => e,
            Some(_) => None,
        });
        append_copies(&mut t, p)?;
    }
    t.elem = elem.flatten();
    let (lb, ub) = bounds.unwrap_or((0, 0));
    let mut extent = ub - lb;
    if pad && t.align > 1 {
        let a = icast(t.align)?;
        extent = iadd(extent, (a - extent.rem_euclid(a)) % a)?;
    }
    (t.lb, t.extent) = (lb, extent);
    (t.true_lb, t.true_extent) = data.map_or((0, 0), |(l, h)| (l, h - l));
    t.runs = runs_of(&t.blocks);
    Ok(t)
}

/// Refuse to grow a list of `len` entries by `count` copies of `more`
/// beyond [`MAX_BLOCKS`].
fn check_growth(len: usize, more: usize, count: usize) -> MpiResult<()> {
    if mul(more, count)? > MAX_BLOCKS.saturating_sub(len) {
        return Err(MpiError::new(
            Class::NoMem,
            "datatype has too many non-contiguous blocks",
        ));
    }
    Ok(())
}

/// Append the blocks and basic elements of the copies of `p` to `t`.
fn append_copies(t: &mut Datatype, p: &Piece<'_>) -> MpiResult<()> {
    let ty = p.ty;
    match ty.blocks.as_slice() {
        [] => {}
        // Copies of a dense type are one run.
        &[(off, len)] if len as isize == ty.extent => {
            push_block(&mut t.blocks, iadd(p.disp, off)?, mul(len, p.count)?);
        }
        blocks => {
            check_growth(t.blocks.len(), blocks.len(), p.count)?;
            for k in 0..p.count {
                let base = iadd(p.disp, imul(k as isize, ty.extent)?)?;
                for &(off, len) in blocks {
                    push_block(&mut t.blocks, iadd(base, off)?, len);
                }
            }
        }
    }
    match ty.prims.as_slice() {
        [] => {}
        &[(prim, n)] => push_prims(&mut t.prims, prim, mul(n, p.count)?),
        prims => {
            check_growth(t.prims.len(), prims.len(), p.count)?;
            for _ in 0..p.count {
                for &(prim, n) in prims {
                    push_prims(&mut t.prims, prim, n);
                }
            }
        }
    }
    Ok(())
}

/// The global indices of one dimension of a distributed array that
/// process coordinate `coord` of `psize` owns, as `(start, length)` runs
/// (MPI-4.0 §5.1.4).
pub fn darray_runs(
    gsize: usize,
    distrib: Distrib,
    psize: usize,
    coord: usize,
) -> MpiResult<Vec<(usize, usize)>> {
    let bad = |m: &str| Err(MpiError::new(Class::Arg, m.to_string()));
    match distrib {
        Distrib::None => {
            if psize != 1 {
                return bad("MPI_DISTRIBUTE_NONE needs a process grid size of 1");
            }
            Ok(vec![(0, gsize)])
        }
        Distrib::Block(darg) => {
            let b = darg.unwrap_or(gsize.div_ceil(psize));
            if b == 0 || b.checked_mul(psize).is_none_or(|n| n < gsize) {
                return bad("block distribution does not cover the dimension");
            }
            let start = b * coord;
            let len = b.min(gsize.saturating_sub(start));
            Ok(if len > 0 { vec![(start, len)] } else { vec![] })
        }
        Distrib::Cyclic(darg) => {
            let b = darg.unwrap_or(1);
            if b == 0 {
                return bad("cyclic distribution with a block size of 0");
            }
            let step = mul(b, psize)?;
            Ok((mul(b, coord)?..gsize)
                .step_by(step)
                .map(|s| (s, b.min(gsize - s)))
                .collect())
        }
    }
}

impl Datatype {
    /// A predefined type: `size` (at most 255) contiguous bytes of kind
    /// `elem`.
    pub fn basic(size: usize, elem: Elem) -> Self {
        let s = u8::try_from(size).expect("a basic datatype is at most 255 bytes");
        Self::predefined_basic(size, Prim::new(s, s, false), elem)
    }

    /// A predefined basic type: one basic element `prim` of `size` bytes.
    pub fn predefined_basic(size: usize, prim: Prim, elem: Elem) -> Self {
        Self {
            size,
            lb: 0,
            extent: size as isize,
            true_lb: 0,
            true_extent: size as isize,
            blocks: if size == 0 { vec![] } else { vec![(0, size)] },
            runs: runs_of(&[(0, size)][..usize::from(size > 0)]),
            prims: if size == 0 { vec![] } else { vec![(prim, 1)] },
            elements: usize::from(size > 0),
            elem: Some(elem),
            align: usize::from(prim.unit).clamp(1, 16),
            envelope: Envelope::named(),
            name: String::new(),
            committed: true,
            predefined: None,
        }
    }

    /// `MPI_Type_create_resized` (MPI-4.0 §5.1.7).
    pub fn resized(old: &Arc<Datatype>, lb: isize, extent: isize) -> Self {
        Self {
            lb,
            extent,
            envelope: Envelope::new(
                Combiner::Resized,
                vec![],
                vec![lb, extent],
                vec![old.clone()],
            ),
            name: String::new(),
            committed: false,
            predefined: None,
            ..Datatype::clone(old)
        }
    }

    /// The parameterized Fortran type of `combiner` with arguments `ints`
    /// (`r` for an integer, `p` and `r` for a real or complex kind) that
    /// predefined type `base` holds (MPI-4.1 §19.1.9): the same type map,
    /// committed, with those contents.
    pub fn f90(base: &Datatype, combiner: Combiner, ints: Vec<i32>) -> Self {
        Self {
            envelope: Envelope::new(combiner, ints, vec![], vec![]),
            committed: true,
            predefined: None,
            ..base.clone()
        }
    }

    /// `MPI_Type_dup` (MPI-4.0 §5.1.10): the same type, with the same
    /// committed state.
    pub fn dup(old: &Arc<Datatype>) -> Self {
        Self {
            envelope: Envelope::new(Combiner::Dup, vec![], vec![], vec![old.clone()]),
            name: String::new(),
            committed: old.committed,
            predefined: None,
            ..Datatype::clone(old)
        }
    }

    /// The `ndims`-dimensional array type whose dimension `k` (in
    /// `order`) has `sizes[k]` elements of `old`, of which the indices in
    /// `runs[k]` are selected: the type map of subarrays and distributed
    /// arrays (MPI-4.0 §5.1.3, §5.1.4). Its bounds are the whole array's.
    pub fn grid(
        sizes: &[usize],
        runs: &[Vec<(usize, usize)>],
        order: Order,
        old: &Datatype,
        envelope: Envelope,
    ) -> MpiResult<Self> {
        // Dimensions from the slowest varying in memory to the fastest.
        let mut dims: Vec<(usize, &[(usize, usize)])> = sizes
            .iter()
            .copied()
            .zip(runs.iter().map(Vec::as_slice))
            .collect();
        if order == Order::Fortran {
            dims.reverse();
        }
        let Some(&(_, inner)) = dims.last() else {
            return Err(MpiError::new(Class::Arg, "an array of no dimension"));
        };
        let pieces: Vec<Piece<'_>> = inner
            .iter()
            .map(|&(s, len)| {
                Ok(Piece {
                    disp: imul(icast(s)?, old.extent)?,
                    count: len,
                    ty: old,
                })
            })
            .collect::<MpiResult<_>>()?;
        let mut t = compose(&pieces, false, Envelope::named())?;
        let mut stride = old.extent;
        for k in (0..dims.len() - 1).rev() {
            // The bytes of one index of dimension `k`.
            stride = imul(stride, icast(dims[k + 1].0)?)?;
            let sel = dims[k].1;
            let pieces: Vec<Piece<'_>> = sel
                .iter()
                .flat_map(|&(s, len)| s..s + len)
                .map(|i| {
                    Ok(Piece {
                        disp: imul(icast(i)?, stride)?,
                        count: 1,
                        ty: &t,
                    })
                })
                .collect::<MpiResult<_>>()?;
            t = compose(&pieces, false, Envelope::named())?;
        }
        let total = sizes.iter().try_fold(1usize, |a, &s| mul(a, s))?;
        t.lb = 0;
        t.extent = imul(icast(total)?, old.extent)?;
        t.envelope = envelope;
        Ok(t)
    }

    /// Whether `count` elements are `count * size` contiguous bytes at the
    /// buffer's address.
    pub fn is_contiguous(&self) -> bool {
        match self.blocks.as_slice() {
            [] => true,
            [(0, len)] => *len as isize == self.extent,
            _ => false,
        }
    }

    /// Bytes of data in `count` elements, or `None` on overflow.
    pub fn bytes(&self, count: usize) -> Option<usize> {
        self.size.checked_mul(count)
    }

    /// The lowest address `count` elements at `buf` touch, relative to
    /// `buf` (`None` when they hold no data).
    pub fn lowest_offset(&self, count: usize) -> Option<isize> {
        if count == 0 || self.size == 0 {
            return None;
        }
        let span = (count as isize - 1).saturating_mul(self.extent);
        Some(self.true_lb.saturating_add(span.min(0)))
    }

    /// Basic elements wholly in `bytes` of packed data: whole elements,
    /// then the basic elements of the last partial one, a basic element
    /// cut short not counted (MPI-4.0 §5.1.11, `MPI_Get_elements`, as
    /// MPICH counts); `None` on overflow.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        let mut n = (bytes / self.size).checked_mul(self.elements)?;
        let mut rest = bytes % self.size;
        for &(p, k) in &self.prims {
            let size = usize::from(p.size);
            let take = (rest / size).min(k);
            n += take;
            rest -= take * size;
            if take < k {
                break;
            }
        }
        Some(n)
    }

    /// Bytes of packed data of the first `n` basic elements of a sequence
    /// of elements (`MPI_Status_set_elements`); `None` when the type has
    /// no basic element but `n > 0`, or on overflow.
    pub fn bytes_of_elements(&self, n: usize) -> Option<usize> {
        if n == 0 {
            return Some(0);
        }
        let per = self.elements;
        let mut bytes = (n / per.max(1)).checked_mul(self.size)?;
        let mut rest = n.checked_rem(per)?;
        for &(p, k) in &self.prims {
            let take = rest.min(k);
            bytes += take * usize::from(p.size);
            rest -= take;
        }
        Some(bytes)
    }

    /// Bytes of `count` elements in external32 (MPI-4.0 §13.5.2).
    pub fn external_size(&self, count: usize) -> Option<usize> {
        let per: usize = self
            .prims
            .iter()
            .map(|&(p, k)| usize::from(p.ext) * k)
            .sum();
        per.checked_mul(count)
    }

    /// The data of `count` elements at `buf` as pieces of memory, in type
    /// map order, adjacent pieces merged (also across elements): what the
    /// engine moves without packing. A null `buf` is `MPI_BOTTOM`, as for
    /// [`Datatype::pack`]. The pointers are only computed here, never
    /// dereferenced.
    pub fn pieces(&self, buf: *const u8, count: usize) -> Vec<shm_engine::Piece> {
        let mut out: Vec<shm_engine::Piece> = Vec::new();
        let total = self.size.saturating_mul(count);
        self.walk(count, total, |off, _, len| {
            let at = address(buf, off).cast_mut();
            match out.last_mut() {
                Some(p) if p.ptr.wrapping_add(p.len) == at => p.len += len,
                _ => out.push(shm_engine::Piece::new(at, len)),
            }
        });
        out
    }

    /// Gather the data of `count` elements at `src` into `dst`
    /// (`dst.len() == count * size`).
    ///
    /// # Safety
    /// `src` addresses `count` elements of this type (every block of every
    /// element is readable); a null `src` is `MPI_BOTTOM` and the blocks
    /// are at exposed absolute addresses.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: &mut [u8]) {
        debug_assert_eq!(Some(dst.len()), self.bytes(count));
        let out = dst.as_mut_ptr();
        // SAFETY: every block lies in one of the `count` elements (the
        // caller's promise); `walk` stays within `dst.len()` packed bytes.
        self.walk(count, dst.len(), |off, at, len| unsafe {
            shm_engine::copy::bytes(address(src, off), out.add(at), len)
        });
    }

    /// Scatter packed data `src` (`count * size` bytes, or fewer for a
    /// short message: only whole bytes received are written) into `count`
    /// elements at `dst`.
    ///
    /// # Safety
    /// `dst` addresses `count` writable elements of this type (null is
    /// `MPI_BOTTOM`, as for [`Datatype::pack`]).
    pub unsafe fn unpack(&self, src: &[u8], count: usize, dst: *mut u8) {
        let input = src.as_ptr();
        // SAFETY: every block lies in one of the `count` elements (the
        // caller's promise); `walk` stays within `src.len()` packed bytes.
        self.walk(count, src.len(), |off, at, len| unsafe {
            shm_engine::copy::bytes(input.add(at), address(dst, off).cast_mut(), len)
        });
    }

    /// Call `copy(offset, packed_at, length)` for the blocks of `count`
    /// elements in type map order, stopping after `limit` packed bytes
    /// (the last block cut short). Contiguous elements are one copy;
    /// strided runs of 4-, 8- and 16-byte blocks get copies of constant
    /// length, which the compiler turns into moves.
    #[inline(always)]
    fn walk(&self, count: usize, limit: usize, mut copy: impl FnMut(isize, usize, usize)) {
        if self.is_contiguous() {
            let n = self.size.saturating_mul(count).min(limit);
            if n > 0 {
                copy(0, 0, n);
            }
            return;
        }
        let mut at = 0;
        for i in 0..count {
            let base = i as isize * self.extent;
            for r in &self.runs {
                let whole = r.count.min((limit - at) / r.len);
                let off = base + r.off;
                match r.len {
                    4 => strided::<4>(&mut copy, off, r.stride, whole, at),
                    8 => strided::<8>(&mut copy, off, r.stride, whole, at),
                    16 => strided::<16>(&mut copy, off, r.stride, whole, at),
                    len => {
                        for k in 0..whole {
                            copy(off + k as isize * r.stride, at + k * len, len);
                        }
                    }
                }
                at += whole * r.len;
                if whole < r.count {
                    if at < limit {
                        copy(off + whole as isize * r.stride, at, limit - at);
                    }
                    return;
                }
            }
        }
    }

    /// Convert `count` packed elements to external32: big-endian, with the
    /// standard's sizes (MPI-4.0 §13.5.2). An integer narrower in
    /// external32 (`long` is 4 bytes there) that does not fit is
    /// `MPI_ERR_CONVERSION`.
    pub fn to_external(&self, packed: &[u8], count: usize, out: &mut [u8]) -> MpiResult<()> {
        let (mut i, mut o) = (0, 0);
        for _ in 0..count {
            for &(p, k) in &self.prims {
                for _ in 0..k {
                    let (size, ext) = (usize::from(p.size), usize::from(p.ext));
                    let src = &packed[i..i + size];
                    let dst = &mut out[o..o + ext];
                    if ext == size {
                        for (d, s) in dst
                            .chunks_exact_mut(usize::from(p.unit))
                            .zip(src.chunks_exact(usize::from(p.unit)))
                        {
                            d.iter_mut().zip(s.iter().rev()).for_each(|(d, s)| *d = *s);
                        }
                    } else {
                        narrow(src, dst, p.signed)?;
                    }
                    (i, o) = (i + size, o + ext);
                }
            }
        }
        Ok(())
    }

    /// The inverse of [`Datatype::to_external`].
    pub fn from_external(&self, ext: &[u8], count: usize, packed: &mut [u8]) {
        let (mut i, mut o) = (0, 0);
        for _ in 0..count {
            for &(p, k) in &self.prims {
                for _ in 0..k {
                    let (size, esize) = (usize::from(p.size), usize::from(p.ext));
                    let src = &ext[i..i + esize];
                    let dst = &mut packed[o..o + size];
                    if esize == size {
                        for (d, s) in dst
                            .chunks_exact_mut(usize::from(p.unit))
                            .zip(src.chunks_exact(usize::from(p.unit)))
                        {
                            d.iter_mut().zip(s.iter().rev()).for_each(|(d, s)| *d = *s);
                        }
                    } else {
                        widen(src, dst, p.signed);
                    }
                    (i, o) = (i + esize, o + size);
                }
            }
        }
    }
}

/// `n` blocks of `N` bytes, `stride` apart from `off`, packed from `at`.
#[inline(always)]
fn strided<const N: usize>(
    copy: &mut impl FnMut(isize, usize, usize),
    off: isize,
    stride: isize,
    n: usize,
    at: usize,
) {
    for k in 0..n {
        copy(off + k as isize * stride, at + k * N, N);
    }
}

/// Group blocks into strided runs.
fn runs_of(blocks: &[(isize, usize)]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for &(off, len) in blocks {
        if let Some(r) = runs.last_mut()
            && r.len == len
            && (r.count == 1 || off - (r.off + (r.count as isize - 1) * r.stride) == r.stride)
        {
            if r.count == 1 {
                r.stride = off - r.off;
            }
            r.count += 1;
            continue;
        }
        runs.push(Run {
            off,
            len,
            stride: 0,
            count: 1,
        });
    }
    runs
}

/// A native integer (`src`, up to 8 bytes) as a narrower big-endian one.
fn narrow(src: &[u8], dst: &mut [u8], signed: bool) -> MpiResult<()> {
    let mut b = [0u8; 8];
    b[..src.len()].copy_from_slice(src);
    let v = i64::from_ne_bytes(b);
    let bits = 8 * dst.len() as u32;
    let fits = if signed {
        let v = (v << (64 - 8 * src.len() as u32)) >> (64 - 8 * src.len() as u32);
        (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&v)
    } else {
        (v as u64) < (1u64 << bits)
    };
    if !fits {
        return Err(MpiError::new(
            Class::Conversion,
            "value does not fit its external32 representation",
        ));
    }
    dst.copy_from_slice(&v.to_be_bytes()[8 - dst.len()..]);
    Ok(())
}

/// A big-endian integer (`src`) as a wider native one.
fn widen(src: &[u8], dst: &mut [u8], signed: bool) {
    let mut b = [0u8; 8];
    b[8 - src.len()..].copy_from_slice(src);
    let shift = 64 - 8 * src.len() as u32;
    let v = i64::from_be_bytes(b) << shift;
    let v = if signed {
        v >> shift
    } else {
        ((v as u64) >> shift) as i64
    };
    dst.copy_from_slice(&v.to_ne_bytes()[..dst.len()]);
}

/// The address `off` bytes from `base`; from `MPI_BOTTOM` (null), the
/// absolute address `off`, which `MPI_Get_address` exposed.
fn address(base: *const u8, off: isize) -> *const u8 {
    if base.is_null() {
        std::ptr::with_exposed_provenance(off as usize)
    } else {
        base.wrapping_offset(off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Datatype {
        Datatype::predefined_basic(4, Prim::new(4, 4, true), Elem::I32)
    }

    fn double() -> Datatype {
        Datatype::predefined_basic(8, Prim::new(8, 8, false), Elem::F64)
    }

    fn char() -> Datatype {
        Datatype::predefined_basic(1, Prim::new(1, 1, false), Elem::I8)
    }

    fn long() -> Datatype {
        let mut p = Prim::new(8, 8, true);
        p.ext = 4;
        Datatype::predefined_basic(8, p, Elem::I64)
    }

    /// `MPI_Type_vector`, by element strides.
    fn vector(count: usize, bl: usize, stride: isize, old: &Datatype) -> Datatype {
        let pieces: Vec<_> = (0..count as isize)
            .map(|i| Piece {
                disp: i * stride * old.extent,
                count: bl,
                ty: old,
            })
            .collect();
        compose(&pieces, false, Envelope::named()).unwrap()
    }

    fn strukt(parts: &[(isize, usize, &Datatype)]) -> Datatype {
        let pieces: Vec<_> = parts
            .iter()
            .map(|&(disp, count, ty)| Piece { disp, count, ty })
            .collect();
        compose(&pieces, true, Envelope::named()).unwrap()
    }

    fn round_trip(t: &Datatype, count: usize, span: usize) -> (Vec<u8>, Vec<u8>) {
        let src: Vec<u8> = (0..span).map(|i| i as u8).collect();
        let mut packed = vec![0; t.size * count];
        // SAFETY: `span` bytes cover `count` elements of `t` (callers).
        unsafe { t.pack(src.as_ptr(), count, &mut packed) };
        let mut back = vec![0xee; span];
        // SAFETY: as above.
        unsafe { t.unpack(&packed, count, back.as_mut_ptr()) };
        (packed, back)
    }

    #[test]
    fn vector_of_vector_flattens_in_order() {
        let inner = vector(2, 1, 3, &int());
        assert_eq!(inner.blocks, vec![(0, 4), (12, 4)]);
        assert_eq!((inner.lb, inner.extent, inner.size), (0, 16, 8));
        let outer = vector(2, 1, 2, &inner);
        assert_eq!(outer.blocks, vec![(0, 4), (12, 4), (32, 4), (44, 4)]);
        let run = |off, count| Run {
            off,
            len: 4,
            stride: 12,
            count,
        };
        assert_eq!(outer.runs, vec![run(0, 2), run(32, 2)]);
        assert_eq!((outer.extent, outer.size, outer.elements), (48, 16, 4));
        assert_eq!((outer.true_lb, outer.true_extent), (0, 48));
        assert_eq!(outer.elem, Some(Elem::I32));
        let (packed, back) = round_trip(&outer, 2, 96);
        assert_eq!(&packed[..8], &[0, 1, 2, 3, 12, 13, 14, 15]);
        assert_eq!(&packed[16..20], &[48, 49, 50, 51]);
        assert_eq!(&back[44..48], &[44, 45, 46, 47]);
        assert_eq!(back[4], 0xee);
    }

    #[test]
    fn pieces_merge_across_elements_and_keep_absolute_addresses() {
        let v = vector(3, 1, 2, &int());
        assert_eq!(v.extent, 20);
        let buf = [0u8; 64];
        let at = |off: usize| buf.as_ptr().wrapping_add(off).cast_mut();
        let got: Vec<_> = v
            .pieces(buf.as_ptr(), 2)
            .iter()
            .map(|p| (p.ptr, p.len))
            .collect();
        // Element 1's first block follows element 0's last one.
        let want = [
            (at(0), 4),
            (at(8), 4),
            (at(16), 8),
            (at(28), 4),
            (at(36), 4),
        ];
        assert_eq!(got, want);
        // MPI_BOTTOM: the displacements are the addresses.
        let bottom = v.pieces(std::ptr::null(), 1);
        assert_eq!(bottom[1].ptr as usize, 8);
        assert!(v.pieces(buf.as_ptr(), 0).is_empty());
    }

    #[test]
    fn adjacent_blocks_merge_through_nesting() {
        let c = vector(3, 2, 2, &int());
        assert_eq!(c.blocks, vec![(0, 24)]);
        assert!(c.is_contiguous());
        let cc = vector(1000, 1, 1, &c);
        assert_eq!(cc.blocks, vec![(0, 24_000)]);
        assert_eq!(cc.prims, vec![(int().prims[0].0, 6000)]);
        assert!(cc.is_contiguous());
    }

    #[test]
    fn struct_with_gaps_is_padded_to_its_alignment() {
        let (c, d, i) = (char(), double(), int());
        let s = strukt(&[(0, 1, &c), (8, 1, &d), (16, 1, &i)]);
        assert_eq!(s.blocks, vec![(0, 1), (8, 12)]);
        assert_eq!((s.size, s.lb, s.extent), (13, 0, 24));
        assert_eq!((s.true_lb, s.true_extent), (0, 20));
        assert_eq!((s.elements, s.elem), (3, None));
        // {double; int}: MPI_DOUBLE_INT's layout.
        let di = strukt(&[(0, 1, &d), (8, 1, &i)]);
        assert_eq!((di.size, di.extent), (12, 16));
        // Resized members do not prevent padding (as in MPICH).
        let r = Datatype::resized(&Arc::new(i.clone()), 0, 5);
        let s = strukt(&[(0, 1, &d), (8, 1, &r)]);
        assert_eq!(s.extent, 16);
        let (packed, back) = round_trip(&strukt(&[(0, 1, &c), (8, 1, &d), (16, 1, &i)]), 2, 48);
        assert_eq!(packed[1..3], [8, 9]);
        assert_eq!(packed[13], 24);
        assert_eq!(&back[24..25], &[24]);
        assert_eq!(back[25], 0xee);
    }

    #[test]
    fn resized_moves_bounds_only() {
        let r = Datatype::resized(&Arc::new(int()), -4, 12);
        assert_eq!((r.lb, r.extent, r.true_lb, r.true_extent), (-4, 12, 0, 4));
        assert_eq!(r.envelope.combiner, Combiner::Resized);
        assert!(!r.committed);
        let two = vector(2, 1, 1, &r);
        assert_eq!(two.blocks, vec![(0, 4), (12, 4)]);
        assert_eq!((two.lb, two.extent), (-4, 24));
    }

    #[test]
    fn subarray_in_c_and_fortran_order() {
        let runs = [vec![(1, 2)], vec![(1, 3)]];
        let c = Datatype::grid(&[4, 5], &runs, Order::C, &int(), Envelope::named()).unwrap();
        assert_eq!(c.blocks, vec![(24, 12), (44, 12)]);
        assert_eq!((c.lb, c.extent, c.size), (0, 80, 24));
        assert_eq!((c.true_lb, c.true_extent), (24, 32));
        let f = Datatype::grid(&[4, 5], &runs, Order::Fortran, &int(), Envelope::named()).unwrap();
        assert_eq!(f.blocks, vec![(20, 8), (36, 8), (52, 8)]);
        assert_eq!((f.lb, f.extent, f.size), (0, 80, 24));
        let (packed, _) = round_trip(&c, 1, 80);
        assert_eq!(&packed[..4], &[24, 25, 26, 27]);
        assert_eq!(&packed[12..16], &[44, 45, 46, 47]);
    }

    #[test]
    fn darray_distributions() {
        assert_eq!(
            darray_runs(10, Distrib::Cyclic(Some(2)), 3, 1).unwrap(),
            vec![(2, 2), (8, 2)]
        );
        assert_eq!(
            darray_runs(10, Distrib::Block(None), 3, 2).unwrap(),
            vec![(8, 2)]
        );
        assert_eq!(darray_runs(4, Distrib::Block(None), 8, 7).unwrap(), vec![]);
        assert_eq!(
            darray_runs(5, Distrib::Block(Some(1)), 2, 0)
                .unwrap_err()
                .code,
            Class::Arg
        );
        assert!(darray_runs(5, Distrib::None, 2, 0).is_err());
        let runs = [
            darray_runs(4, Distrib::Block(None), 2, 1).unwrap(),
            darray_runs(4, Distrib::Block(None), 2, 1).unwrap(),
        ];
        let t = Datatype::grid(&[4, 4], &runs, Order::C, &int(), Envelope::named()).unwrap();
        assert_eq!(t.blocks, vec![(40, 8), (56, 8)]);
        assert_eq!(t.extent, 64);
        let runs = [darray_runs(10, Distrib::Cyclic(Some(2)), 3, 1).unwrap()];
        let t = Datatype::grid(&[10], &runs, Order::C, &int(), Envelope::named()).unwrap();
        assert_eq!(t.blocks, vec![(8, 8), (32, 8)]);
        assert_eq!(t.extent, 40);
    }

    #[test]
    fn partial_unpack_writes_only_what_arrived() {
        let t = vector(3, 1, 2, &int());
        let packed: Vec<u8> = (1..=6).collect();
        let mut dst = [0u8; 24];
        // SAFETY: one element of extent 20 in 24 bytes.
        unsafe { t.unpack(&packed, 1, dst.as_mut_ptr()) };
        assert_eq!(&dst[..4], &[1, 2, 3, 4]);
        assert_eq!(&dst[8..12], &[5, 6, 0, 0]);
    }

    #[test]
    fn short_message_stops_inside_a_strided_run() {
        let t = vector(5, 1, 2, &double());
        assert_eq!(t.runs.len(), 1);
        let packed: Vec<u8> = (1..=20).collect();
        let mut dst = [0u8; 80];
        // SAFETY: one element of extent 72 in 80 bytes.
        unsafe { t.unpack(&packed, 1, dst.as_mut_ptr()) };
        assert_eq!(&dst[..8], &packed[..8]);
        assert_eq!(&dst[16..24], &packed[8..16]);
        assert_eq!(&dst[32..36], &packed[16..20]);
        assert_eq!(&dst[36..], &[0; 44]);
        assert_eq!(&dst[8..16], &[0; 8]);
    }

    #[test]
    fn elements_of_partial_messages() {
        let (c, d, i) = (char(), double(), int());
        let s = strukt(&[(0, 1, &c), (8, 1, &d), (16, 1, &i)]);
        assert_eq!(s.elements_in(13), Some(3));
        assert_eq!(s.elements_in(13 + 9), Some(5));
        assert_eq!(s.elements_in(13 + 5), Some(4));
        assert_eq!(s.elements_in(0), Some(0));
        assert_eq!(s.bytes_of_elements(5), Some(22));
        assert_eq!(s.bytes_of_elements(6), Some(26));
        let empty = vector(0, 1, 1, &i);
        assert_eq!(empty.bytes_of_elements(1), None);
        assert_eq!(empty.elements_in(0), Some(0));
    }

    #[test]
    fn external32_is_big_endian_with_standard_sizes() {
        let (l, d) = (long(), double());
        let s = strukt(&[(0, 1, &l), (8, 1, &d)]);
        assert_eq!(s.external_size(2), Some(24));
        let mut native = Vec::new();
        for (a, b) in [(-2i64, 1.5f64), (7, -0.25)] {
            native.extend_from_slice(&a.to_ne_bytes());
            native.extend_from_slice(&b.to_ne_bytes());
        }
        let mut ext = vec![0; 24];
        s.to_external(&native, 2, &mut ext).unwrap();
        assert_eq!(&ext[..4], &(-2i32).to_be_bytes());
        assert_eq!(&ext[4..12], &1.5f64.to_be_bytes());
        let mut back = vec![0; 32];
        s.from_external(&ext, 2, &mut back);
        assert_eq!(back, native);
        let big = (1i64 << 40).to_ne_bytes();
        let mut out = [0; 4];
        assert_eq!(
            l.to_external(&big, 1, &mut out).unwrap_err().code,
            Class::Conversion
        );
    }

    #[test]
    fn mpi_bottom_uses_absolute_addresses() {
        let data = [5u32, 6, 7];
        let addr = data.as_ptr().expose_provenance() as isize;
        let i = int();
        let t = strukt(&[(addr, 1, &i), (addr + 8, 1, &i)]);
        let mut packed = [0u8; 8];
        // SAFETY: both blocks are in `data`, whose address is exposed.
        unsafe { t.pack(std::ptr::null(), 1, &mut packed) };
        assert_eq!(packed[..4], 5u32.to_ne_bytes());
        assert_eq!(packed[4..], 7u32.to_ne_bytes());
        assert!(t.lowest_offset(1).unwrap() >= 4096);
    }
}
