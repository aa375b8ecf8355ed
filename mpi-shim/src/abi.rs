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
pub type MPI_Win = c_int;
pub type MPI_Session = c_int;
pub type MPI_Message = c_int;
pub type MPI_Fint = c_int;
pub type MPI_Aint = libc::c_long;
pub type MPI_Count = libc::c_long;
pub type MPI_Offset = libc::c_long;
/// MPICH's (ROMIO's) file handle is a pointer to an opaque structure.
pub type MPI_File = *mut c_void;
/// The `MPI_T_*` handles are pointers to opaque structures in MPICH.
pub type MPI_T_enum = *mut c_void;
pub type MPI_T_cvar_handle = *mut c_void;
pub type MPI_T_pvar_handle = *mut c_void;
pub type MPI_T_pvar_session = *mut c_void;
pub type MPI_T_event_registration = *mut c_void;
pub type MPI_T_event_instance = *mut c_void;

/// `MPI_Status` as MPICH lays it out: the byte count split in two words,
/// the cancelled flag in the lowest bit of the high word (see
/// `mpich::status`, which reads and writes it).
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
    Win = 0x8,
    Keyval = 0x9,
    Request = 0xb,
    /// MPICH's session kind (`MPI_SESSION_NULL` is `0x38000000`).
    Session = 0xe,
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
    /// A member of the C enumeration named here (MPICH declares some
    /// constants as enumerators, not macros); consecutive members of one
    /// enumeration are declared together.
    Enum(&'static str),
    /// `#define NAME ((Type)symbol)`: a predefined callback, a function
    /// the library exports under the name MPICH gives it.
    Function(&'static str, &'static str),
    /// `extern Type NAME;`: data the library exports (MPICH declares
    /// these as variables, so binaries refer to them by symbol).
    Extern(&'static str),
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
const WIN: CKind = CKind::Handle("MPI_Win");
const SESSION: CKind = CKind::Handle("MPI_Session");
const MESSAGE: CKind = CKind::Handle("MPI_Message");
const INT: CKind = CKind::Int;
const WIN_FLAVOR: CKind = CKind::Enum("MPIR_Win_flavor_t");
const WIN_MODEL: CKind = CKind::Enum("MPIR_Win_model_t");
const TOPO: CKind = CKind::Enum("MPIR_Topo_type");
const COMBINER: CKind = CKind::Enum("MPIR_Combiner_enum");
const T_VERBOSITY: CKind = CKind::Enum("MPIR_T_verbosity_t");
const T_BIND: CKind = CKind::Enum("MPIR_T_bind_t");
const T_SCOPE: CKind = CKind::Enum("MPIR_T_scope_t");
const T_PVAR_CLASS: CKind = CKind::Enum("MPIR_T_pvar_class_t");
const T_CB_SAFETY: CKind = CKind::Enum("MPI_T_cb_safety");
const T_SOURCE_ORDER: CKind = CKind::Enum("MPI_T_source_order");

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

    // Handles of the kinds this library does not create (yet).
    MPI_Win, WIN, MPI_WIN_NULL = 0x2000_0000;
    MPI_Session, SESSION, MPI_SESSION_NULL = 0x3800_0000;
    MPI_Message, MESSAGE, MPI_MESSAGE_NULL = 0x2c00_0000;
    MPI_Message, MESSAGE, MPI_MESSAGE_NO_PROC = 0x6c00_0000;
    MPI_Info, INFO, MPI_INFO_ENV = 0x5c00_0001;

    // The remaining predefined datatypes: bounds markers (removed in
    // MPI-3.0, kept by MPICH), Fortran, complex and C++ types.
    MPI_Datatype, TYPE, MPI_LB = 0x4c00_0010;
    MPI_Datatype, TYPE, MPI_UB = 0x4c00_0011;
    MPI_Datatype, TYPE, MPI_COMPLEX = 0x4c00_081e;
    MPI_Datatype, TYPE, MPI_DOUBLE_COMPLEX = 0x4c00_1022;
    MPI_Datatype, TYPE, MPI_LOGICAL = 0x4c00_041d;
    MPI_Datatype, TYPE, MPI_REAL = 0x4c00_041c;
    MPI_Datatype, TYPE, MPI_DOUBLE_PRECISION = 0x4c00_081f;
    MPI_Datatype, TYPE, MPI_INTEGER = 0x4c00_041b;
    MPI_Datatype, TYPE, MPI_2INTEGER = 0x4c00_0820;
    MPI_Datatype, TYPE, MPI_2REAL = 0x4c00_0821;
    MPI_Datatype, TYPE, MPI_2DOUBLE_PRECISION = 0x4c00_1023;
    MPI_Datatype, TYPE, MPI_CHARACTER = 0x4c00_011a;
    MPI_Datatype, TYPE, MPI_REAL4 = 0x4c00_0427;
    MPI_Datatype, TYPE, MPI_REAL8 = 0x4c00_0829;
    MPI_Datatype, TYPE, MPI_REAL16 = 0x4c00_102b;
    MPI_Datatype, TYPE, MPI_COMPLEX8 = 0x4c00_0828;
    MPI_Datatype, TYPE, MPI_COMPLEX16 = 0x4c00_102a;
    MPI_Datatype, TYPE, MPI_COMPLEX32 = 0x4c00_202c;
    MPI_Datatype, TYPE, MPI_INTEGER1 = 0x4c00_012d;
    MPI_Datatype, TYPE, MPI_INTEGER2 = 0x4c00_022f;
    MPI_Datatype, TYPE, MPI_INTEGER4 = 0x4c00_0430;
    MPI_Datatype, TYPE, MPI_INTEGER8 = 0x4c00_0831;
    // MPICH has no 16-byte Fortran integer: the null datatype.
    MPI_Datatype, TYPE, MPI_INTEGER16 = 0x0c00_0000;
    MPI_Datatype, TYPE, MPI_C_FLOAT_COMPLEX = 0x4c00_0840;
    MPI_Datatype, TYPE, MPI_C_COMPLEX = 0x4c00_0840;
    MPI_Datatype, TYPE, MPI_C_DOUBLE_COMPLEX = 0x4c00_1041;
    MPI_Datatype, TYPE, MPI_C_LONG_DOUBLE_COMPLEX = 0x4c00_2042;
    MPI_Datatype, TYPE, MPI_CXX_BOOL = 0x4c00_0133;
    MPI_Datatype, TYPE, MPI_CXX_FLOAT_COMPLEX = 0x4c00_0834;
    MPI_Datatype, TYPE, MPI_CXX_DOUBLE_COMPLEX = 0x4c00_1035;
    MPI_Datatype, TYPE, MPI_CXX_LONG_DOUBLE_COMPLEX = 0x4c00_2036;
    // MPICH's half-precision float (mpi4py's 'e' and 'f2' type codes).
    MPI_Datatype, TYPE, MPIX_C_FLOAT16 = 0x4c00_0246;
    c_int, INT, MPI_TYPECLASS_REAL = 1;
    c_int, INT, MPI_TYPECLASS_INTEGER = 2;
    c_int, INT, MPI_TYPECLASS_COMPLEX = 3;

    // Datatype decoding (MPI-4.0 §5.1.13).
    c_int, COMBINER, MPI_COMBINER_NAMED = 1;
    c_int, COMBINER, MPI_COMBINER_DUP = 2;
    c_int, COMBINER, MPI_COMBINER_CONTIGUOUS = 3;
    c_int, COMBINER, MPI_COMBINER_VECTOR = 4;
    c_int, COMBINER, MPI_COMBINER_HVECTOR_INTEGER = 5;
    c_int, COMBINER, MPI_COMBINER_HVECTOR = 6;
    c_int, COMBINER, MPI_COMBINER_INDEXED = 7;
    c_int, COMBINER, MPI_COMBINER_HINDEXED_INTEGER = 8;
    c_int, COMBINER, MPI_COMBINER_HINDEXED = 9;
    c_int, COMBINER, MPI_COMBINER_INDEXED_BLOCK = 10;
    c_int, COMBINER, MPI_COMBINER_STRUCT_INTEGER = 11;
    c_int, COMBINER, MPI_COMBINER_STRUCT = 12;
    c_int, COMBINER, MPI_COMBINER_SUBARRAY = 13;
    c_int, COMBINER, MPI_COMBINER_DARRAY = 14;
    c_int, COMBINER, MPI_COMBINER_F90_REAL = 15;
    c_int, COMBINER, MPI_COMBINER_F90_COMPLEX = 16;
    c_int, COMBINER, MPI_COMBINER_F90_INTEGER = 17;
    c_int, COMBINER, MPI_COMBINER_RESIZED = 18;
    c_int, COMBINER, MPI_COMBINER_HINDEXED_BLOCK = 19;
    c_int, INT, MPI_ORDER_C = 56;
    c_int, INT, MPI_ORDER_FORTRAN = 57;
    c_int, INT, MPI_DISTRIBUTE_BLOCK = 121;
    c_int, INT, MPI_DISTRIBUTE_CYCLIC = 122;
    c_int, INT, MPI_DISTRIBUTE_NONE = 123;
    c_int, INT, MPI_DISTRIBUTE_DFLT_DARG = -49767;

    // Topologies (MPI-4.0 §8.5) and communicator split types.
    c_int, TOPO, MPI_GRAPH = 1;
    c_int, TOPO, MPI_CART = 2;
    c_int, TOPO, MPI_DIST_GRAPH = 3;
    c_int, INT, MPI_COMM_TYPE_HW_GUIDED = 2;
    c_int, INT, MPI_COMM_TYPE_HW_UNGUIDED = 3;

    // Buffered sends, limits on names.
    c_int, INT, MPI_BSEND_OVERHEAD = 96;
    c_int, INT, MPI_MAX_PORT_NAME = 256;
    c_int, INT, MPI_MAX_STRINGTAG_LEN = 256;
    c_int, INT, MPI_MAX_PSET_NAME_LEN = 256;
    c_int, INT, MPI_MAX_DATAREP_STRING = 128;

    // One-sided communication (MPI-4.0 §12): window attributes, flavors,
    // memory models, lock types, assertions.
    c_int, INT, MPI_WIN_BASE = 0x6600_0001;
    c_int, INT, MPI_WIN_SIZE = 0x6600_0003;
    c_int, INT, MPI_WIN_DISP_UNIT = 0x6600_0005;
    c_int, INT, MPI_WIN_CREATE_FLAVOR = 0x6600_0007;
    c_int, INT, MPI_WIN_MODEL = 0x6600_0009;
    c_int, WIN_FLAVOR, MPI_WIN_FLAVOR_CREATE = 1;
    c_int, WIN_FLAVOR, MPI_WIN_FLAVOR_ALLOCATE = 2;
    c_int, WIN_FLAVOR, MPI_WIN_FLAVOR_DYNAMIC = 3;
    c_int, WIN_FLAVOR, MPI_WIN_FLAVOR_SHARED = 4;
    c_int, WIN_MODEL, MPI_WIN_SEPARATE = 1;
    c_int, WIN_MODEL, MPI_WIN_UNIFIED = 2;
    c_int, INT, MPI_LOCK_EXCLUSIVE = 234;
    c_int, INT, MPI_LOCK_SHARED = 235;
    c_int, INT, MPI_MODE_NOCHECK = 1024;
    c_int, INT, MPI_MODE_NOSTORE = 2048;
    c_int, INT, MPI_MODE_NOPUT = 4096;
    c_int, INT, MPI_MODE_NOPRECEDE = 8192;
    c_int, INT, MPI_MODE_NOSUCCEED = 16384;

    // MPI-IO (MPI-4.0 §14): access modes, seek origins.
    c_int, INT, MPI_MODE_RDONLY = 2;
    c_int, INT, MPI_MODE_RDWR = 8;
    c_int, INT, MPI_MODE_WRONLY = 4;
    c_int, INT, MPI_MODE_CREATE = 1;
    c_int, INT, MPI_MODE_EXCL = 64;
    c_int, INT, MPI_MODE_DELETE_ON_CLOSE = 16;
    c_int, INT, MPI_MODE_UNIQUE_OPEN = 32;
    c_int, INT, MPI_MODE_APPEND = 128;
    c_int, INT, MPI_MODE_SEQUENTIAL = 256;
    MPI_Offset, INT, MPI_DISPLACEMENT_CURRENT = -54278278;
    c_int, INT, MPI_SEEK_SET = 600;
    c_int, INT, MPI_SEEK_CUR = 602;
    c_int, INT, MPI_SEEK_END = 604;

    // Fortran status access from C (MPI-4.0 §19.3.5).
    c_int, INT, MPI_F_STATUS_SIZE = 5;
    c_int, INT, MPI_F_SOURCE = 2;
    c_int, INT, MPI_F_TAG = 3;
    c_int, INT, MPI_F_ERROR = 4;

    // The tool information interface (MPI-4.0 §15.3).
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_INVALID = 0;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_USER_BASIC = 221;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_USER_DETAIL = 222;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_USER_ALL = 223;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_TUNER_BASIC = 224;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_TUNER_DETAIL = 225;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_TUNER_ALL = 226;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_MPIDEV_BASIC = 227;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_MPIDEV_DETAIL = 228;
    c_int, T_VERBOSITY, MPI_T_VERBOSITY_MPIDEV_ALL = 229;
    c_int, T_BIND, MPI_T_BIND_INVALID = 0;
    c_int, T_BIND, MPI_T_BIND_NO_OBJECT = 9700;
    c_int, T_BIND, MPI_T_BIND_MPI_COMM = 9701;
    c_int, T_BIND, MPI_T_BIND_MPI_DATATYPE = 9702;
    c_int, T_BIND, MPI_T_BIND_MPI_ERRHANDLER = 9703;
    c_int, T_BIND, MPI_T_BIND_MPI_FILE = 9704;
    c_int, T_BIND, MPI_T_BIND_MPI_GROUP = 9705;
    c_int, T_BIND, MPI_T_BIND_MPI_OP = 9706;
    c_int, T_BIND, MPI_T_BIND_MPI_REQUEST = 9707;
    c_int, T_BIND, MPI_T_BIND_MPI_WIN = 9708;
    c_int, T_BIND, MPI_T_BIND_MPI_MESSAGE = 9709;
    c_int, T_BIND, MPI_T_BIND_MPI_INFO = 9710;
    c_int, T_SCOPE, MPI_T_SCOPE_INVALID = 0;
    c_int, T_SCOPE, MPI_T_SCOPE_CONSTANT = 60438;
    c_int, T_SCOPE, MPI_T_SCOPE_READONLY = 60439;
    c_int, T_SCOPE, MPI_T_SCOPE_LOCAL = 60440;
    c_int, T_SCOPE, MPI_T_SCOPE_GROUP = 60441;
    c_int, T_SCOPE, MPI_T_SCOPE_GROUP_EQ = 60442;
    c_int, T_SCOPE, MPI_T_SCOPE_ALL = 60443;
    c_int, T_SCOPE, MPI_T_SCOPE_ALL_EQ = 60444;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_INVALID = 0;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_STATE = 240;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_LEVEL = 241;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_SIZE = 242;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_PERCENTAGE = 243;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_HIGHWATERMARK = 244;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_LOWWATERMARK = 245;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_COUNTER = 246;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_AGGREGATE = 247;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_TIMER = 248;
    c_int, T_PVAR_CLASS, MPI_T_PVAR_CLASS_GENERIC = 249;
    c_int, T_CB_SAFETY, MPI_T_CB_REQUIRE_NONE = 0;
    c_int, T_CB_SAFETY, MPI_T_CB_REQUIRE_MPI_RESTRICTED = 1;
    c_int, T_CB_SAFETY, MPI_T_CB_REQUIRE_THREAD_SAFE = 2;
    c_int, T_CB_SAFETY, MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE = 3;
    c_int, T_SOURCE_ORDER, MPI_T_SOURCE_ORDERED = 0;
    c_int, T_SOURCE_ORDER, MPI_T_SOURCE_UNORDERED = 1;

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
    c_int, INT, MPI_ERR_ACCESS = 20;
    c_int, INT, MPI_ERR_AMODE = 21;
    c_int, INT, MPI_ERR_BAD_FILE = 22;
    c_int, INT, MPI_ERR_CONVERSION = 23;
    c_int, INT, MPI_ERR_DUP_DATAREP = 24;
    c_int, INT, MPI_ERR_FILE_EXISTS = 25;
    c_int, INT, MPI_ERR_FILE_IN_USE = 26;
    c_int, INT, MPI_ERR_FILE = 27;
    c_int, INT, MPI_ERR_INFO = 28;
    c_int, INT, MPI_ERR_INFO_KEY = 29;
    c_int, INT, MPI_ERR_INFO_VALUE = 30;
    c_int, INT, MPI_ERR_INFO_NOKEY = 31;
    c_int, INT, MPI_ERR_IO = 32;
    c_int, INT, MPI_ERR_NAME = 33;
    c_int, INT, MPI_ERR_NO_MEM = 34;
    c_int, INT, MPI_ERR_NOT_SAME = 35;
    c_int, INT, MPI_ERR_NO_SPACE = 36;
    c_int, INT, MPI_ERR_NO_SUCH_FILE = 37;
    c_int, INT, MPI_ERR_PORT = 38;
    c_int, INT, MPI_ERR_QUOTA = 39;
    c_int, INT, MPI_ERR_READ_ONLY = 40;
    c_int, INT, MPI_ERR_SERVICE = 41;
    c_int, INT, MPI_ERR_SPAWN = 42;
    c_int, INT, MPI_ERR_UNSUPPORTED_DATAREP = 43;
    c_int, INT, MPI_ERR_UNSUPPORTED_OPERATION = 44;
    c_int, INT, MPI_ERR_WIN = 45;
    c_int, INT, MPI_ERR_BASE = 46;
    c_int, INT, MPI_ERR_LOCKTYPE = 47;
    c_int, INT, MPI_ERR_KEYVAL = 48;
    c_int, INT, MPI_ERR_RMA_CONFLICT = 49;
    c_int, INT, MPI_ERR_RMA_SYNC = 50;
    c_int, INT, MPI_ERR_SIZE = 51;
    c_int, INT, MPI_ERR_DISP = 52;
    c_int, INT, MPI_ERR_ASSERT = 53;
    c_int, INT, MPI_ERR_RMA_RANGE = 55;
    c_int, INT, MPI_ERR_RMA_ATTACH = 56;
    c_int, INT, MPI_ERR_RMA_SHARED = 57;
    c_int, INT, MPI_ERR_RMA_FLAVOR = 58;
    c_int, INT, MPI_T_ERR_MEMORY = 59;
    c_int, INT, MPI_T_ERR_NOT_INITIALIZED = 60;
    c_int, INT, MPI_T_ERR_CANNOT_INIT = 61;
    c_int, INT, MPI_T_ERR_INVALID_INDEX = 62;
    c_int, INT, MPI_T_ERR_INVALID_ITEM = 63;
    c_int, INT, MPI_T_ERR_INVALID_HANDLE = 64;
    c_int, INT, MPI_T_ERR_OUT_OF_HANDLES = 65;
    c_int, INT, MPI_T_ERR_OUT_OF_SESSIONS = 66;
    c_int, INT, MPI_T_ERR_INVALID_SESSION = 67;
    c_int, INT, MPI_T_ERR_CVAR_SET_NOT_NOW = 68;
    c_int, INT, MPI_T_ERR_CVAR_SET_NEVER = 69;
    c_int, INT, MPI_T_ERR_PVAR_NO_STARTSTOP = 70;
    c_int, INT, MPI_T_ERR_PVAR_NO_WRITE = 71;
    c_int, INT, MPI_T_ERR_PVAR_NO_ATOMIC = 72;
    c_int, INT, MPI_T_ERR_INVALID_NAME = 73;
    c_int, INT, MPI_T_ERR_INVALID = 74;
    c_int, INT, MPI_ERR_SESSION = 75;
    c_int, INT, MPI_ERR_PROC_ABORTED = 76;
    c_int, INT, MPI_ERR_VALUE_TOO_LARGE = 77;
    c_int, INT, MPI_T_ERR_NOT_SUPPORTED = 78;
    c_int, INT, MPI_ERR_LASTCODE = 0x3fff_ffff;

}

/// Error classes MPI-4.1 and 5.0 added that MPICH 4.0's `mpi.h`, which
/// this ABI's header reproduces, lacks: the library has them at MPICH 5's
/// values (the standard ABI's header names them), out of the header.
pub const MPI_T_ERR_NOT_ACCESSIBLE: c_int = 79;
pub const MPI_ERR_ERRHANDLER: c_int = 80;
pub const MPI_ERR_ABI: c_int = 81;

/// [`MPI_T_ERR_NOT_ACCESSIBLE`], [`MPI_ERR_ERRHANDLER`], [`MPI_ERR_ABI`]
/// by name.
pub const LATER_CLASSES: &[Constant] = &[
    Constant {
        name: "MPI_T_ERR_NOT_ACCESSIBLE",
        kind: CKind::Int,
        value: MPI_T_ERR_NOT_ACCESSIBLE as i64,
    },
    Constant {
        name: "MPI_ERR_ERRHANDLER",
        kind: CKind::Int,
        value: MPI_ERR_ERRHANDLER as i64,
    },
    Constant {
        name: "MPI_ERR_ABI",
        kind: CKind::Int,
        value: MPI_ERR_ABI as i64,
    },
];

const fn pointer(name: &'static str, ty: &'static str, value: i64) -> Constant {
    Constant {
        name,
        kind: CKind::Pointer(ty),
        value,
    }
}

/// A predefined callback: `symbol` cast to `ty`.
const fn function(name: &'static str, ty: &'static str, symbol: &'static str) -> Constant {
    Constant {
        name,
        kind: CKind::Function(ty, symbol),
        value: 0,
    }
}

const fn data(name: &'static str, ty: &'static str) -> Constant {
    Constant {
        name,
        kind: CKind::Extern(ty),
        value: 0,
    }
}

/// The constants that are addresses: special buffer and status
/// addresses, null handles of pointer type, null and predefined
/// callbacks, and the data symbols the library exports (in
/// `mpich::predefined`).
pub const POINTERS: &[Constant] = &[
    pointer("MPI_BOTTOM", "void *", 0),
    pointer("MPI_IN_PLACE", "void *", -1),
    pointer("MPI_STATUS_IGNORE", "MPI_Status *", 1),
    pointer("MPI_STATUSES_IGNORE", "MPI_Status *", 1),
    pointer("MPI_ERRCODES_IGNORE", "int *", 0),
    pointer("MPI_ARGV_NULL", "char **", 0),
    pointer("MPI_ARGVS_NULL", "char ***", 0),
    pointer("MPI_FILE_NULL", "MPI_File", 0),
    pointer("MPI_T_ENUM_NULL", "MPI_T_enum", 0),
    pointer("MPI_T_CVAR_HANDLE_NULL", "MPI_T_cvar_handle", 0),
    pointer("MPI_T_PVAR_HANDLE_NULL", "MPI_T_pvar_handle", 0),
    pointer("MPI_T_PVAR_SESSION_NULL", "MPI_T_pvar_session", 0),
    pointer("MPI_NULL_COPY_FN", "MPI_Copy_function *", 0),
    pointer("MPI_NULL_DELETE_FN", "MPI_Delete_function *", 0),
    pointer("MPI_COMM_NULL_COPY_FN", "MPI_Comm_copy_attr_function *", 0),
    pointer(
        "MPI_COMM_NULL_DELETE_FN",
        "MPI_Comm_delete_attr_function *",
        0,
    ),
    pointer("MPI_WIN_NULL_COPY_FN", "MPI_Win_copy_attr_function *", 0),
    pointer(
        "MPI_WIN_NULL_DELETE_FN",
        "MPI_Win_delete_attr_function *",
        0,
    ),
    pointer("MPI_TYPE_NULL_COPY_FN", "MPI_Type_copy_attr_function *", 0),
    pointer(
        "MPI_TYPE_NULL_DELETE_FN",
        "MPI_Type_delete_attr_function *",
        0,
    ),
    pointer(
        "MPI_CONVERSION_FN_NULL",
        "MPI_Datarep_conversion_function *",
        0,
    ),
    pointer(
        "MPI_CONVERSION_FN_NULL_C",
        "MPI_Datarep_conversion_function_c *",
        0,
    ),
    function("MPI_DUP_FN", "MPI_Copy_function *", DUP_FN),
    function("MPI_COMM_DUP_FN", "MPI_Comm_copy_attr_function *", DUP_FN),
    function("MPI_WIN_DUP_FN", "MPI_Win_copy_attr_function *", DUP_FN),
    function("MPI_TYPE_DUP_FN", "MPI_Type_copy_attr_function *", DUP_FN),
    data("MPI_UNWEIGHTED", "int * const"),
    data("MPI_WEIGHTS_EMPTY", "int * const"),
    data("MPI_F_STATUS_IGNORE", "MPI_Fint *"),
    data("MPI_F_STATUSES_IGNORE", "MPI_Fint *"),
    data("MPI_F08_STATUS_IGNORE", "MPI_F08_status *"),
    data("MPI_F08_STATUSES_IGNORE", "MPI_F08_status *"),
    data("MPI_T_PVAR_ALL_HANDLES", "MPI_T_pvar_handle const"),
];

/// Handle kinds whose Fortran conversions (`MPI_Comm_c2f`, ...) and their
/// profiling names (`PMPI_Comm_c2f`, ...) are macros in MPICH's header,
/// with their C type: a Fortran handle of an `int` handle is the same
/// number (MPI-4.0 §19.3.4).
pub const HANDLE_CONVERSIONS: &[(&str, &str)] = &[
    ("Comm", "MPI_Comm"),
    ("Type", "MPI_Datatype"),
    ("Group", "MPI_Group"),
    ("Info", "MPI_Info"),
    ("Request", "MPI_Request"),
    ("Op", "MPI_Op"),
    ("Errhandler", "MPI_Errhandler"),
    ("Win", "MPI_Win"),
    ("Message", "MPI_Message"),
    ("Session", "MPI_Session"),
];

/// The symbol of the `MPI_*_DUP_FN` callbacks: MPICH's name, which
/// binaries built against MPICH refer to.
pub const DUP_FN: &str = "MPIR_Dup_fn";

/// `MPI_IN_PLACE` as Rust sees it.
pub fn is_in_place(p: *const c_void) -> bool {
    p as isize == -1
}

/// `MPI_STATUS_IGNORE` / `MPI_STATUSES_IGNORE`.
pub fn is_status_ignore(p: *const MPI_Status) -> bool {
    p as usize == 1
}

/// Each constant in its C form; consecutive members of one enumeration
/// become one `typedef enum`. Shared by the headers of both ABIs.
pub(crate) fn write_constants(h: &mut String, all: &[&Constant]) {
    use std::fmt::Write;
    let mut i = 0;
    while i < all.len() {
        let c = all[i];
        i += 1;
        let _ = match c.kind {
            CKind::Int => writeln!(h, "#define {} ({})", c.name, c.value),
            CKind::Handle(ty) => writeln!(h, "#define {} (({ty})0x{:08x})", c.name, c.value as u32),
            CKind::Pointer(ty) => writeln!(h, "#define {} (({ty}) {})", c.name, c.value),
            CKind::Function(ty, symbol) => writeln!(h, "#define {} (({ty}){symbol})", c.name),
            CKind::Extern(ty) => writeln!(h, "extern {ty} {};", c.name),
            CKind::Enum(tag) => {
                // This enumerator and the ones of the same enumeration
                // that follow it.
                let mut members = vec![c];
                while i < all.len() && matches!(all[i].kind, CKind::Enum(t) if t == tag) {
                    members.push(all[i]);
                    i += 1;
                }
                let body: Vec<String> = members
                    .iter()
                    .map(|m| format!("    {} = {}", m.name, m.value))
                    .collect();
                writeln!(h, "typedef enum {tag} {{\n{}\n}} {tag};", body.join(",\n"))
            }
        };
    }
}

/// The profiling twin of a prototype: `int MPI_Send(...)` gives
/// `int PMPI_Send(...)`.
pub fn profiling(prototype: &str) -> String {
    let open = prototype.find('(').expect("a prototype has parameters");
    let start = prototype[..open].rfind([' ', '*']).map_or(0, |i| i + 1);
    format!("{}P{}", &prototype[..start], &prototype[start..])
}

/// The text of `mpi.h`: typedefs, every constant, every prototype and its
/// profiling twin.
pub fn header() -> String {
    use std::fmt::Write;
    let mut h = String::from(HEADER_PRELUDE);
    h.push_str(&mpix_defines());
    let all: Vec<&Constant> = CONSTANTS.iter().chain(POINTERS).collect();
    write_constants(&mut h, &all);
    h.push_str(HEADER_AFTER_CONSTANTS);
    for prefix in ["MPI", "PMPI"] {
        for (kind, ty) in HANDLE_CONVERSIONS {
            let _ = writeln!(h, "#define {prefix}_{kind}_c2f(h) ((MPI_Fint)(h))");
            let _ = writeln!(h, "#define {prefix}_{kind}_f2c(h) (({ty})(h))");
        }
    }
    h.push('\n');
    for p in crate::mpich::prototypes() {
        let _ = writeln!(h, "{p};");
    }
    h.push_str("\n/* The profiling interface: PMPI_X for every MPI_X. */\n");
    for p in crate::mpich::prototypes() {
        let _ = writeln!(h, "{};", profiling(p));
    }
    h.push_str(HEADER_END);
    h
}

/// The operations of `MPIX_Pset_create_op` (the same in both ABIs; the
/// headers define them in their preludes).
pub const MPIX_PSET_UNION: c_int = 0;
pub const MPIX_PSET_INTERSECTION: c_int = 1;
pub const MPIX_PSET_DIFFERENCE: c_int = 2;
/// The kinds of resource change of `MPIX_Dynres_get` (as in the seed).
pub const MPIX_DYNRES_NONE: c_int = 0;
pub const MPIX_DYNRES_ADD: c_int = 1;
pub const MPIX_DYNRES_SUB: c_int = 2;

/// The `#define`s of the constants above, for both ABIs' headers.
pub fn mpix_defines() -> String {
    format!(
        "/* Process sets created while the job runs (MPIX_Pset_create_op,
 * MPIX_Session_get_psets); mpidynres.h gives them the names of
 * libmpidynres. */
#define MPIX_HAS_PSET_OPS 1
#define MPIX_PSET_UNION {MPIX_PSET_UNION}
#define MPIX_PSET_INTERSECTION {MPIX_PSET_INTERSECTION}
#define MPIX_PSET_DIFFERENCE {MPIX_PSET_DIFFERENCE}
/* Resource changes (mpiexec --dynres): MPIX_Dynres_get, MPIX_Dynres_accept. */
#define MPIX_HAS_DYNRES 1
#define MPIX_DYNRES_NONE {MPIX_DYNRES_NONE}
#define MPIX_DYNRES_ADD {MPIX_DYNRES_ADD}
#define MPIX_DYNRES_SUB {MPIX_DYNRES_SUB}

"
    )
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
/* Library-managed receive buffers: MPI_Irecv with a NULL buffer,
 * MPIX_Get_recv_buf and MPIX_Release_recv_buf. */
#define MPIX_HAS_RECV_BUF 1

/* Handles: MPICH's are ints, except files and the tool interface's. */
typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Errhandler;
typedef int MPI_Info;
typedef int MPI_Win;
typedef int MPI_Session;
typedef int MPI_Message;
typedef struct ADIOI_FileD *MPI_File;
typedef struct MPIR_T_enum_s *MPI_T_enum;
typedef struct MPIR_T_cvar_handle_s *MPI_T_cvar_handle;
typedef struct MPIR_T_pvar_handle_s *MPI_T_pvar_handle;
typedef struct MPIR_T_pvar_session_s *MPI_T_pvar_session;
typedef struct MPIR_T_event_registration_s *MPI_T_event_registration;
typedef struct MPIR_T_event_instance_s *MPI_T_event_instance;

typedef int MPI_Fint;
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

/* MPI_Status as the Fortran 2008 bindings see it. */
typedef struct {
    MPI_Fint count_lo;
    MPI_Fint count_hi_and_cancelled;
    MPI_Fint MPI_SOURCE;
    MPI_Fint MPI_TAG;
    MPI_Fint MPI_ERROR;
} MPI_F08_status;

/* Callbacks. */
typedef void (MPI_User_function)(void *, void *, int *, MPI_Datatype *);
typedef void (MPI_User_function_c)(void *, void *, MPI_Count *, MPI_Datatype *);
typedef int (MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Delete_function)(MPI_Comm, int, void *, void *);
typedef int (MPI_Comm_copy_attr_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Comm_delete_attr_function)(MPI_Comm, int, void *, void *);
typedef int (MPI_Type_copy_attr_function)(MPI_Datatype, int, void *, void *, void *, int *);
typedef int (MPI_Type_delete_attr_function)(MPI_Datatype, int, void *, void *);
typedef int (MPI_Win_copy_attr_function)(MPI_Win, int, void *, void *, void *, int *);
typedef int (MPI_Win_delete_attr_function)(MPI_Win, int, void *, void *);
typedef void (MPI_Handler_function)(MPI_Comm *, int *, ...);
typedef void (MPI_Comm_errhandler_function)(MPI_Comm *, int *, ...);
typedef void (MPI_File_errhandler_function)(MPI_File *, int *, ...);
typedef void (MPI_Win_errhandler_function)(MPI_Win *, int *, ...);
typedef void (MPI_Session_errhandler_function)(MPI_Session *, int *, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef MPI_Session_errhandler_function MPI_Session_errhandler_fn;
typedef int (MPI_Grequest_cancel_function)(void *, int);
typedef int (MPI_Grequest_free_function)(void *);
typedef int (MPI_Grequest_query_function)(void *, MPI_Status *);
typedef int (MPI_Datarep_conversion_function)(void *, MPI_Datatype, int, void *, MPI_Offset, void *);
typedef int (MPI_Datarep_conversion_function_c)(void *, MPI_Datatype, MPI_Count, void *, MPI_Offset, void *);
typedef int (MPI_Datarep_extent_function)(MPI_Datatype, MPI_Aint *, void *);

/* The attribute copy callback behind MPI_*_DUP_FN (MPICH's symbol). */
int MPIR_Dup_fn(MPI_Comm, int, void *, void *, void *, int *);

";

/// Typedefs that name the enumerations of the constants table.
/// Typedefs that name constants of the tables (the tool interface's
/// callbacks), the same in both ABIs.
pub(crate) const HEADER_AFTER_CONSTANTS: &str = "
typedef void (MPI_T_event_cb_function)(MPI_T_event_instance event_instance, MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, void *user_data);
typedef void (MPI_T_event_free_cb_function)(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, void *user_data);
typedef void (MPI_T_event_dropped_cb_function)(MPI_Count count, MPI_T_event_registration event_registration, int source_index, MPI_T_cb_safety cb_safety, void *user_data);
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
