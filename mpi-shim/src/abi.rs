//! The MPICH ABI, defined once.
//!
//! MPICH, Intel MPI and MVAPICH share one binary interface: the soname
//! `libmpi.so.12`, `int` handles whose bits encode the object kind,
//! predefined handles with fixed values, and a 20-byte `MPI_Status`. The
//! values below are facts of that interface (read off MPICH's `mpi.h`).
//! This table is the only place they are written: the Rust constants used
//! by the library and the `mpi.h` that `tessel-mpi-header` prints both come
//! from it, and a test compiles a program against our header and against
//! MPICH's and compares every value and prototype.
//!
//! Handles of objects the library creates use MPICH's "direct" encoding:
//! `0b10` in bits 30-31, the object kind in bits 26-29, an index below.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_int, c_void};

pub type MPI_Comm = c_int;
pub type MPI_Group = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Op = c_int;
pub type MPI_Request = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Info = c_int;
pub type MPI_Aint = libc::c_long;
pub type MPI_Count = libc::c_long;

/// `MPI_Status` as MPICH lays it out: the byte count split in two words,
/// the cancelled flag in the lowest bit of the high word.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

const _: () = assert!(size_of::<MPI_Status>() == 20);

impl MPI_Status {
    /// A status for `bytes` received from `source` with `tag`.
    pub fn new(source: c_int, tag: c_int, bytes: usize) -> Self {
        Self {
            count_lo: bytes as u32 as c_int,
            count_hi_and_cancelled: ((bytes as u64 >> 32) << 1) as c_int,
            MPI_SOURCE: source,
            MPI_TAG: tag,
            MPI_ERROR: MPI_SUCCESS,
        }
    }

    /// The byte count.
    pub fn bytes(&self) -> u64 {
        u64::from(self.count_lo as u32) | (u64::from(self.count_hi_and_cancelled as u32) >> 1) << 32
    }
}

/// Object kinds of MPICH's handle encoding (bits 26-29).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    Comm = 0x1,
    Group = 0x2,
    Datatype = 0x3,
    Errhandler = 0x5,
    Op = 0x6,
    Info = 0x7,
    Request = 0xb,
}

/// Handle of the `index`-th object of `kind` created by the library.
pub fn direct_handle(kind: Kind, index: usize) -> c_int {
    debug_assert!(index < 1 << 26);
    (0x8000_0000u32 | (kind as u32) << 26 | index as u32) as c_int
}

/// The index of a handle made by [`direct_handle`] for `kind`.
pub fn direct_index(kind: Kind, handle: c_int) -> Option<usize> {
    let h = handle as u32;
    (h >> 30 == 0b10 && (h >> 26) & 0xf == kind as u32).then_some((h & 0x03ff_ffff) as usize)
}

/// How a constant appears in C.
#[derive(Clone, Copy, Debug)]
pub enum CKind {
    /// `#define NAME (value)`.
    Int,
    /// `#define NAME ((Type)0x...)`: a handle of the named type.
    Handle(&'static str),
    /// `#define NAME ((Type) value)`: a special address.
    Pointer(&'static str),
}

/// One constant of the ABI: its C name, C form and value.
#[derive(Clone, Copy, Debug)]
pub struct Constant {
    pub name: &'static str,
    pub kind: CKind,
    pub value: i64,
}

macro_rules! constants {
    ($( $rust_ty:ty, $ckind:expr, $name:ident = $value:expr; )*) => {
        $(
            #[allow(missing_docs)]
            pub const $name: $rust_ty = $value as $rust_ty;
        )*
        /// Every constant, in header order.
        pub const CONSTANTS: &[Constant] = &[
            $( Constant { name: stringify!($name), kind: $ckind, value: $value as i64 }, )*
        ];
    };
}

const COMM: CKind = CKind::Handle("MPI_Comm");
const GROUP: CKind = CKind::Handle("MPI_Group");
const TYPE: CKind = CKind::Handle("MPI_Datatype");
const OP: CKind = CKind::Handle("MPI_Op");
const REQ: CKind = CKind::Handle("MPI_Request");
const ERRH: CKind = CKind::Handle("MPI_Errhandler");
const INFO: CKind = CKind::Handle("MPI_Info");
const INT: CKind = CKind::Int;

constants! {
    c_int, INT, MPI_VERSION = 4;
    c_int, INT, MPI_SUBVERSION = 0;

    // Null and predefined handles.
    MPI_Comm, COMM, MPI_COMM_NULL = 0x0400_0000;
    MPI_Comm, COMM, MPI_COMM_WORLD = 0x4400_0000;
    MPI_Comm, COMM, MPI_COMM_SELF = 0x4400_0001;
    MPI_Group, GROUP, MPI_GROUP_NULL = 0x0800_0000;
    MPI_Group, GROUP, MPI_GROUP_EMPTY = 0x4800_0000;
    MPI_Datatype, TYPE, MPI_DATATYPE_NULL = 0x0c00_0000;
    MPI_Op, OP, MPI_OP_NULL = 0x1800_0000;
    MPI_Request, REQ, MPI_REQUEST_NULL = 0x2c00_0000;
    MPI_Errhandler, ERRH, MPI_ERRHANDLER_NULL = 0x1400_0000;
    MPI_Errhandler, ERRH, MPI_ERRORS_ARE_FATAL = 0x5400_0000;
    MPI_Errhandler, ERRH, MPI_ERRORS_RETURN = 0x5400_0001;
    MPI_Errhandler, ERRH, MPI_ERRORS_ABORT = 0x5400_0003;
    MPI_Info, INFO, MPI_INFO_NULL = 0x1c00_0000;

    // Predefined datatypes: MPICH puts the size in bytes in bits 8-15.
    MPI_Datatype, TYPE, MPI_CHAR = 0x4c00_0101;
    MPI_Datatype, TYPE, MPI_SIGNED_CHAR = 0x4c00_0118;
    MPI_Datatype, TYPE, MPI_UNSIGNED_CHAR = 0x4c00_0102;
    MPI_Datatype, TYPE, MPI_BYTE = 0x4c00_010d;
    MPI_Datatype, TYPE, MPI_WCHAR = 0x4c00_040e;
    MPI_Datatype, TYPE, MPI_SHORT = 0x4c00_0203;
    MPI_Datatype, TYPE, MPI_UNSIGNED_SHORT = 0x4c00_0204;
    MPI_Datatype, TYPE, MPI_INT = 0x4c00_0405;
    MPI_Datatype, TYPE, MPI_UNSIGNED = 0x4c00_0406;
    MPI_Datatype, TYPE, MPI_LONG = 0x4c00_0807;
    MPI_Datatype, TYPE, MPI_UNSIGNED_LONG = 0x4c00_0808;
    MPI_Datatype, TYPE, MPI_FLOAT = 0x4c00_040a;
    MPI_Datatype, TYPE, MPI_DOUBLE = 0x4c00_080b;
    MPI_Datatype, TYPE, MPI_LONG_DOUBLE = 0x4c00_100c;
    MPI_Datatype, TYPE, MPI_LONG_LONG_INT = 0x4c00_0809;
    MPI_Datatype, TYPE, MPI_LONG_LONG = 0x4c00_0809;
    MPI_Datatype, TYPE, MPI_UNSIGNED_LONG_LONG = 0x4c00_0819;
    MPI_Datatype, TYPE, MPI_PACKED = 0x4c00_010f;
    MPI_Datatype, TYPE, MPI_INT8_T = 0x4c00_0137;
    MPI_Datatype, TYPE, MPI_INT16_T = 0x4c00_0238;
    MPI_Datatype, TYPE, MPI_INT32_T = 0x4c00_0439;
    MPI_Datatype, TYPE, MPI_INT64_T = 0x4c00_083a;
    MPI_Datatype, TYPE, MPI_UINT8_T = 0x4c00_013b;
    MPI_Datatype, TYPE, MPI_UINT16_T = 0x4c00_023c;
    MPI_Datatype, TYPE, MPI_UINT32_T = 0x4c00_043d;
    MPI_Datatype, TYPE, MPI_UINT64_T = 0x4c00_083e;
    MPI_Datatype, TYPE, MPI_C_BOOL = 0x4c00_013f;
    MPI_Datatype, TYPE, MPI_AINT = 0x4c00_0843;
    MPI_Datatype, TYPE, MPI_OFFSET = 0x4c00_0844;
    MPI_Datatype, TYPE, MPI_COUNT = 0x4c00_0845;
    MPI_Datatype, TYPE, MPI_2INT = 0x4c00_0816;
    MPI_Datatype, TYPE, MPI_FLOAT_INT = 0x8c00_0000u32;
    MPI_Datatype, TYPE, MPI_DOUBLE_INT = 0x8c00_0001u32;
    MPI_Datatype, TYPE, MPI_LONG_INT = 0x8c00_0002u32;
    MPI_Datatype, TYPE, MPI_SHORT_INT = 0x8c00_0003u32;
    MPI_Datatype, TYPE, MPI_LONG_DOUBLE_INT = 0x8c00_0004u32;

    // Predefined reduction operations.
    MPI_Op, OP, MPI_MAX = 0x5800_0001;
    MPI_Op, OP, MPI_MIN = 0x5800_0002;
    MPI_Op, OP, MPI_SUM = 0x5800_0003;
    MPI_Op, OP, MPI_PROD = 0x5800_0004;
    MPI_Op, OP, MPI_LAND = 0x5800_0005;
    MPI_Op, OP, MPI_BAND = 0x5800_0006;
    MPI_Op, OP, MPI_LOR = 0x5800_0007;
    MPI_Op, OP, MPI_BOR = 0x5800_0008;
    MPI_Op, OP, MPI_LXOR = 0x5800_0009;
    MPI_Op, OP, MPI_BXOR = 0x5800_000a;
    MPI_Op, OP, MPI_MINLOC = 0x5800_000b;
    MPI_Op, OP, MPI_MAXLOC = 0x5800_000c;
    MPI_Op, OP, MPI_REPLACE = 0x5800_000d;
    MPI_Op, OP, MPI_NO_OP = 0x5800_000e;

    // Ranks, tags, sizes.
    c_int, INT, MPI_PROC_NULL = -1;
    c_int, INT, MPI_ANY_SOURCE = -2;
    c_int, INT, MPI_ROOT = -3;
    c_int, INT, MPI_ANY_TAG = -1;
    c_int, INT, MPI_UNDEFINED = -32766;
    c_int, INT, MPI_IDENT = 0;
    c_int, INT, MPI_CONGRUENT = 1;
    c_int, INT, MPI_SIMILAR = 2;
    c_int, INT, MPI_UNEQUAL = 3;
    c_int, INT, MPI_KEYVAL_INVALID = 0x2400_0000;
    c_int, INT, MPI_TAG_UB = 0x6440_0001;
    c_int, INT, MPI_HOST = 0x6440_0003;
    c_int, INT, MPI_IO = 0x6440_0005;
    c_int, INT, MPI_WTIME_IS_GLOBAL = 0x6440_0007;
    c_int, INT, MPI_UNIVERSE_SIZE = 0x6440_0009;
    c_int, INT, MPI_LASTUSEDCODE = 0x6440_000b;
    c_int, INT, MPI_APPNUM = 0x6440_000d;
    c_int, INT, MPI_MAX_PROCESSOR_NAME = 128;
    c_int, INT, MPI_MAX_LIBRARY_VERSION_STRING = 8192;
    c_int, INT, MPI_MAX_ERROR_STRING = 512;
    c_int, INT, MPI_MAX_OBJECT_NAME = 128;
    c_int, INT, MPI_MAX_INFO_KEY = 255;
    c_int, INT, MPI_MAX_INFO_VAL = 1024;
    c_int, INT, MPI_THREAD_SINGLE = 0;
    c_int, INT, MPI_THREAD_FUNNELED = 1;
    c_int, INT, MPI_THREAD_SERIALIZED = 2;
    c_int, INT, MPI_THREAD_MULTIPLE = 3;
    c_int, INT, MPI_COMM_TYPE_SHARED = 1;

    // Error classes.
    c_int, INT, MPI_SUCCESS = 0;
    c_int, INT, MPI_ERR_BUFFER = 1;
    c_int, INT, MPI_ERR_COUNT = 2;
    c_int, INT, MPI_ERR_TYPE = 3;
    c_int, INT, MPI_ERR_TAG = 4;
    c_int, INT, MPI_ERR_COMM = 5;
    c_int, INT, MPI_ERR_RANK = 6;
    c_int, INT, MPI_ERR_ROOT = 7;
    c_int, INT, MPI_ERR_GROUP = 8;
    c_int, INT, MPI_ERR_OP = 9;
    c_int, INT, MPI_ERR_TOPOLOGY = 10;
    c_int, INT, MPI_ERR_DIMS = 11;
    c_int, INT, MPI_ERR_ARG = 12;
    c_int, INT, MPI_ERR_UNKNOWN = 13;
    c_int, INT, MPI_ERR_TRUNCATE = 14;
    c_int, INT, MPI_ERR_OTHER = 15;
    c_int, INT, MPI_ERR_INTERN = 16;
    c_int, INT, MPI_ERR_IN_STATUS = 17;
    c_int, INT, MPI_ERR_PENDING = 18;
    c_int, INT, MPI_ERR_REQUEST = 19;
    c_int, INT, MPI_ERR_INFO = 28;
    c_int, INT, MPI_ERR_NO_MEM = 34;
    c_int, INT, MPI_ERR_UNSUPPORTED_OPERATION = 44;
    c_int, INT, MPI_ERR_LASTCODE = 0x3fff_ffff;
}

/// `MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE`: special addresses.
pub const POINTERS: &[Constant] = &[
    Constant {
        name: "MPI_BOTTOM",
        kind: CKind::Pointer("void *"),
        value: 0,
    },
    Constant {
        name: "MPI_IN_PLACE",
        kind: CKind::Pointer("void *"),
        value: -1,
    },
    Constant {
        name: "MPI_STATUS_IGNORE",
        kind: CKind::Pointer("MPI_Status *"),
        value: 1,
    },
    Constant {
        name: "MPI_STATUSES_IGNORE",
        kind: CKind::Pointer("MPI_Status *"),
        value: 1,
    },
];

/// `MPI_IN_PLACE` as Rust sees it.
pub fn is_in_place(p: *const c_void) -> bool {
    p as isize == -1
}

/// `MPI_STATUS_IGNORE` / `MPI_STATUSES_IGNORE`.
pub fn is_status_ignore(p: *const MPI_Status) -> bool {
    p as usize == 1
}

/// The text of `mpi.h`: typedefs, every constant, every prototype.
pub fn header() -> String {
    use std::fmt::Write;
    let mut h = String::from(HEADER_PRELUDE);
    for c in CONSTANTS.iter().chain(POINTERS) {
        let _ = match c.kind {
            CKind::Int => writeln!(h, "#define {} ({})", c.name, c.value),
            CKind::Handle(ty) => writeln!(h, "#define {} (({ty})0x{:08x})", c.name, c.value as u32),
            CKind::Pointer(ty) => writeln!(h, "#define {} (({ty}) {})", c.name, c.value),
        };
    }
    h.push('\n');
    for p in crate::mpich::prototypes() {
        let _ = writeln!(h, "{p};");
    }
    h.push_str(HEADER_END);
    h
}

const HEADER_PRELUDE: &str = "\
/* mpi.h of Tessel's MPI library: the MPICH ABI (libmpi.so.12).
 * Generated by tessel-mpi-header from mpi-shim/src/abi.rs; do not edit. */
#ifndef TESSEL_MPI_H
#define TESSEL_MPI_H

#ifdef __cplusplus
extern \"C\" {
#endif

#define TESSEL_MPI 1

typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Errhandler;
typedef int MPI_Info;
typedef long MPI_Aint;
typedef long MPI_Count;
typedef long MPI_Offset;

typedef struct MPI_Status {
    int count_lo;
    int count_hi_and_cancelled;
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
} MPI_Status;

typedef void (MPI_User_function)(void *, void *, int *, MPI_Datatype *);

";

const HEADER_END: &str = "
#ifdef __cplusplus
}
#endif

#endif /* TESSEL_MPI_H */
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_count_round_trips_beyond_32_bits() {
        for bytes in [0usize, 1, 1 << 31, (1 << 32) + 5, (1 << 40) + 3] {
            assert_eq!(MPI_Status::new(1, 2, bytes).bytes(), bytes as u64);
        }
    }

    #[test]
    fn direct_handles_decode_only_for_their_kind() {
        let h = direct_handle(Kind::Request, 42);
        assert_eq!(direct_index(Kind::Request, h), Some(42));
        assert_eq!(direct_index(Kind::Comm, h), None);
        assert_eq!(direct_index(Kind::Comm, MPI_COMM_WORLD), None);
    }

    #[test]
    fn header_names_are_unique() {
        let mut names: Vec<_> = CONSTANTS.iter().chain(POINTERS).map(|c| c.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
