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
pub(super) mod pack;

use super::*;
use crate::abi::{MPI_Aint, MPI_Count};
use crate::core::datatype::{Combiner, Distrib, Envelope, Order, Piece, Prim, compose};
use crate::core::datatype::{Datatype as Type, darray_runs};
use crate::ops::Elem;
pub(super) use builtin::predefined;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Type_size(MPI_Datatype datatype, int *size)",
    "int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)",
    "int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype)",
    "int MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[], const int array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[], const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)",
    "int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_commit(MPI_Datatype *datatype)",
    "int MPI_Type_free(MPI_Datatype *datatype)",
    "int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)",
    "int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)",
    "int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)",
    "int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)",
    "int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses, int *num_datatypes, int *combiner)",
    "int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])",
    "int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)",
    "int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)",
    "int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)",
    "int MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)",
    "int MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)",
    "int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)",
    "int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position, MPI_Comm comm)",
    "int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype, MPI_Comm comm)",
    "int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)",
    "int MPI_Pack_external(const char *datarep, const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position)",
    "int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)",
    "int MPI_Pack_external_size(const char *datarep, int incount, MPI_Datatype datatype, MPI_Aint *size)",
    "int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)",
    "int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)",
    "int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)",
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
        return Err(err(
            abi::MPI_ERR_TYPE,
            format!("{h:#x} is a predefined datatype"),
        ));
    }
    abi::direct_index(Kind::Datatype, h)
        .filter(|&i| i >= core::FIRST_DERIVED_TYPE && rt.types.get(i).is_some())
        .ok_or_else(|| err(abi::MPI_ERR_TYPE, format!("invalid datatype {h:#x}")))
}

/// The handle of `t` to give the application: a predefined type's own,
/// or a new handle of a derived one.
fn handle_of(rt: &mut Runtime, t: &Arc<Type>) -> MPI_Datatype {
    match t.predefined {
        Some(h) => h,
        None => abi::direct_handle(Kind::Datatype, rt.types.insert(t.clone())),
    }
}

/// Store a new derived type and write its handle.
unsafe fn create(rt: &mut Runtime, t: Type, newtype: *mut MPI_Datatype) -> MpiResult<()> {
    if newtype.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null newtype"));
    }
    let h = abi::direct_handle(Kind::Datatype, rt.types.insert(Arc::new(t)));
    // SAFETY: non-null output argument.
    unsafe { out(newtype, h) }
}

/// A checked count argument.
fn count(n: c_int) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err(abi::MPI_ERR_COUNT, format!("negative count {n}")))
}

/// A checked block length (a count, for its error class, as in MPICH).
fn blocklength(n: c_int) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err(abi::MPI_ERR_COUNT, format!("negative blocklength {n}")))
}

/// A checked non-negative argument other than a count.
fn nonneg(n: impl Into<i64> + Copy + std::fmt::Display, what: &str) -> MpiResult<usize> {
    usize::try_from(n.into()).map_err(|_| err(abi::MPI_ERR_ARG, format!("negative {what} {n}")))
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
        return Err(err(abi::MPI_ERR_ARG, format!("null {what} array")));
    }
    // SAFETY: non-null, `n` elements (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn combiner_code(c: Combiner) -> c_int {
    match c {
        Combiner::Named => abi::MPI_COMBINER_NAMED,
        Combiner::Dup => abi::MPI_COMBINER_DUP,
        Combiner::Contiguous => abi::MPI_COMBINER_CONTIGUOUS,
        Combiner::Vector => abi::MPI_COMBINER_VECTOR,
        Combiner::Hvector => abi::MPI_COMBINER_HVECTOR,
        Combiner::Indexed => abi::MPI_COMBINER_INDEXED,
        Combiner::Hindexed => abi::MPI_COMBINER_HINDEXED,
        Combiner::IndexedBlock => abi::MPI_COMBINER_INDEXED_BLOCK,
        Combiner::HindexedBlock => abi::MPI_COMBINER_HINDEXED_BLOCK,
        Combiner::Struct => abi::MPI_COMBINER_STRUCT,
        Combiner::Subarray => abi::MPI_COMBINER_SUBARRAY,
        Combiner::Darray => abi::MPI_COMBINER_DARRAY,
        Combiner::Resized => abi::MPI_COMBINER_RESIZED,
    }
}

fn order(o: c_int) -> MpiResult<Order> {
    match o {
        abi::MPI_ORDER_C => Ok(Order::C),
        abi::MPI_ORDER_FORTRAN => Ok(Order::Fortran),
        o => Err(err(abi::MPI_ERR_ARG, format!("invalid array order {o}"))),
    }
}

// ---------------------------------------------------------------------
// Constructors (MPI-4.0 §5.1.2-§5.1.7, §5.1.10).

/// The type made of blocks of `old`: `(byte displacement, blocklength)`.
fn blocks_of(blocks: &[(isize, c_int)], old: &Arc<Type>, envelope: Envelope) -> MpiResult<Type> {
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
fn strided(n: usize, step: isize, blocklength: c_int) -> MpiResult<Vec<(isize, c_int)>> {
    (0..n as isize)
        .map(|i| {
            i.checked_mul(step)
                .map(|d| (d, blocklength))
                .ok_or_else(|| err(abi::MPI_ERR_ARG, "stride overflows"))
        })
        .collect()
}

/// Element displacements in bytes of `old`.
fn scaled(disp: impl Into<i64>, old: &Type) -> MpiResult<isize> {
    (disp.into() as isize)
        .checked_mul(old.extent)
        .ok_or_else(|| err(abi::MPI_ERR_ARG, "displacement overflows"))
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
        let t = build(&old)?;
        // SAFETY: forwarded from the caller.
        unsafe { create(rt, t, newtype) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_contiguous(
    n: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let env = Envelope::new(Combiner::Contiguous, vec![n], vec![], vec![old.clone()]);
        count(n)?;
        blocks_of(&[(0, n)], old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_contiguous", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_vector(
    n: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let env = Envelope::new(
            Combiner::Vector,
            vec![n, blocklength, stride],
            vec![],
            vec![old.clone()],
        );
        let step = scaled(stride, old)?;
        blocks_of(&strided(count(n)?, step, blocklength)?, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_vector", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    n: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let env = Envelope::new(
            Combiner::Hvector,
            vec![n, blocklength],
            vec![stride as isize],
            vec![old.clone()],
        );
        blocks_of(&strided(count(n)?, stride as isize, blocklength)?, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_hvector", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_indexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let k = count(n)?;
        // SAFETY: the caller's arrays hold `n` entries.
        let (bl, disp) = unsafe {
            (
                array(blocklengths, k, "blocklength")?,
                array(displacements, k, "displacement")?,
            )
        };
        let ints = [&[n][..], bl, disp].concat();
        let env = Envelope::new(Combiner::Indexed, ints, vec![], vec![old.clone()]);
        let blocks = (0..k)
            .map(|i| Ok((scaled(disp[i], old)?, bl[i])))
            .collect::<MpiResult<Vec<_>>>()?;
        blocks_of(&blocks, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_indexed", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let k = count(n)?;
        // SAFETY: the caller's arrays hold `n` entries.
        let (bl, disp) = unsafe {
            (
                array(blocklengths, k, "blocklength")?,
                array(displacements, k, "displacement")?,
            )
        };
        let addrs: Vec<isize> = disp.iter().map(|&d| d as isize).collect();
        let env = Envelope::new(
            Combiner::Hindexed,
            [&[n][..], bl].concat(),
            addrs.clone(),
            vec![old.clone()],
        );
        let blocks: Vec<_> = addrs.into_iter().zip(bl.iter().copied()).collect();
        blocks_of(&blocks, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_hindexed", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        // SAFETY: the caller's array holds `n` entries.
        let disp = unsafe { array(displacements, count(n)?, "displacement")? };
        let ints = [&[n, blocklength][..], disp].concat();
        let env = Envelope::new(Combiner::IndexedBlock, ints, vec![], vec![old.clone()]);
        let blocks = disp
            .iter()
            .map(|&d| Ok((scaled(d, old)?, blocklength)))
            .collect::<MpiResult<Vec<_>>>()?;
        blocks_of(&blocks, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_indexed_block", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    n: c_int,
    blocklength: c_int,
    displacements: *const MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        // SAFETY: the caller's array holds `n` entries.
        let disp = unsafe { array(displacements, count(n)?, "displacement")? };
        let addrs: Vec<isize> = disp.iter().map(|&d| d as isize).collect();
        let env = Envelope::new(
            Combiner::HindexedBlock,
            vec![n, blocklength],
            addrs.clone(),
            vec![old.clone()],
        );
        let blocks: Vec<_> = addrs.into_iter().map(|d| (d, blocklength)).collect();
        blocks_of(&blocks, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_hindexed_block", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_struct(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const MPI_Aint,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_create_struct", abi::MPI_COMM_WORLD, |rt| {
        let k = count(n)?;
        // SAFETY: the caller's arrays hold `n` entries.
        let (bl, disp, handles) = unsafe {
            (
                array(blocklengths, k, "blocklength")?,
                array(displacements, k, "displacement")?,
                array(types, k, "datatype")?,
            )
        };
        let types = handles
            .iter()
            .map(|&h| super::datatype(rt, h))
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
        let env = Envelope::new(
            Combiner::Struct,
            [&[n][..], bl].concat(),
            disp.iter().map(|&d| d as isize).collect(),
            types.clone(),
        );
        // MPICH pads a struct unless all its members are one datatype
        // (which it treats as hindexed); binaries built for it expect that.
        let pad = !types.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1]));
        let t = compose(&pieces, pad, env)?;
        // SAFETY: output argument.
        unsafe { create(rt, t, newtype) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    array_order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let n = nonneg(ndims, "number of dimensions")?;
        // SAFETY: the caller's arrays hold `ndims` entries.
        let (sz, sub, st) = unsafe {
            (
                array(sizes, n, "size")?,
                array(subsizes, n, "subsize")?,
                array(starts, n, "start")?,
            )
        };
        let ints = [&[ndims][..], sz, sub, st, &[array_order]].concat();
        let env = Envelope::new(Combiner::Subarray, ints, vec![], vec![old.clone()]);
        let mut dims = Vec::with_capacity(n);
        let mut runs = Vec::with_capacity(n);
        for i in 0..n {
            let ok = sz[i] >= 1 && sub[i] >= 0 && st[i] >= 0 && st[i] <= sz[i] - sub[i];
            if !ok {
                return Err(err(
                    abi::MPI_ERR_ARG,
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
    unsafe { construct("MPI_Type_create_subarray", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    array_order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| {
        let n = nonneg(ndims, "number of dimensions")?;
        // SAFETY: the caller's arrays hold `ndims` entries.
        let (gs, di, da, ps) = unsafe {
            (
                array(gsizes, n, "gsize")?,
                array(distribs, n, "distrib")?,
                array(dargs, n, "darg")?,
                array(psizes, n, "psize")?,
            )
        };
        let ints = [&[size, rank, ndims][..], gs, di, da, ps, &[array_order]].concat();
        let env = Envelope::new(Combiner::Darray, ints, vec![], vec![old.clone()]);
        let grid = ps
            .iter()
            .try_fold(1i64, |a, &p| a.checked_mul(i64::from(p)))
            .unwrap_or(-1);
        if size < 1 || !(0..size).contains(&rank) || grid != i64::from(size) {
            return Err(err(
                abi::MPI_ERR_ARG,
                format!("rank {rank} of {size} in a process grid of {grid}"),
            ));
        }
        if gs.iter().chain(ps).any(|&g| g < 1) {
            return Err(err(
                abi::MPI_ERR_ARG,
                "array and grid sizes must be positive",
            ));
        }
        // Processes are numbered in row-major order whatever the array's.
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
                    d => return Err(err(abi::MPI_ERR_ARG, format!("invalid distribution {d}"))),
                };
                darray_runs(gs[i] as usize, d, ps[i] as usize, coords[i])
            })
            .collect::<MpiResult<Vec<_>>>()?;
        let dims: Vec<usize> = gs.iter().map(|&g| g as usize).collect();
        Type::grid(&dims, &runs, order(array_order)?, old, env)
    };
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_darray", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_resized(
    oldtype: MPI_Datatype,
    lb: MPI_Aint,
    extent: MPI_Aint,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let build = |old: &Arc<Type>| Ok(Type::resized(old, lb as isize, extent as isize));
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_create_resized", oldtype, newtype, build) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_dup", oldtype, newtype, |old| Ok(Type::dup(old))) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_commit", abi::MPI_COMM_WORLD, |rt| {
        if datatype.is_null() {
            return Err(err(abi::MPI_ERR_ARG, "null datatype pointer"));
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
    call("MPI_Type_free", abi::MPI_COMM_WORLD, |rt| {
        if datatype.is_null() {
            return Err(err(abi::MPI_ERR_ARG, "null datatype pointer"));
        }
        // SAFETY: non-null pointer to the caller's handle.
        let slot = derived_slot(rt, unsafe { *datatype })?;
        // Communication in flight and types built from it hold their own
        // reference (MPI-4.0 §5.1.9).
        rt.types.remove(slot);
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

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    query("MPI_Type_size", datatype, |t| {
        let s = c_int::try_from(t.size).unwrap_or(abi::MPI_UNDEFINED);
        // SAFETY: output argument.
        unsafe { out(size, s) }
    })
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
        return Err(err(abi::MPI_ERR_ARG, "null output argument"));
    }
    // SAFETY: non-null output arguments.
    unsafe {
        out(a, x)?;
        out(b, y)
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_extent(
    datatype: MPI_Datatype,
    lb: *mut MPI_Aint,
    extent: *mut MPI_Aint,
) -> c_int {
    query("MPI_Type_get_extent", datatype, |t| {
        // SAFETY: output arguments.
        unsafe { out2(lb, t.lb as MPI_Aint, extent, t.extent as MPI_Aint) }
    })
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

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> c_int {
    query("MPI_Type_get_true_extent", datatype, |t| {
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

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    query("MPI_Type_get_envelope", datatype, |t| {
        let e = &t.envelope;
        // SAFETY: output arguments.
        unsafe {
            out2(
                num_integers,
                e.ints.len() as c_int,
                num_addresses,
                e.addrs.len() as c_int,
            )?;
            out2(
                num_datatypes,
                e.types.len() as c_int,
                combiner,
                combiner_code(e.combiner),
            )
        }
    })
}

/// Copy `src` into the caller's array of `max` entries.
///
/// # Safety
/// A non-null `dst` holds `max` writable entries (MPI contract).
unsafe fn fill<T: Copy>(dst: *mut T, max: c_int, src: &[T], what: &str) -> MpiResult<()> {
    if usize::try_from(max).is_ok_and(|m| m >= src.len()) && (src.is_empty() || !dst.is_null()) {
        // SAFETY: `dst` holds `max >= src.len()` entries.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    } else {
        Err(err(
            abi::MPI_ERR_ARG,
            format!("{what} array of {max} entries, {} needed", src.len()),
        ))
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    call("MPI_Type_get_contents", abi::MPI_COMM_WORLD, |rt| {
        let t = super::datatype(rt, datatype)?;
        let e = &t.envelope;
        if e.combiner == Combiner::Named {
            return Err(err(
                abi::MPI_ERR_TYPE,
                "a predefined datatype has no contents",
            ));
        }
        let addrs: Vec<MPI_Aint> = e.addrs.iter().map(|&a| a as MPI_Aint).collect();
        if usize::try_from(max_datatypes).is_ok_and(|m| m < e.types.len()) {
            return Err(err(abi::MPI_ERR_ARG, "datatype array too small"));
        }
        // SAFETY: the caller's arrays hold `max_*` entries.
        unsafe {
            fill(integers, max_integers, &e.ints, "integer")?;
            fill(addresses, max_addresses, &addrs, "address")?;
        }
        // Derived constituents come back as new handles the application
        // frees (MPI-4.0 §5.1.13).
        let handles: Vec<MPI_Datatype> = e.types.iter().map(|c| handle_of(rt, c)).collect();
        // SAFETY: as above.
        unsafe { fill(datatypes, max_datatypes, &handles, "datatype") }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_set_name(
    datatype: MPI_Datatype,
    type_name: *const c_char,
) -> c_int {
    call("MPI_Type_set_name", abi::MPI_COMM_WORLD, |rt| {
        let t = super::datatype(rt, datatype)?;
        if type_name.is_null() {
            return Err(err(abi::MPI_ERR_ARG, "null name"));
        }
        // SAFETY: a NUL-terminated string (MPI contract).
        let name = unsafe { CStr::from_ptr(type_name) }.to_string_lossy();
        let max = abi::MPI_MAX_OBJECT_NAME as usize - 1;
        let mut name = name.into_owned();
        while name.len() > max {
            name.pop();
        }
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
        let t = super::datatype(rt, datatype)?;
        let name = rt.predefined_type_names.get(&datatype).unwrap_or(&t.name);
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
            c => return Err(err(abi::MPI_ERR_ARG, format!("invalid type class {c}"))),
        };
        let found = candidates
            .iter()
            .copied()
            .find(|&h| predefined(h).is_some_and(|t| t.size as c_int == size))
            .ok_or_else(|| {
                err(
                    abi::MPI_ERR_ARG,
                    format!("no type of {size} bytes in class"),
                )
            })?;
        // SAFETY: output argument.
        unsafe { out(datatype, found) }
    })
}

/// The first of `kinds` (a predefined type, the largest decimal
/// precision and exponent range it holds) that has at least precision `p`
/// and range `r` (`MPI_UNDEFINED`: any).
fn f90_type(
    name: &str,
    kinds: &[(MPI_Datatype, c_int, c_int)],
    p: c_int,
    r: c_int,
    newtype: *mut MPI_Datatype,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |_| {
        let wanted = |x: c_int, have: c_int| x == abi::MPI_UNDEFINED || (0..=have).contains(&x);
        let (t, _, _) = kinds
            .iter()
            .copied()
            .find(|&(_, hp, hr)| wanted(p, hp) && wanted(r, hr))
            .ok_or_else(|| {
                err(
                    abi::MPI_ERR_ARG,
                    format!("no Fortran type holds precision {p} and range {r}"),
                )
            })?;
        // SAFETY: output argument.
        unsafe { out(newtype, t) }
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
        &kinds,
        abi::MPI_UNDEFINED,
        r,
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
    f90_type("MPI_Type_create_f90_real", &kinds, p, r, newtype)
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
    f90_type("MPI_Type_create_f90_complex", &kinds, p, r, newtype)
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
