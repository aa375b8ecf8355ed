//! Datatypes (MPI-4.0 chapter 5): handles and arguments, the type
//! constructors, their queries, and addresses; the predefined types in
//! [`builtin`], packing in [`pack`], the elements a status counts in
//! [`elements`].
//!
//! Derived types live in the runtime's datatype table and get MPICH
//! "direct" handles of their slot (from [`core::FIRST_DERIVED_TYPE`] on,
//! clear of the predefined pair types, which MPICH gives direct handles
//! 0 to 4). Predefined types are built once, on first use.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::OnceLock;

pub(super) mod builtin;
pub(super) mod elements;
pub(super) mod envelope;
pub(super) mod pack;

use super::counts::{self, Count, CountOut, large_count};
use super::*;
use crate::abi::{MPI_Aint, MPI_Count};
use crate::core::datatype::{Combiner, Distrib, Envelope, Order, Piece, Prim, compose};
use crate::core::datatype::{Datatype as Type, darray_runs};
use crate::ops::Elem;
pub(super) use builtin::predefined;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Type_size(MPI_Datatype datatype, int *size)",
    "int MPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size)",
    "int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)",
    "int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[], const MPI_Count array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[], const MPI_Count array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength, const MPI_Count array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength, const MPI_Count array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype)",
    "int MPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[], const MPI_Count array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype)",
    "int MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[], const int array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[], const MPI_Count array_of_subsizes[], const MPI_Count array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[], const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[], const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)",
    "int MPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent, MPI_Datatype *newtype)",
    "int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_commit(MPI_Datatype *datatype)",
    "int MPI_Type_free(MPI_Datatype *datatype)",
    "int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)",
    "int MPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)",
    "int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)",
    "int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)",
    "int MPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)",
    "int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)",
    "int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses, int *num_datatypes, int *combiner)",
    "int MPI_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers, MPI_Count *num_addresses, MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)",
    "int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])",
    "int MPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses, MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[])",
    "int MPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type, MPI_Datatype *pair_type)",
    "int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)",
    "int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)",
    "int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)",
    "int MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)",
    "int MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)",
    "int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)",
    "int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position, MPI_Comm comm)",
    "int MPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize, MPI_Count *position, MPI_Comm comm)",
    "int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype, MPI_Comm comm)",
    "int MPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)",
    "int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)",
    "int MPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size)",
    "int MPI_Pack_external(const char *datarep, const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position)",
    "int MPI_Pack_external_c(const char *datarep, const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize, MPI_Count *position)",
    "int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)",
    "int MPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount, MPI_Datatype datatype)",
    "int MPI_Pack_external_size(const char *datarep, int incount, MPI_Datatype datatype, MPI_Aint *size)",
    "int MPI_Pack_external_size_c(const char *datarep, MPI_Count incount, MPI_Datatype datatype, MPI_Count *size)",
    "int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)",
    "int MPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)",
    "int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)",
    "int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)",
    "int MPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)",
    "int MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)",
    "int MPI_Get_address(const void *location, MPI_Aint *address)",
    "MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)",
    "MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)",
];

// ---------------------------------------------------------------------
// Handles and arguments.

/// The table slot of a derived type's handle.
fn derived_slot(rt: &Runtime, h: MPI_Datatype) -> MpiResult<usize> {
    if predefined(h).is_some() {
        return Err(err(Class::Type, format!("{h:#x} is a predefined datatype")));
    }
    abi::direct_index(Kind::Datatype, h)
        .filter(|&i| i >= core::FIRST_DERIVED_TYPE && rt.types.get(i).is_some())
        .ok_or_else(|| err(Class::Type, format!("invalid datatype {h:#x}")))
}

/// The handle of `t` to give the application: a predefined type's own
/// (a parameterized Fortran type's included), or a new handle of a
/// derived one.
fn handle_of(rt: &mut Runtime, t: &Arc<Type>) -> MPI_Datatype {
    let e = &t.envelope;
    let f90 = (t.predefined.is_none() && e.combiner.is_predefined())
        .then(|| rt.f90_types.get(&(e.combiner, e.ints.clone())).copied())
        .flatten();
    match (t.predefined, f90) {
        (Some(h), _) => h,
        // A parameterized Fortran type is predefined: its one handle.
        (None, Some(slot)) => abi::direct_handle(Kind::Datatype, slot),
        (None, None) => abi::direct_handle(Kind::Datatype, rt.types.insert(t.clone())),
    }
}

/// Store a new derived type and write its handle.
unsafe fn create(rt: &mut Runtime, t: Type, newtype: *mut MPI_Datatype) -> MpiResult<()> {
    if newtype.is_null() {
        return Err(err(Class::Arg, "null newtype"));
    }
    let h = abi::direct_handle(Kind::Datatype, rt.types.insert(Arc::new(t)));
    // SAFETY: non-null output argument.
    unsafe { out(newtype, h) }
}

/// A checked count argument.
fn count(n: MPI_Count) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err(Class::Count, format!("negative count {n}")))
}

/// A checked block length (a count, for its error class, as in MPICH).
fn blocklength(n: MPI_Count) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err(Class::Count, format!("negative blocklength {n}")))
}

/// A checked non-negative argument other than a count.
fn nonneg(n: impl Into<i64> + Copy + std::fmt::Display, what: &str) -> MpiResult<usize> {
    usize::try_from(n.into()).map_err(|_| err(Class::Arg, format!("negative {what} {n}")))
}

/// The caller's array of `n` elements.
///
/// # Safety
/// A non-null `p` addresses `n` readable elements (MPI contract).
unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(Class::Arg, format!("null {what} array")));
    }
    // SAFETY: non-null, `n` elements (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn order(o: c_int) -> MpiResult<Order> {
    match o {
        abi::MPI_ORDER_C => Ok(Order::C),
        abi::MPI_ORDER_FORTRAN => Ok(Order::Fortran),
        o => Err(err(Class::Arg, format!("invalid array order {o}"))),
    }
}

/// A constructor's arguments as its envelope records them, in the order
/// of its C signature (MPI-4.1 §5.1.13, Table 5.1): the `int` form keeps
/// integers and addresses; the `_c` form keeps its `MPI_Count`
/// arguments, counts and addresses alike, as large counts, and only its
/// `int` arguments as integers.
struct Args {
    large: bool,
    ints: Vec<c_int>,
    addrs: Vec<isize>,
    counts: Vec<MPI_Count>,
}

impl Args {
    /// The arguments of a constructor whose counts are `C`.
    fn of<C: Count>() -> Self {
        Self {
            large: C::LARGE,
            ints: Vec::new(),
            addrs: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// `int` arguments in either form (dimensions, orders,
    /// distributions).
    fn int(mut self, v: &[c_int]) -> Self {
        self.ints.extend_from_slice(v);
        self
    }

    /// Counts: `int` or `MPI_Count`, as the form takes them.
    fn count(mut self, v: &[MPI_Count]) -> Self {
        if self.large {
            self.counts.extend_from_slice(v);
        } else {
            // The `int` form's counts came in as `int`.
            self.ints.extend(v.iter().map(|&n| n as c_int));
        }
        self
    }

    /// Byte displacements and bounds: `MPI_Aint` in the `int` form,
    /// `MPI_Count` in the `_c` one.
    fn addr(mut self, v: &[MPI_Aint]) -> Self {
        if self.large {
            self.counts.extend_from_slice(v);
        } else {
            self.addrs.extend(v.iter().map(|&a| a as isize));
        }
        self
    }

    fn envelope(self, combiner: Combiner, types: Vec<Arc<Type>>) -> Envelope {
        Envelope {
            combiner,
            ints: self.ints,
            addrs: self.addrs,
            counts: self.counts,
            types,
        }
    }
}

// ---------------------------------------------------------------------
// Constructors (MPI-4.0 §5.1.2-§5.1.7, §5.1.10), each with its `_c`
// form of MPI-4.0 §5.1 (large counts).

/// The type made of blocks of `old`: `(byte displacement, blocklength)`.
fn blocks_of(
    blocks: &[(isize, MPI_Count)],
    old: &Arc<Type>,
    envelope: Envelope,
) -> MpiResult<Type> {
    let pieces = blocks
        .iter()
        .map(|&(disp, n)| {
            Ok(Piece {
                disp,
                count: blocklength(n)?,
                ty: old,
            })
        })
        .collect::<MpiResult<Vec<_>>>()?;
    compose(&pieces, false, envelope)
}

/// The blocks of a vector: `n` of `blocklength`, `step` bytes apart.
fn strided(n: usize, step: isize, blocklength: MPI_Count) -> MpiResult<Vec<(isize, MPI_Count)>> {
    (0..n as isize)
        .map(|i| {
            i.checked_mul(step)
                .map(|d| (d, blocklength))
                .ok_or_else(|| err(Class::Arg, "stride overflows"))
        })
        .collect()
}

/// Element displacements in bytes of `old`.
fn scaled(disp: MPI_Count, old: &Type) -> MpiResult<isize> {
    isize::try_from(disp)
        .ok()
        .and_then(|d| d.checked_mul(old.extent))
        .ok_or_else(|| err(Class::Arg, "displacement overflows"))
}

/// Run a constructor: look up `oldtype`, build, store in `newtype`.
///
/// # Safety
/// `newtype` is null or writable (MPI contract).
unsafe fn construct(
    name: &str,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    build: impl FnOnce(&Arc<Type>) -> MpiResult<Type>,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let old = super::datatype(rt, oldtype)?;
        let t = build(&old.to_arc())?;
        // SAFETY: forwarded from the caller.
        unsafe { create(rt, t, newtype) }
    })
}

large_count! {
    fn MPI_Type_contiguous / MPI_Type_contiguous_c(
        n: C,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let n = n.get();
        let build = |old: &Arc<Type>| {
            let env = Args::of::<C>()
                .count(&[n])
                .envelope(Combiner::Contiguous, vec![old.clone()]);
            count(n)?;
            blocks_of(&[(0, n)], old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_vector / MPI_Type_vector_c(
        n: C,
        bl: C,
        stride: C,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let (n, bl, stride) = (n.get(), bl.get(), stride.get());
        let build = |old: &Arc<Type>| {
            let env = Args::of::<C>()
                .count(&[n, bl, stride])
                .envelope(Combiner::Vector, vec![old.clone()]);
            let step = scaled(stride, old)?;
            blocks_of(&strided(count(n)?, step, bl)?, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_hvector / MPI_Type_create_hvector_c(
        n: C,
        bl: C,
        stride: MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let (n, bl) = (n.get(), bl.get());
        let build = |old: &Arc<Type>| {
            let env = Args::of::<C>()
                .count(&[n, bl])
                .addr(&[stride])
                .envelope(Combiner::Hvector, vec![old.clone()]);
            blocks_of(&strided(count(n)?, stride as isize, bl)?, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_indexed / MPI_Type_indexed_c(
        n: C,
        blocklengths: *const C,
        displacements: *const C,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            let k = count(n.get())?;
            // SAFETY: the caller's arrays hold `n` entries.
            let (bl, disp) = unsafe {
                (
                    counts::counts(blocklengths, k, "blocklength")?,
                    counts::counts(displacements, k, "displacement")?,
                )
            };
            let env = Args::of::<C>()
                .count(&[n.get()])
                .count(&bl)
                .count(&disp)
                .envelope(Combiner::Indexed, vec![old.clone()]);
            let blocks = (0..k)
                .map(|i| Ok((scaled(disp[i], old)?, bl[i])))
                .collect::<MpiResult<Vec<_>>>()?;
            blocks_of(&blocks, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_hindexed / MPI_Type_create_hindexed_c(
        n: C,
        blocklengths: *const C,
        displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            let k = count(n.get())?;
            // SAFETY: the caller's arrays hold `n` entries.
            let (bl, disp) = unsafe {
                (
                    counts::counts(blocklengths, k, "blocklength")?,
                    array(displacements, k, "displacement")?,
                )
            };
            let env = Args::of::<C>()
                .count(&[n.get()])
                .count(&bl)
                .addr(disp)
                .envelope(Combiner::Hindexed, vec![old.clone()]);
            let blocks: Vec<_> = disp.iter().map(|&d| d as isize).zip(bl).collect();
            blocks_of(&blocks, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_indexed_block / MPI_Type_create_indexed_block_c(
        n: C,
        bl: C,
        displacements: *const C,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            // SAFETY: the caller's array holds `n` entries.
            let disp = unsafe { counts::counts(displacements, count(n.get())?, "displacement")? };
            let env = Args::of::<C>()
                .count(&[n.get(), bl.get()])
                .count(&disp)
                .envelope(Combiner::IndexedBlock, vec![old.clone()]);
            let blocks = disp
                .iter()
                .map(|&d| Ok((scaled(d, old)?, bl.get())))
                .collect::<MpiResult<Vec<_>>>()?;
            blocks_of(&blocks, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_hindexed_block / MPI_Type_create_hindexed_block_c(
        n: C,
        bl: C,
        displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            // SAFETY: the caller's array holds `n` entries.
            let disp = unsafe { array(displacements, count(n.get())?, "displacement")? };
            let env = Args::of::<C>()
                .count(&[n.get(), bl.get()])
                .addr(disp)
                .envelope(Combiner::HindexedBlock, vec![old.clone()]);
            let blocks: Vec<_> = disp.iter().map(|&d| (d as isize, bl.get())).collect();
            blocks_of(&blocks, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_struct / MPI_Type_create_struct_c(
        n: C,
        blocklengths: *const C,
        displacements: *const MPI_Aint,
        types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            let k = count(n.get())?;
            // SAFETY: the caller's arrays hold `n` entries.
            let (bl, disp, handles) = unsafe {
                (
                    counts::counts(blocklengths, k, "blocklength")?,
                    array(displacements, k, "displacement")?,
                    array(types, k, "datatype")?,
                )
            };
            let types = handles
                .iter()
                .map(|&h| super::datatype(rt, h).map(|t| t.to_arc()))
                .collect::<MpiResult<Vec<_>>>()?;
            let pieces = (0..k)
                .map(|i| {
                    Ok(Piece {
                        disp: disp[i] as isize,
                        count: blocklength(bl[i])?,
                        ty: &types[i],
                    })
                })
                .collect::<MpiResult<Vec<_>>>()?;
            let env = Args::of::<C>()
                .count(&[n.get()])
                .count(&bl)
                .addr(disp)
                .envelope(Combiner::Struct, types.clone());
            // MPICH pads a struct unless all its members are one datatype
            // (which it treats as hindexed); binaries built for it expect
            // that.
            let pad = !types.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1]));
            let t = compose(&pieces, pad, env)?;
            // SAFETY: output argument.
            unsafe { create(rt, t, newtype) }
        })
    }
}

large_count! {
    fn MPI_Type_create_subarray / MPI_Type_create_subarray_c(
        ndims: c_int,
        sizes: *const C,
        subsizes: *const C,
        starts: *const C,
        array_order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            let n = nonneg(ndims, "number of dimensions")?;
            // SAFETY: the caller's arrays hold `ndims` entries.
            let (sz, sub, st) = unsafe {
                (
                    counts::counts(sizes, n, "size")?,
                    counts::counts(subsizes, n, "subsize")?,
                    counts::counts(starts, n, "start")?,
                )
            };
            let env = Args::of::<C>()
                .int(&[ndims])
                .count(&sz)
                .count(&sub)
                .count(&st)
                .int(&[array_order])
                .envelope(Combiner::Subarray, vec![old.clone()]);
            let mut dims = Vec::with_capacity(n);
            let mut runs = Vec::with_capacity(n);
            for i in 0..n {
                let ok = sz[i] >= 1 && sub[i] >= 0 && st[i] >= 0 && st[i] <= sz[i] - sub[i];
                if !ok {
                    return Err(err(
                        Class::Arg,
                        format!(
                            "dimension {i}: subarray of {} from {} does not fit {}",
                            sub[i], st[i], sz[i]
                        ),
                    ));
                }
                dims.push(sz[i] as usize);
                runs.push(vec![(st[i] as usize, sub[i] as usize)]);
            }
            Type::grid(&dims, &runs, order(array_order)?, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_darray / MPI_Type_create_darray_c(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        gsizes: *const C,
        distribs: *const c_int,
        dargs: *const c_int,
        psizes: *const c_int,
        array_order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            let n = nonneg(ndims, "number of dimensions")?;
            // SAFETY: the caller's arrays hold `ndims` entries.
            let (gs, di, da, ps) = unsafe {
                (
                    counts::counts(gsizes, n, "gsize")?,
                    array(distribs, n, "distrib")?,
                    array(dargs, n, "darg")?,
                    array(psizes, n, "psize")?,
                )
            };
            let env = Args::of::<C>()
                .int(&[size, rank, ndims])
                .count(&gs)
                .int(di)
                .int(da)
                .int(ps)
                .int(&[array_order])
                .envelope(Combiner::Darray, vec![old.clone()]);
            let grid = ps
                .iter()
                .try_fold(1i64, |a, &p| a.checked_mul(i64::from(p)))
                .unwrap_or(-1);
            if size < 1 || !(0..size).contains(&rank) || grid != i64::from(size) {
                return Err(err(
                    Class::Arg,
                    format!("rank {rank} of {size} in a process grid of {grid}"),
                ));
            }
            if gs.iter().any(|&g| g < 1) || ps.iter().any(|&p| p < 1) {
                return Err(err(
                    Class::Arg,
                    "array and grid sizes must be positive",
                ));
            }
            // Processes are numbered in row-major order whatever the
            // array's.
            let mut rest = rank as usize;
            let mut coords = vec![0; n];
            for i in (0..n).rev() {
                coords[i] = rest % ps[i] as usize;
                rest /= ps[i] as usize;
            }
            let runs = (0..n)
                .map(|i| {
                    let darg = match da[i] {
                        abi::MPI_DISTRIBUTE_DFLT_DARG => None,
                        d => Some(nonneg(d, "distribution argument")?),
                    };
                    let d = match di[i] {
                        abi::MPI_DISTRIBUTE_BLOCK => Distrib::Block(darg),
                        abi::MPI_DISTRIBUTE_CYCLIC => Distrib::Cyclic(darg),
                        abi::MPI_DISTRIBUTE_NONE => Distrib::None,
                        d => {
                            return Err(err(Class::Arg, format!("invalid distribution {d}")));
                        }
                    };
                    darray_runs(gs[i] as usize, d, ps[i] as usize, coords[i])
                })
                .collect::<MpiResult<Vec<_>>>()?;
            let dims: Vec<usize> = gs.iter().map(|&g| g as usize).collect();
            Type::grid(&dims, &runs, order(array_order)?, old, env)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

large_count! {
    fn MPI_Type_create_resized / MPI_Type_create_resized_c(
        oldtype: MPI_Datatype,
        lb: MPI_Aint,
        extent: MPI_Aint,
        newtype: *mut MPI_Datatype,
    ) {
        let build = |old: &Arc<Type>| {
            let mut t = Type::resized(old, lb as isize, extent as isize);
            t.envelope = Args::of::<C>()
                .addr(&[lb, extent])
                .envelope(Combiner::Resized, vec![old.clone()]);
            Ok(t)
        };
        // SAFETY: `newtype` is null or writable (MPI contract).
        unsafe { construct(NAME, oldtype, newtype, build) }
    }
}

/// The duplicate's attributes are copied by their keyvals' callbacks
/// (MPI-4.1 §7.7.4), which run without the library lock; if one fails,
/// the duplicate is freed and the error returned.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    let name = "MPI_Type_dup";
    call_unlocked(name, abi::MPI_COMM_WORLD, || {
        nonnull(newtype, "newtype")?;
        let h = locked(name, |rt| {
            let t = Type::dup(&super::datatype(rt, oldtype)?.to_arc());
            Ok(abi::direct_handle(
                Kind::Datatype,
                rt.types.insert(Arc::new(t)),
            ))
        })?;
        if let Err(e) = super::attr::copy_type_attrs(name, oldtype, h) {
            locked(name, |rt| free_type(rt, h))?;
            return Err(e);
        }
        // SAFETY: output argument, checked non-null.
        unsafe { out(newtype, h) }
    })
}

/// Forget derived type `h` and its attributes (their delete callbacks
/// ran before).
fn free_type(rt: &mut Runtime, h: MPI_Datatype) -> MpiResult<()> {
    let slot = derived_slot(rt, h)?;
    if rt
        .types
        .get(slot)
        .is_some_and(|t| t.envelope.combiner.is_predefined())
    {
        return Err(err(Class::Type, format!("{h:#x} is a predefined datatype")));
    }
    // Communication in flight and types built from it hold their own
    // reference (MPI-4.1 §5.1.9).
    rt.types.remove(slot);
    rt.attrs.types.remove(&i64::from(h));
    Ok(())
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_commit", abi::MPI_COMM_WORLD, |rt| {
        if datatype.is_null() {
            return Err(err(Class::Arg, "null datatype pointer"));
        }
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *datatype };
        if predefined(h).is_some() {
            return Ok(());
        }
        let slot = derived_slot(rt, h)?;
        // A type shared with the envelopes of others is copied once here.
        if let Some(t) = rt.types.get_mut(slot).filter(|t| !t.committed) {
            Arc::make_mut(t).committed = true;
        }
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    let name = "MPI_Type_free";
    call_unlocked(name, abi::MPI_COMM_WORLD, || {
        if datatype.is_null() {
            return Err(err(Class::Arg, "null datatype pointer"));
        }
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *datatype };
        locked(name, |rt| derived_slot(rt, h).map(drop))?;
        // The attributes' delete callbacks run first, without the lock
        // (MPI-4.1 §7.7.4); one that fails leaves the type.
        super::attr::delete_type_attrs(name, h)?;
        locked(name, |rt| free_type(rt, h))?;
        // SAFETY: as above.
        unsafe { *datatype = abi::MPI_DATATYPE_NULL };
        Ok(())
    })
}

// ---------------------------------------------------------------------
// Queries (MPI-4.0 §5.1.5, §5.1.8, §5.1.13, §7.8).

/// Run a query on the datatype of handle `dt`.
fn query(name: &str, dt: MPI_Datatype, f: impl FnOnce(&Type) -> MpiResult<()>) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        f(&*super::datatype(rt, dt)?)
    })
}

large_count! {
    fn MPI_Type_size / MPI_Type_size_c(datatype: MPI_Datatype, size: *mut C) {
        query(NAME, datatype, |t| {
            // The `int` form reports a size it cannot hold as
            // MPI_UNDEFINED (MPI-4.1 §5.1.5).
            let s = MPI_Count::try_from(t.size)
                .ok()
                .and_then(C::from_count)
                .unwrap_or(C::UNDEFINED);
            // SAFETY: output argument.
            unsafe { out(size, s) }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    query("MPI_Type_size_x", datatype, |t| {
        // SAFETY: output argument.
        unsafe { out(size, t.size as MPI_Count) }
    })
}

/// Write two address-sized results.
///
/// # Safety
/// Each pointer is null or writable (MPI contract).
unsafe fn out2<T>(a: *mut T, x: T, b: *mut T, y: T) -> MpiResult<()> {
    if a.is_null() || b.is_null() {
        return Err(err(Class::Arg, "null output argument"));
    }
    // SAFETY: non-null output arguments.
    unsafe {
        out(a, x)?;
        out(b, y)
    }
}

// The `_c` forms of the bounds take `MPI_Count`, the `int` forms
// `MPI_Aint`: one 64-bit integer here.
large_count! {
    fn MPI_Type_get_extent / MPI_Type_get_extent_c(
        datatype: MPI_Datatype,
        lb: *mut MPI_Aint,
        extent: *mut MPI_Aint,
    ) {
        query(NAME, datatype, |t| {
            // SAFETY: output arguments.
            unsafe { out2(lb, t.lb as MPI_Aint, extent, t.extent as MPI_Aint) }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_extent_x(
    datatype: MPI_Datatype,
    lb: *mut MPI_Count,
    extent: *mut MPI_Count,
) -> c_int {
    query("MPI_Type_get_extent_x", datatype, |t| {
        // SAFETY: output arguments.
        unsafe { out2(lb, t.lb as MPI_Count, extent, t.extent as MPI_Count) }
    })
}

large_count! {
    fn MPI_Type_get_true_extent / MPI_Type_get_true_extent_c(
        datatype: MPI_Datatype,
        true_lb: *mut MPI_Aint,
        true_extent: *mut MPI_Aint,
    ) {
        query(NAME, datatype, |t| {
            // SAFETY: output arguments.
            unsafe {
                out2(
                    true_lb,
                    t.true_lb as MPI_Aint,
                    true_extent,
                    t.true_extent as MPI_Aint,
                )
            }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    query("MPI_Type_get_true_extent_x", datatype, |t| {
        // SAFETY: output arguments.
        unsafe {
            out2(
                true_lb,
                t.true_lb as MPI_Count,
                true_extent,
                t.true_extent as MPI_Count,
            )
        }
    })
}

/// MPI-4.1 §6.9.4: the predefined pair type of a value and an index, for
/// `MPI_MINLOC` and `MPI_MAXLOC`; `MPI_DATATYPE_NULL` when there is none.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_value_index(
    value_type: MPI_Datatype,
    index_type: MPI_Datatype,
    pair_type: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_get_value_index", abi::MPI_COMM_WORLD, |rt| {
        super::datatype(rt, value_type)?;
        super::datatype(rt, index_type)?;
        let pair = builtin::pair_type(value_type, index_type).unwrap_or(abi::MPI_DATATYPE_NULL);
        // SAFETY: output argument.
        unsafe { out(pair_type, pair) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_set_name(
    datatype: MPI_Datatype,
    type_name: *const c_char,
) -> c_int {
    call("MPI_Type_set_name", abi::MPI_COMM_WORLD, |rt| {
        let t = super::datatype(rt, datatype)?;
        // SAFETY: a NUL-terminated string (MPI contract).
        let name = unsafe { read_object_name(type_name) }?;
        if t.predefined.is_some() {
            rt.predefined_type_names.insert(datatype, name);
        } else if let Some(t) = rt.types.get_mut(derived_slot(rt, datatype)?) {
            Arc::make_mut(t).name = name;
        }
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_name(
    datatype: MPI_Datatype,
    type_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    call("MPI_Type_get_name", abi::MPI_COMM_WORLD, |rt| {
        // The null handle is predefined, with its name (as for communicators).
        let null = String::from("MPI_DATATYPE_NULL");
        let t;
        let name = if datatype == abi::MPI_DATATYPE_NULL {
            &null
        } else {
            t = super::datatype(rt, datatype)?;
            rt.predefined_type_names.get(&datatype).unwrap_or(&t.name)
        };
        // SAFETY: the caller's buffer holds MPI_MAX_OBJECT_NAME bytes.
        unsafe {
            write_cstr(
                type_name,
                abi::MPI_MAX_OBJECT_NAME as usize,
                name,
                resultlen,
            )
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_match_size(
    typeclass: c_int,
    size: c_int,
    datatype: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_match_size", abi::MPI_COMM_WORLD, |_| {
        let candidates: &[MPI_Datatype] = match typeclass {
            abi::MPI_TYPECLASS_REAL => &[abi::MPI_FLOAT, abi::MPI_DOUBLE, abi::MPI_LONG_DOUBLE],
            abi::MPI_TYPECLASS_INTEGER => &[
                abi::MPI_SIGNED_CHAR,
                abi::MPI_SHORT,
                abi::MPI_INT,
                abi::MPI_LONG,
            ],
            abi::MPI_TYPECLASS_COMPLEX => &[
                abi::MPI_C_FLOAT_COMPLEX,
                abi::MPI_C_DOUBLE_COMPLEX,
                abi::MPI_C_LONG_DOUBLE_COMPLEX,
            ],
            c => return Err(err(Class::Arg, format!("invalid type class {c}"))),
        };
        let found = candidates
            .iter()
            .copied()
            .find(|&h| predefined(h).is_some_and(|t| t.size as c_int == size))
            .ok_or_else(|| err(Class::Arg, format!("no type of {size} bytes in class")))?;
        // SAFETY: output argument.
        unsafe { out(datatype, found) }
    })
}

/// The parameterized type of `combiner` for the first of `kinds` (a
/// predefined type, the largest decimal precision and exponent range it
/// holds) that has at least precision `p` and range `r` (`MPI_UNDEFINED`:
/// any), made once per arguments (MPI-4.1 §19.1.9: a predefined type,
/// which cannot be freed, whose contents are `p` and `r`).
fn f90_type(
    name: &str,
    combiner: Combiner,
    kinds: &[(MPI_Datatype, c_int, c_int)],
    (p, r): (c_int, c_int),
    newtype: *mut MPI_Datatype,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let wanted = |x: c_int, have: c_int| x == abi::MPI_UNDEFINED || (0..=have).contains(&x);
        let (base, _, _) = kinds
            .iter()
            .copied()
            .find(|&(_, hp, hr)| wanted(p, hp) && wanted(r, hr))
            .ok_or_else(|| {
                err(
                    Class::Arg,
                    format!("no Fortran type holds precision {p} and range {r}"),
                )
            })?;
        nonnull(newtype, "newtype")?;
        let ints = if combiner == Combiner::F90Integer {
            vec![r]
        } else {
            vec![p, r]
        };
        let key = (combiner, ints.clone());
        let slot = match rt.f90_types.get(&key) {
            Some(&slot) => slot,
            None => {
                let base = super::datatype(rt, base)?;
                let t = Type::f90(&base, combiner, ints);
                let slot = rt.types.insert(Arc::new(t));
                rt.f90_types.insert(key, slot);
                slot
            }
        };
        // SAFETY: output argument, checked non-null.
        unsafe { out(newtype, abi::direct_handle(Kind::Datatype, slot)) }
    })
}

/// MPI-4.0 §19.1.9: the `INTEGER` kind with at least `r` decimal digits,
/// as the predefined sized type of that kind.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let kinds = [
        (abi::MPI_INTEGER1, 0, 2),
        (abi::MPI_INTEGER2, 0, 4),
        (abi::MPI_INTEGER4, 0, 9),
        (abi::MPI_INTEGER8, 0, 18),
    ];
    f90_type(
        "MPI_Type_create_f90_integer",
        Combiner::F90Integer,
        &kinds,
        (abi::MPI_UNDEFINED, r),
        newtype,
    )
}

/// MPI-4.0 §19.1.9: the `REAL` kind with precision `p` and range `r`
/// (IEEE single, double and quadruple precision).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_f90_real(
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let kinds = [
        (abi::MPI_REAL4, 6, 37),
        (abi::MPI_REAL8, 15, 307),
        (abi::MPI_REAL16, 33, 4931),
    ];
    f90_type(
        "MPI_Type_create_f90_real",
        Combiner::F90Real,
        &kinds,
        (p, r),
        newtype,
    )
}

/// MPI-4.0 §19.1.9: the `COMPLEX` kind whose parts have precision `p` and
/// range `r`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let kinds = [
        (abi::MPI_COMPLEX8, 6, 37),
        (abi::MPI_COMPLEX16, 15, 307),
        (abi::MPI_COMPLEX32, 33, 4931),
    ];
    f90_type(
        "MPI_Type_create_f90_complex",
        Combiner::F90Complex,
        &kinds,
        (p, r),
        newtype,
    )
}

// ---------------------------------------------------------------------
// Addresses (MPI-4.0 §5.1.5).

/// The address of `location`, usable as a displacement from
/// `MPI_BOTTOM` (its provenance is exposed for that).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    call("MPI_Get_address", abi::MPI_COMM_WORLD, |_| {
        // SAFETY: output argument.
        unsafe { out(address, location.expose_provenance() as MPI_Aint) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}
