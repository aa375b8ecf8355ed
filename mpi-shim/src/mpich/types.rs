//! Datatypes (MPI-4.0 chapter 5): the predefined types, the type
//! constructors, their queries, packing, and addresses.
//!
//! Derived types live in the runtime's datatype table and get MPICH
//! "direct" handles of their slot (from [`core::FIRST_DERIVED_TYPE`] on,
//! clear of the predefined pair types, which MPICH gives direct handles
//! 0 to 4). Predefined types are built once, on first use.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::OnceLock;

use super::*;
use crate::abi::{MPI_Aint, MPI_Count};
use crate::core::datatype::{Combiner, Distrib, Envelope, Order, Piece, Prim, compose};
use crate::core::datatype::{Datatype as Type, darray_runs};
use crate::ops::Elem;

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
// Predefined datatypes (MPI-4.0 §3.2.2, §5.1.1 for the pair types).

/// How the bytes of a predefined basic type are interpreted.
#[derive(Clone, Copy, Debug)]
enum Class {
    Signed,
    Unsigned,
    Float,
    Complex,
    /// Characters, bytes, booleans: never byte-swapped.
    Raw,
}

use Class::*;

/// The predefined basic types: handle, name, class. MPICH's handles
/// carry the size in bytes in bits 8-15.
const BASIC: &[(MPI_Datatype, &str, Class)] = &[
    (abi::MPI_CHAR, "MPI_CHAR", Raw),
    (abi::MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", Signed),
    (abi::MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", Unsigned),
    (abi::MPI_BYTE, "MPI_BYTE", Raw),
    (abi::MPI_WCHAR, "MPI_WCHAR", Signed),
    (abi::MPI_SHORT, "MPI_SHORT", Signed),
    (abi::MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", Unsigned),
    (abi::MPI_INT, "MPI_INT", Signed),
    (abi::MPI_UNSIGNED, "MPI_UNSIGNED", Unsigned),
    (abi::MPI_LONG, "MPI_LONG", Signed),
    (abi::MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", Unsigned),
    (abi::MPI_FLOAT, "MPI_FLOAT", Float),
    (abi::MPI_DOUBLE, "MPI_DOUBLE", Float),
    (abi::MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", Float),
    (abi::MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", Signed),
    (
        abi::MPI_UNSIGNED_LONG_LONG,
        "MPI_UNSIGNED_LONG_LONG",
        Unsigned,
    ),
    (abi::MPI_PACKED, "MPI_PACKED", Raw),
    (abi::MPI_INT8_T, "MPI_INT8_T", Signed),
    (abi::MPI_INT16_T, "MPI_INT16_T", Signed),
    (abi::MPI_INT32_T, "MPI_INT32_T", Signed),
    (abi::MPI_INT64_T, "MPI_INT64_T", Signed),
    (abi::MPI_UINT8_T, "MPI_UINT8_T", Unsigned),
    (abi::MPI_UINT16_T, "MPI_UINT16_T", Unsigned),
    (abi::MPI_UINT32_T, "MPI_UINT32_T", Unsigned),
    (abi::MPI_UINT64_T, "MPI_UINT64_T", Unsigned),
    (abi::MPI_C_BOOL, "MPI_C_BOOL", Raw),
    (abi::MPI_AINT, "MPI_AINT", Signed),
    (abi::MPI_OFFSET, "MPI_OFFSET", Signed),
    (abi::MPI_COUNT, "MPI_COUNT", Signed),
    // MPICH names it by its alias.
    (abi::MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", Complex),
    (abi::MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", Complex),
    (
        abi::MPI_C_LONG_DOUBLE_COMPLEX,
        "MPI_C_LONG_DOUBLE_COMPLEX",
        Complex,
    ),
    (abi::MPI_CXX_BOOL, "MPI_CXX_BOOL", Raw),
    (abi::MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", Complex),
    (
        abi::MPI_CXX_DOUBLE_COMPLEX,
        "MPI_CXX_DOUBLE_COMPLEX",
        Complex,
    ),
    (
        abi::MPI_CXX_LONG_DOUBLE_COMPLEX,
        "MPI_CXX_LONG_DOUBLE_COMPLEX",
        Complex,
    ),
    (abi::MPI_CHARACTER, "MPI_CHARACTER", Raw),
    (abi::MPI_LOGICAL, "MPI_LOGICAL", Signed),
    (abi::MPI_INTEGER, "MPI_INTEGER", Signed),
    (abi::MPI_REAL, "MPI_REAL", Float),
    (abi::MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", Float),
    (abi::MPI_COMPLEX, "MPI_COMPLEX", Complex),
    (abi::MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", Complex),
    (abi::MPI_INTEGER1, "MPI_INTEGER1", Signed),
    (abi::MPI_INTEGER2, "MPI_INTEGER2", Signed),
    (abi::MPI_INTEGER4, "MPI_INTEGER4", Signed),
    (abi::MPI_INTEGER8, "MPI_INTEGER8", Signed),
    (abi::MPI_REAL4, "MPI_REAL4", Float),
    (abi::MPI_REAL8, "MPI_REAL8", Float),
    (abi::MPI_REAL16, "MPI_REAL16", Float),
    (abi::MPI_COMPLEX8, "MPI_COMPLEX8", Complex),
    (abi::MPI_COMPLEX16, "MPI_COMPLEX16", Complex),
    (abi::MPI_COMPLEX32, "MPI_COMPLEX32", Complex),
];

/// The predefined pair types: `{first; second}` as a C struct lays it out
/// (MPI-4.0 §6.9.4 for the C ones).
const PAIRS: &[(MPI_Datatype, &str, MPI_Datatype, MPI_Datatype)] = &[
    (
        abi::MPI_FLOAT_INT,
        "MPI_FLOAT_INT",
        abi::MPI_FLOAT,
        abi::MPI_INT,
    ),
    (
        abi::MPI_DOUBLE_INT,
        "MPI_DOUBLE_INT",
        abi::MPI_DOUBLE,
        abi::MPI_INT,
    ),
    (
        abi::MPI_LONG_INT,
        "MPI_LONG_INT",
        abi::MPI_LONG,
        abi::MPI_INT,
    ),
    (
        abi::MPI_SHORT_INT,
        "MPI_SHORT_INT",
        abi::MPI_SHORT,
        abi::MPI_INT,
    ),
    (
        abi::MPI_LONG_DOUBLE_INT,
        "MPI_LONG_DOUBLE_INT",
        abi::MPI_LONG_DOUBLE,
        abi::MPI_INT,
    ),
    (abi::MPI_2INT, "MPI_2INT", abi::MPI_INT, abi::MPI_INT),
    (
        abi::MPI_2INTEGER,
        "MPI_2INTEGER",
        abi::MPI_INTEGER,
        abi::MPI_INTEGER,
    ),
    (abi::MPI_2REAL, "MPI_2REAL", abi::MPI_REAL, abi::MPI_REAL),
    (
        abi::MPI_2DOUBLE_PRECISION,
        "MPI_2DOUBLE_PRECISION",
        abi::MPI_DOUBLE_PRECISION,
        abi::MPI_DOUBLE_PRECISION,
    ),
];

/// The basic element of a predefined type of `size` bytes: external32
/// keeps every size but `long`'s, which is 4 bytes there (MPI-4.0
/// §13.5.2, Table 13.2).
fn prim(handle: MPI_Datatype, size: u8, class: Class) -> Prim {
    let mut p = match class {
        Signed => Prim::new(size, size, true),
        Unsigned | Float => Prim::new(size, size, false),
        Complex => Prim::new(size, size / 2, false),
        Raw => Prim::new(size, 1, false),
    };
    if matches!(handle, abi::MPI_LONG | abi::MPI_UNSIGNED_LONG) {
        p.ext = 4;
    }
    p
}

/// What reductions see of a predefined type.
fn elem_of(handle: MPI_Datatype) -> Elem {
    ops::predefined(handle).map_or(Elem::Opaque, |(_, e)| e)
}

/// The predefined types by handle, for lookups without hashing: MPICH's
/// builtin handles (`0x4c00_ssii`) by their index byte `ii`, the pair
/// types (direct handles) by their index.
#[derive(Debug)]
struct Predefined {
    builtin: Vec<Option<Arc<Type>>>,
    direct: Vec<Option<Arc<Type>>>,
}

impl Predefined {
    fn slot(&self, h: MPI_Datatype) -> Option<&Option<Arc<Type>>> {
        let table = match abi::direct_index(Kind::Datatype, h) {
            Some(_) => &self.direct,
            None => &self.builtin,
        };
        table.get((h & 0xff) as usize)
    }

    fn build() -> Self {
        let mut p = Self {
            builtin: vec![None; 256],
            direct: vec![None; 256],
        };
        for (h, t) in build_predefined() {
            let table = match abi::direct_index(Kind::Datatype, h) {
                Some(_) => &mut p.direct,
                None => &mut p.builtin,
            };
            let slot = &mut table[(h & 0xff) as usize];
            assert!(
                slot.is_none(),
                "two predefined datatypes share slot of {h:#x}"
            );
            *slot = Some(t);
        }
        p
    }
}

fn build_predefined() -> HashMap<MPI_Datatype, Arc<Type>> {
    let named = |mut t: Type, h: MPI_Datatype, name: &str| {
        t.name = name.to_string();
        t.predefined = Some(h);
        t.committed = true;
        t.elem = Some(elem_of(h));
        Arc::new(t)
    };
    let mut map: HashMap<MPI_Datatype, Arc<Type>> = BASIC
        .iter()
        .map(|&(h, name, class)| {
            let size = (h as u32 >> 8) as u8;
            let t = Type::predefined_basic(usize::from(size), prim(h, size, class), elem_of(h));
            (h, named(t, h, name))
        })
        .collect();
    for &(h, name, a, b) in PAIRS {
        let (a, b) = (map[&a].clone(), map[&b].clone());
        let second = (a.size.next_multiple_of(b.align)) as isize;
        let pieces = [
            Piece {
                disp: 0,
                count: 1,
                ty: &a,
            },
            Piece {
                disp: second,
                count: 1,
                ty: &b,
            },
        ];
        let t = compose(&pieces, true, Envelope::named()).expect("pair types are small");
        map.insert(h, named(t, h, name));
    }
    map
}

/// The predefined type of handle `h`, if it is one.
pub(super) fn predefined(h: MPI_Datatype) -> Option<&'static Arc<Type>> {
    static PREDEFINED: OnceLock<Predefined> = OnceLock::new();
    PREDEFINED
        .get_or_init(Predefined::build)
        .slot(h)?
        .as_ref()
        .filter(|t| t.predefined == Some(h))
}

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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is null or writable (MPI contract).
    unsafe { construct("MPI_Type_dup", oldtype, newtype, |old| Ok(Type::dup(old))) }
}

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    query("MPI_Type_size", datatype, |t| {
        let s = c_int::try_from(t.size).unwrap_or(abi::MPI_UNDEFINED);
        // SAFETY: output argument.
        unsafe { out(size, s) }
    })
}

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
// Packing (MPI-4.0 §5.2, §5.3).

/// Read the caller's position, check that `len` bytes from it fit in a
/// buffer of `size` bytes; returns the position.
///
/// # Safety
/// A non-null `position` is readable (MPI contract).
unsafe fn position_in<T: Copy + Into<i64>>(
    position: *const T,
    size: i64,
    len: usize,
    class: c_int,
) -> MpiResult<usize> {
    if position.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null position"));
    }
    // SAFETY: non-null, readable (the caller's promise).
    let pos: i64 = unsafe { *position }.into();
    let end = i64::try_from(len).ok().and_then(|l| l.checked_add(pos));
    match end {
        Some(end) if pos >= 0 && end <= size => Ok(pos as usize),
        _ => Err(err(
            class,
            format!("{len} bytes at position {pos} overrun a buffer of {size} bytes"),
        )),
    }
}

/// The caller's packing buffer: `len` bytes at `base + pos`, as a raw
/// slice (checked for null when it must hold data).
fn packing_buffer(base: *const c_void, pos: usize, len: usize) -> MpiResult<*mut [u8]> {
    if len == 0 {
        return Ok(std::ptr::slice_from_raw_parts_mut(
            std::ptr::NonNull::dangling().as_ptr(),
            0,
        ));
    }
    if base.is_null() {
        return Err(err(abi::MPI_ERR_BUFFER, "null packing buffer"));
    }
    let start = base.cast::<u8>().cast_mut().wrapping_add(pos);
    Ok(std::ptr::slice_from_raw_parts_mut(start, len))
}

/// Check that the data representation is "external32".
///
/// # Safety
/// `datarep` is null or a NUL-terminated string (MPI contract).
unsafe fn check_datarep(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null data representation"));
    }
    // SAFETY: a NUL-terminated string (MPI contract).
    let rep = unsafe { CStr::from_ptr(datarep) };
    if rep.to_bytes() == b"external32" {
        Ok(())
    } else {
        Err(err(
            abi::MPI_ERR_ARG,
            format!("unsupported data representation {rep:?}"),
        ))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Pack", comm, |rt| {
        rt.comm(comm_slot(comm)?)?;
        // SAFETY: forwarded from the caller.
        let ub = unsafe { UserBuf::new(rt, inbuf, incount, datatype)? };
        // SAFETY: `position` is the caller's in-out argument and `outbuf`
        // holds `outsize` bytes (MPI contract), of which `position_in`
        // checked that `pos + len` fit; nothing else refers to them.
        unsafe {
            let pos = position_in(position, outsize.into(), ub.len, abi::MPI_ERR_TRUNCATE)?;
            let dst = &mut *packing_buffer(outbuf, pos, ub.len)?;
            ub.dt.pack(ub.ptr, ub.count, dst);
            *position = (pos + ub.len) as c_int;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Unpack", comm, |rt| {
        rt.comm(comm_slot(comm)?)?;
        // SAFETY: forwarded from the caller.
        let ub = unsafe { UserBuf::new(rt, outbuf, outcount, datatype)? };
        // SAFETY: `position` is the caller's in-out argument and `inbuf`
        // holds `insize` readable bytes (MPI contract), of which
        // `position_in` checked that `pos + len` fit.
        unsafe {
            let pos = position_in(position, insize.into(), ub.len, abi::MPI_ERR_TRUNCATE)?;
            let src = &*packing_buffer(inbuf, pos, ub.len)?;
            ub.unpack(src);
            *position = (pos + ub.len) as c_int;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pack_size(
    incount: c_int,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut c_int,
) -> c_int {
    call("MPI_Pack_size", comm, |rt| {
        rt.comm(comm_slot(comm)?)?;
        let t = super::datatype(rt, datatype)?;
        let n = t
            .bytes(count(incount)?)
            .and_then(|n| c_int::try_from(n).ok())
            .ok_or_else(|| err(abi::MPI_ERR_COUNT, "packed size overflows int"))?;
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    call("MPI_Pack_external", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's string.
        unsafe { check_datarep(datarep)? };
        // SAFETY: forwarded from the caller.
        let ub = unsafe { UserBuf::new(rt, inbuf, incount, datatype)? };
        let len = ub
            .dt
            .external_size(ub.count)
            .ok_or_else(|| err(abi::MPI_ERR_COUNT, "packed size overflows"))?;
        // SAFETY: the send buffer is readable (MPI contract).
        let native = unsafe { ub.data() };
        // SAFETY: `position` is the caller's in-out argument and `outbuf`
        // holds `outsize` bytes (MPI contract), of which `position_in`
        // checked that `pos + len` fit; nothing else refers to them.
        unsafe {
            let pos = position_in(position, outsize, len, abi::MPI_ERR_TRUNCATE)?;
            let dst = &mut *packing_buffer(outbuf, pos, len)?;
            ub.dt.to_external(&native, ub.count, dst)?;
            *position = (pos + len) as MPI_Aint;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    call("MPI_Unpack_external", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's string.
        unsafe { check_datarep(datarep)? };
        // SAFETY: forwarded from the caller.
        let ub = unsafe { UserBuf::new(rt, outbuf, outcount, datatype)? };
        let len = ub
            .dt
            .external_size(ub.count)
            .ok_or_else(|| err(abi::MPI_ERR_COUNT, "packed size overflows"))?;
        let mut native = vec![0; ub.len];
        // SAFETY: `position` is the caller's in-out argument and `inbuf`
        // holds `insize` readable bytes (MPI contract), of which
        // `position_in` checked that `pos + len` fit.
        unsafe {
            let pos = position_in(position, insize, len, abi::MPI_ERR_TRUNCATE)?;
            let src = &*packing_buffer(inbuf, pos, len)?;
            ub.dt.from_external(src, ub.count, &mut native);
            ub.unpack(&native);
            *position = (pos + len) as MPI_Aint;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: MPI_Datatype,
    size: *mut MPI_Aint,
) -> c_int {
    call("MPI_Pack_external_size", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's string.
        unsafe { check_datarep(datarep)? };
        let t = super::datatype(rt, datatype)?;
        let n = t
            .external_size(count(incount)?)
            .ok_or_else(|| err(abi::MPI_ERR_COUNT, "packed size overflows"))?;
        // SAFETY: output argument.
        unsafe { out(size, n as MPI_Aint) }
    })
}

// ---------------------------------------------------------------------
// Elements of a status (MPI-4.0 §5.1.11, §12.3).

/// The basic elements `status` counts in `datatype`; `None` for
/// `MPI_UNDEFINED`.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or readable (MPI contract).
unsafe fn elements(
    rt: &Runtime,
    status: *const MPI_Status,
    dt: MPI_Datatype,
) -> MpiResult<Option<u64>> {
    if status.is_null() || abi::is_status_ignore(status) {
        return Err(err(abi::MPI_ERR_ARG, "no status"));
    }
    let t = super::datatype(rt, dt)?;
    // SAFETY: non-null status (MPI contract).
    let bytes = unsafe { (*status).bytes() };
    // MPICH counts its builtin types (not the pair types, which it
    // builds as structs) only in whole elements.
    let builtin = t.predefined.is_some() && abi::direct_index(Kind::Datatype, dt).is_none();
    if builtin && t.size > 0 && bytes % t.size as u64 != 0 {
        return Ok(None);
    }
    Ok(usize::try_from(bytes)
        .ok()
        .and_then(|b| t.elements_in(b))
        .map(|n| n as u64))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut c_int,
) -> c_int {
    call("MPI_Get_elements", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's status.
        let n = unsafe { elements(rt, status, datatype)? }
            .and_then(|n| c_int::try_from(n).ok())
            .unwrap_or(abi::MPI_UNDEFINED);
        // SAFETY: output argument.
        unsafe { out(count, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    call("MPI_Get_elements_x", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's status.
        let n = unsafe { elements(rt, status, datatype)? }
            .map_or(MPI_Count::from(abi::MPI_UNDEFINED), |n| n as MPI_Count);
        // SAFETY: output argument.
        unsafe { out(count, n) }
    })
}

/// Make `status` count `n` basic elements of `dt` (its cancelled flag
/// kept).
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or writable (MPI contract).
unsafe fn set_elements(
    rt: &Runtime,
    status: *mut MPI_Status,
    dt: MPI_Datatype,
    n: i64,
) -> MpiResult<()> {
    if status.is_null() || abi::is_status_ignore(status) {
        return Err(err(abi::MPI_ERR_ARG, "no status"));
    }
    let n =
        usize::try_from(n).map_err(|_| err(abi::MPI_ERR_COUNT, format!("negative count {n}")))?;
    let t = super::datatype(rt, dt)?;
    let bytes = t.bytes_of_elements(n).ok_or_else(|| {
        err(
            abi::MPI_ERR_ARG,
            format!("{n} elements of a type without any"),
        )
    })?;
    // SAFETY: non-null, writable status (MPI contract).
    let st = unsafe { &mut *status };
    let counted = MPI_Status::new(0, 0, bytes);
    st.count_lo = counted.count_lo;
    st.count_hi_and_cancelled = counted.count_hi_and_cancelled | (st.count_hi_and_cancelled & 1);
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: c_int,
) -> c_int {
    call("MPI_Status_set_elements", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: the caller's status.
        unsafe { set_elements(rt, status, datatype, count.into()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: MPI_Count,
) -> c_int {
    call("MPI_Status_set_elements_x", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: the caller's status.
        unsafe { set_elements(rt, status, datatype, count) }
    })
}

// ---------------------------------------------------------------------
// Addresses (MPI-4.0 §5.1.5).

/// The address of `location`, usable as a displacement from
/// `MPI_BOTTOM` (its provenance is exposed for that).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    call("MPI_Get_address", abi::MPI_COMM_WORLD, |_| {
        // SAFETY: output argument.
        unsafe { out(address, location.expose_provenance() as MPI_Aint) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_types_have_c_struct_layouts() {
        for (h, size, extent) in [
            (abi::MPI_FLOAT_INT, 8, 8),
            (abi::MPI_DOUBLE_INT, 12, 16),
            (abi::MPI_LONG_INT, 12, 16),
            (abi::MPI_SHORT_INT, 6, 8),
            (abi::MPI_LONG_DOUBLE_INT, 20, 32),
            (abi::MPI_2INT, 8, 8),
            (abi::MPI_2DOUBLE_PRECISION, 16, 16),
        ] {
            let t = predefined(h).unwrap();
            assert_eq!(
                (t.size, t.extent, t.elements),
                (size, extent, 2),
                "{}",
                t.name
            );
            assert!(t.committed && t.predefined == Some(h));
        }
        let c = predefined(abi::MPI_C_DOUBLE_COMPLEX).unwrap();
        assert_eq!((c.size, c.align, c.elements), (16, 8, 1));
        assert_eq!(predefined(abi::MPI_INT).unwrap().name, "MPI_INT");
        assert!(predefined(abi::MPI_DATATYPE_NULL).is_none());
        assert!(predefined(abi::direct_handle(Kind::Datatype, 5)).is_none());
        assert!(predefined(abi::direct_handle(Kind::Datatype, 0x101)).is_none());
        assert!(predefined(abi::MPI_CHAR | 0x1000).is_none());
        for &(h, name, _) in BASIC {
            assert_eq!(predefined(h).map(|t| t.predefined), Some(Some(h)), "{name}");
        }
    }
}
