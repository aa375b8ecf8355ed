//! Reduction operations (MPI-4.0 §6.9): the predefined operations on the
//! datatypes each applies to (§6.9.2), `MPI_MINLOC`/`MPI_MAXLOC` on the
//! pair types (§6.9.4), and user-defined operations (§6.9.5).
//!
//! Every operation works on *packed* data: `count` elements of a datatype
//! laid end to end, `size` bytes each. A predefined operation applies
//! element-wise to the basic elements (so a derived datatype whose basic
//! elements are all of one kind reduces like that kind); a user function
//! sees the data in the datatype's own memory layout, so non-contiguous
//! data is unpacked around the call.
//!
//! The convention is MPI's: `inout[i] = input[i] op inout[i]`.

use std::cmp::Ordering;
use std::ffi::c_void;

use crate::core::Class;
use crate::core::datatype::{Datatype, TypeRef};
use crate::core::{MpiError, MpiResult};

/// What a predefined datatype holds, as far as reductions care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// x87 80-bit extended precision, stored in 16 bytes.
    LongDouble,
    /// `float _Complex`, `double _Complex`.
    C32,
    C64,
    /// `long double _Complex`: two [`Elem::LongDouble`]s, 32 bytes.
    LongDoubleComplex,
    /// `MPI_C_BOOL`, `MPI_CXX_BOOL`: logical operations only.
    Bool,
    /// Fortran's 4-byte `LOGICAL` (`MPI_LOGICAL`): logical operations
    /// only; true is 1.
    Logical,
    /// `MPI_BYTE`: bitwise operations only.
    Byte,
    /// A value-and-index pair type: `MPI_MINLOC`/`MPI_MAXLOC` only.
    Pair(Pair),
    /// Sendable, but no predefined operation applies here: `MPI_PACKED`,
    /// `MPI_CHARACTER`, and the types of IEEE binary128 or binary16
    /// (`MPI_REAL16`, `MPI_COMPLEX32`, `MPIX_C_FLOAT16`), for which this
    /// library has no arithmetic (`MPI_ERR_OP`).
    Opaque,
}

impl Elem {
    /// Every kind, in a fixed order: one-sided operations name a kind by
    /// its index here on the wire (`core::win`).
    const ALL: [Elem; 25] = [
        Elem::I8,
        Elem::I16,
        Elem::I32,
        Elem::I64,
        Elem::U8,
        Elem::U16,
        Elem::U32,
        Elem::U64,
        Elem::F32,
        Elem::F64,
        Elem::LongDouble,
        Elem::C32,
        Elem::C64,
        Elem::Bool,
        Elem::Logical,
        Elem::Byte,
        Elem::Pair(Pair::FloatInt),
        Elem::Pair(Pair::DoubleInt),
        Elem::Pair(Pair::LongInt),
        Elem::Pair(Pair::TwoInt),
        Elem::Pair(Pair::ShortInt),
        Elem::Pair(Pair::LongDoubleInt),
        Elem::Pair(Pair::TwoReal),
        Elem::Pair(Pair::TwoDouble),
        Elem::LongDoubleComplex,
    ];

    /// The kind's code on the wire (kinds no operation applies to have
    /// none).
    pub fn wire(self) -> Option<u8> {
        Self::ALL.iter().position(|&e| e == self).map(|i| i as u8)
    }

    pub fn from_wire(code: u8) -> Option<Elem> {
        Self::ALL.get(usize::from(code)).copied()
    }
}

/// The pair types of MPI-4.0 §6.9.4, laid out as the C structs
/// `{ value; int index; }`, and Fortran's pairs of two of a kind
/// (`MPI_2INTEGER` is `TwoInt`; `MPI_2REAL` and `MPI_2DOUBLE_PRECISION`
/// carry their index as a `REAL` or `DOUBLE PRECISION`). Packed, a pair
/// is the value's bytes followed by the index's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pair {
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    LongDoubleInt,
    TwoReal,
    TwoDouble,
}

impl Pair {
    /// Bytes of the value (its data, before the index).
    pub fn value_size(self) -> usize {
        match self {
            Pair::ShortInt => 2,
            Pair::FloatInt | Pair::TwoInt | Pair::TwoReal => 4,
            Pair::DoubleInt | Pair::LongInt | Pair::TwoDouble => 8,
            Pair::LongDoubleInt => 16,
        }
    }

    /// Bytes of the index: an `int`, or a Fortran pair's second value.
    pub fn index_size(self) -> usize {
        match self {
            Pair::TwoDouble => 8,
            _ => 4,
        }
    }

    /// Where the index lies in the struct: after the value, aligned.
    pub fn index_offset(self) -> usize {
        self.value_size().next_multiple_of(self.index_size())
    }

    /// The struct's size: `{double; int}` has 12 bytes of data and
    /// extent 16.
    pub fn extent(self) -> usize {
        let align = self.value_size().max(self.index_size());
        (self.index_offset() + self.index_size()).next_multiple_of(align)
    }
}

/// The predefined reduction operations (MPI-4.0 §6.9.2, §6.9.4;
/// `Replace` and `NoOp` belong to one-sided communication, §12.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

impl Op {
    /// Every operation, in a fixed order (its wire code is the index).
    const ALL: [Op; 14] = [
        Op::Max,
        Op::Min,
        Op::Sum,
        Op::Prod,
        Op::Land,
        Op::Band,
        Op::Lor,
        Op::Bor,
        Op::Lxor,
        Op::Bxor,
        Op::Minloc,
        Op::Maxloc,
        Op::Replace,
        Op::NoOp,
    ];

    /// The operation's code on the wire (`core::win`).
    pub fn wire(self) -> u8 {
        Self::ALL
            .iter()
            .position(|&o| o == self)
            .expect("every operation is listed") as u8
    }

    pub fn from_wire(code: u8) -> Option<Op> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The operation's name in the standard.
    pub fn name(self) -> &'static str {
        match self {
            Op::Max => "MPI_MAX",
            Op::Min => "MPI_MIN",
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Land => "MPI_LAND",
            Op::Band => "MPI_BAND",
            Op::Lor => "MPI_LOR",
            Op::Bor => "MPI_BOR",
            Op::Lxor => "MPI_LXOR",
            Op::Bxor => "MPI_BXOR",
            Op::Minloc => "MPI_MINLOC",
            Op::Maxloc => "MPI_MAXLOC",
            Op::Replace => "MPI_REPLACE",
            Op::NoOp => "MPI_NO_OP",
        }
    }
}

/// A number as packed bytes hold it (native byte order).
trait Num: Copy {
    const N: usize;
    fn get(b: &[u8]) -> Self;
    fn put(self, b: &mut [u8]);
}

macro_rules! num {
    ($($ty:ty),*) => {$(
        impl Num for $ty {
            const N: usize = size_of::<$ty>();
            fn get(b: &[u8]) -> Self {
                <$ty>::from_ne_bytes(b.try_into().expect("element-sized chunk"))
            }
            fn put(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
num!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Complex numbers: (re, im) pairs.
impl<T: Num> Num for (T, T) {
    const N: usize = 2 * T::N;
    fn get(b: &[u8]) -> Self {
        (T::get(&b[..T::N]), T::get(&b[T::N..]))
    }
    fn put(self, b: &mut [u8]) {
        self.0.put(&mut b[..T::N]);
        self.1.put(&mut b[T::N..]);
    }
}

/// `inout[i] = f(input[i], inout[i])` over whole elements.
fn fold<T: Num>(input: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    for (x, y) in input.chunks_exact(T::N).zip(inout.chunks_exact_mut(T::N)) {
        f(T::get(x), T::get(y)).put(y);
    }
}

/// The element-wise body of a predefined operation on one kind.
pub type Kernel = fn(&[u8], &mut [u8]);

macro_rules! k {
    ($ty:ty, |$x:ident, $y:ident| $e:expr) => {
        (|a: &[u8], b: &mut [u8]| fold::<$ty>(a, b, |$x, $y| $e)) as Kernel
    };
}

macro_rules! int_kernel {
    ($ty:ty, $op:expr) => {
        match $op {
            Op::Sum => k!($ty, |x, y| x.wrapping_add(y)),
            Op::Prod => k!($ty, |x, y| x.wrapping_mul(y)),
            Op::Max => k!($ty, |x, y| x.max(y)),
            Op::Min => k!($ty, |x, y| x.min(y)),
            Op::Land => k!($ty, |x, y| ((x != 0) && (y != 0)) as $ty),
            Op::Lor => k!($ty, |x, y| ((x != 0) || (y != 0)) as $ty),
            Op::Lxor => k!($ty, |x, y| ((x != 0) != (y != 0)) as $ty),
            Op::Band => k!($ty, |x, y| x & y),
            Op::Bor => k!($ty, |x, y| x | y),
            Op::Bxor => k!($ty, |x, y| x ^ y),
            _ => return None,
        }
    };
}

macro_rules! float_kernel {
    ($ty:ty, $op:expr) => {
        match $op {
            Op::Sum => k!($ty, |x, y| x + y),
            Op::Prod => k!($ty, |x, y| x * y),
            Op::Max => k!($ty, |x, y| if x > y { x } else { y }),
            Op::Min => k!($ty, |x, y| if x < y { x } else { y }),
            _ => return None,
        }
    };
}

macro_rules! complex_kernel {
    ($ty:ty, $op:expr) => {
        match $op {
            Op::Sum => k!(($ty, $ty), |x, y| (x.0 + y.0, x.1 + y.1)),
            Op::Prod => k!(($ty, $ty), |x, y| (
                x.0 * y.0 - x.1 * y.1,
                x.0 * y.1 + x.1 * y.0
            )),
            _ => return None,
        }
    };
}

/// The kernel of predefined `op` on `elem`, if `op` applies to it
/// (MPI-4.0 §6.9.2). `MPI_REPLACE` and `MPI_NO_OP` belong to one-sided
/// communication and apply to nothing here.
pub fn kernel(op: Op, elem: Elem) -> Option<Kernel> {
    use Elem::*;
    Some(match elem {
        I8 => int_kernel!(i8, op),
        I16 => int_kernel!(i16, op),
        I32 => int_kernel!(i32, op),
        I64 => int_kernel!(i64, op),
        U8 => int_kernel!(u8, op),
        U16 => int_kernel!(u16, op),
        U32 => int_kernel!(u32, op),
        U64 => int_kernel!(u64, op),
        F32 => float_kernel!(f32, op),
        F64 => float_kernel!(f64, op),
        C32 => complex_kernel!(f32, op),
        C64 => complex_kernel!(f64, op),
        LongDouble => return long_double_kernel(op),
        LongDoubleComplex => return long_double_complex_kernel(op),
        Bool => match op {
            Op::Land => k!(u8, |x, y| ((x != 0) && (y != 0)) as u8),
            Op::Lor => k!(u8, |x, y| ((x != 0) || (y != 0)) as u8),
            Op::Lxor => k!(u8, |x, y| ((x != 0) != (y != 0)) as u8),
            _ => return None,
        },
        Logical => match op {
            Op::Land => k!(i32, |x, y| ((x != 0) && (y != 0)) as i32),
            Op::Lor => k!(i32, |x, y| ((x != 0) || (y != 0)) as i32),
            Op::Lxor => k!(i32, |x, y| ((x != 0) != (y != 0)) as i32),
            _ => return None,
        },
        Byte => match op {
            Op::Band => k!(u8, |x, y| x & y),
            Op::Bor => k!(u8, |x, y| x | y),
            Op::Bxor => k!(u8, |x, y| x ^ y),
            _ => return None,
        },
        Pair(p) => return loc_kernel(op, p),
        Opaque => return None,
    })
}

fn loc_kernel(op: Op, p: Pair) -> Option<Kernel> {
    let max = match op {
        Op::Maxloc => true,
        Op::Minloc => false,
        _ => return None,
    };
    macro_rules! pick {
        ($($p:ident),*) => {
            match (p, max) {
                $(
                    (Pair::$p, true) => (|a: &[u8], b: &mut [u8]| loc(Pair::$p, true, a, b)) as Kernel,
                    (Pair::$p, false) => (|a: &[u8], b: &mut [u8]| loc(Pair::$p, false, a, b)) as Kernel,
                )*
            }
        };
    }
    Some(pick!(
        FloatInt,
        DoubleInt,
        LongInt,
        TwoInt,
        ShortInt,
        LongDoubleInt,
        TwoReal,
        TwoDouble
    ))
}

/// Compare two pair values of kind `p`. Unordered floats (NaN) compare
/// equal, so the lower index wins.
fn cmp_value(p: Pair, a: &[u8], b: &[u8]) -> Ordering {
    fn by<T: Num + PartialOrd>(a: &[u8], b: &[u8]) -> Ordering {
        T::get(a).partial_cmp(&T::get(b)).unwrap_or(Ordering::Equal)
    }
    match p {
        Pair::FloatInt => by::<f32>(a, b),
        Pair::DoubleInt => by::<f64>(a, b),
        Pair::LongInt => by::<i64>(a, b),
        Pair::TwoInt => by::<i32>(a, b),
        Pair::ShortInt => by::<i16>(a, b),
        Pair::LongDoubleInt => f80_key(a).cmp(&f80_key(b)),
        Pair::TwoReal => by::<f32>(a, b),
        Pair::TwoDouble => by::<f64>(a, b),
    }
}

/// Whether index `a` is below index `b` (both of pair kind `p`).
fn index_below(p: Pair, a: &[u8], b: &[u8]) -> bool {
    match p {
        Pair::TwoReal => f32::get(a) < f32::get(b),
        Pair::TwoDouble => f64::get(a) < f64::get(b),
        _ => i32::get(a) < i32::get(b),
    }
}

/// `MPI_MAXLOC` (`max`) or `MPI_MINLOC` on packed pairs (MPI-4.0 §6.9.4):
/// the better value with its index; on a tie, the lower index.
fn loc(p: Pair, max: bool, input: &[u8], inout: &mut [u8]) {
    let v = p.value_size();
    let n = v + p.index_size();
    for (x, y) in input.chunks_exact(n).zip(inout.chunks_exact_mut(n)) {
        let ord = cmp_value(p, &x[..v], &y[..v]);
        match if max { ord } else { ord.reverse() } {
            Ordering::Greater => y.copy_from_slice(x),
            Ordering::Equal => {
                if index_below(p, &x[v..], &y[v..]) {
                    y[v..].copy_from_slice(&x[v..]);
                }
            }
            Ordering::Less => {}
        }
    }
}

/// An order-preserving integer key of an x87 80-bit value (its first 10
/// bytes): the magnitude bits, negated for negative values. Equal for
/// +0 and -0.
fn f80_key(b: &[u8]) -> i128 {
    let mut raw = [0u8; 16];
    raw[..10].copy_from_slice(&b[..10]);
    let bits = u128::from_le_bytes(raw);
    let magnitude = (bits & ((1 << 79) - 1)) as i128;
    if bits >> 79 & 1 == 1 {
        -magnitude
    } else {
        magnitude
    }
}

fn long_double_kernel(op: Op) -> Option<Kernel> {
    fn pick(a: &[u8], b: &mut [u8], max: bool) {
        for (x, y) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
            let x_wins = if max {
                f80_key(x) > f80_key(y)
            } else {
                f80_key(x) < f80_key(y)
            };
            if x_wins {
                y.copy_from_slice(x);
            }
        }
    }
    Some(match op {
        Op::Max => |a, b| pick(a, b, true),
        Op::Min => |a, b| pick(a, b, false),
        #[cfg(target_arch = "x86_64")]
        Op::Sum => |a, b| x87::fold(a, b, false),
        #[cfg(target_arch = "x86_64")]
        Op::Prod => |a, b| x87::fold(a, b, true),
        _ => return None,
    })
}

/// `MPI_SUM` and `MPI_PROD` on `long double _Complex`: a sum adds real
/// and imaginary parts as two `long double`s each.
fn long_double_complex_kernel(op: Op) -> Option<Kernel> {
    Some(match op {
        #[cfg(target_arch = "x86_64")]
        Op::Sum => |a, b| x87::fold(a, b, false),
        #[cfg(target_arch = "x86_64")]
        Op::Prod => x87::complex_prod,
        _ => return None,
    })
}

/// Arithmetic on `long double` with the x87 unit, the only hardware that
/// computes in its format.
#[cfg(target_arch = "x86_64")]
mod x87 {
    use std::arch::asm;

    /// `y = x + y` (or `x * y`) for every 16-byte element.
    pub(super) fn fold(input: &[u8], inout: &mut [u8], prod: bool) {
        for (x, y) in input.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
            let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
            // SAFETY: `xp` and `yp` address 16 bytes each (chunks), of
            // which the instructions read 10 and write 10 at `yp`. Every
            // x87 register is declared clobbered, which is what makes the
            // compiler hand the block an empty x87 stack; the block pushes
            // two values and pops both.
            unsafe {
                if prod {
                    asm!(
                        "fld tbyte ptr [{x}]",
                        "fld tbyte ptr [{y}]",
                        "fmulp",
                        "fstp tbyte ptr [{y}]",
                        x = in(reg) xp,
                        y = in(reg) yp,
                        out("st(0)") _,
                        out("st(1)") _,
                        out("st(2)") _,
                        out("st(3)") _,
                        out("st(4)") _,
                        out("st(5)") _,
                        out("st(6)") _,
                        out("st(7)") _,
                        options(nostack),
                    );
                } else {
                    asm!(
                        "fld tbyte ptr [{x}]",
                        "fld tbyte ptr [{y}]",
                        "faddp",
                        "fstp tbyte ptr [{y}]",
                        x = in(reg) xp,
                        y = in(reg) yp,
                        out("st(0)") _,
                        out("st(1)") _,
                        out("st(2)") _,
                        out("st(3)") _,
                        out("st(4)") _,
                        out("st(5)") _,
                        out("st(6)") _,
                        out("st(7)") _,
                        options(nostack),
                    );
                }
            }
        }
    }

    /// `y = x * y` for every 32-byte complex element `(re, im)`:
    /// `(a + bi)(c + di) = (ac - bd) + (ad + bc)i`, every step in the
    /// x87 unit's 64-bit mantissa.
    pub(super) fn complex_prod(input: &[u8], inout: &mut [u8]) {
        for (x, y) in input.chunks_exact(32).zip(inout.chunks_exact_mut(32)) {
            let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
            // SAFETY: `xp` and `yp` address 32 bytes each (chunks); the
            // instructions read 10 bytes at offsets 0 and 16 of each and
            // write 10 at those of `yp`, after the last read. Every x87
            // register is declared clobbered, which is what makes the
            // compiler hand the block an empty x87 stack; the block pushes
            // at most four values and pops all. Only `fadd`, `fmul` and
            // `fchs` combine values: no operand order to get wrong.
            unsafe {
                asm!(
                    "fld tbyte ptr [{x}]",      // a
                    "fld tbyte ptr [{y}]",      // c, a
                    "fmul st(0), st(1)",        // ac, a
                    "fld tbyte ptr [{x} + 16]", // b, ac, a
                    "fld tbyte ptr [{y} + 16]", // d, b, ac, a
                    "fmul st(0), st(1)",        // bd, b, ac, a
                    "fchs",                     // -bd, b, ac, a
                    "faddp st(2), st(0)",       // b, ac - bd, a
                    "fld tbyte ptr [{y}]",      // c, b, re, a
                    "fmulp st(1), st(0)",       // bc, re, a
                    "fld tbyte ptr [{y} + 16]", // d, bc, re, a
                    "fmulp st(3), st(0)",       // bc, re, ad
                    "faddp st(2), st(0)",       // re, ad + bc
                    "fstp tbyte ptr [{y}]",
                    "fstp tbyte ptr [{y} + 16]",
                    x = in(reg) xp,
                    y = in(reg) yp,
                    out("st(0)") _,
                    out("st(1)") _,
                    out("st(2)") _,
                    out("st(3)") _,
                    out("st(4)") _,
                    out("st(5)") _,
                    out("st(6)") _,
                    out("st(7)") _,
                    options(nostack),
                );
            }
        }
    }
}

fn bad_op(op: Op, why: &str) -> MpiError {
    MpiError::new(Class::Op, format!("{} {why}", op.name()))
}

/// Check that predefined `op` applies to `elem`, without computing.
pub fn check(op: Op, elem: Elem) -> MpiResult<Kernel> {
    match op {
        Op::Replace | Op::NoOp => Err(bad_op(op, "is for one-sided communication only")),
        _ => {
            kernel(op, elem).ok_or_else(|| bad_op(op, &format!("is not defined on {elem:?} data")))
        }
    }
}

/// `inout[i] = input[i] op inout[i]` for every element. Integer
/// arithmetic wraps, as in C.
pub fn apply(op: Op, elem: Elem, input: &[u8], inout: &mut [u8]) -> MpiResult<()> {
    check(op, elem)?(input, inout);
    Ok(())
}

/// Calls an application's reduction function: entry-layer code that
/// knows the function's C type and how its ABI passes the datatype.
///
/// # Safety
/// A caller passes the `f` stored beside this function in a [`UserOp`];
/// `invec` and `inoutvec` address `len` elements (at most the operation's
/// `max_len`) of the datatype in its memory layout, and `handle` is the
/// entry layer's handle of that datatype, as the application named it.
pub type UserCaller =
    unsafe fn(f: usize, invec: *mut c_void, inoutvec: *mut c_void, len: usize, handle: u64);

/// An operation made by `MPI_Op_create` (MPI-4.0 §6.9.5).
#[derive(Clone, Copy, Debug)]
pub struct UserOp {
    /// The application's function, as an address.
    pub f: usize,
    pub call: UserCaller,
    /// The most elements one call takes (a function with an `int` length
    /// reduces longer runs in slices).
    pub max_len: usize,
    pub commute: bool,
}

/// An operation bound to the datatype it reduces: what a collective
/// carries from its start to its last step.
#[derive(Clone, Debug)]
pub enum Reduction {
    Predefined(Kernel),
    User {
        op: UserOp,
        /// The entry layer's handle of the datatype, given back to the
        /// function.
        handle: u64,
        dt: TypeRef,
    },
}

impl Reduction {
    /// Predefined `op` on datatype `dt` (element-wise on its basic
    /// elements, which must all be of one kind).
    pub fn predefined(op: Op, dt: &Datatype) -> MpiResult<Self> {
        let elem = dt.elem.ok_or_else(|| {
            bad_op(
                op,
                "cannot reduce a datatype that mixes basic types (MPI-4.0 §6.9.2)",
            )
        })?;
        check(op, elem).map(Reduction::Predefined)
    }

    /// Whether operands may be swapped (every predefined operation).
    pub fn commutative(&self) -> bool {
        match self {
            Reduction::Predefined(_) => true,
            Reduction::User { op, .. } => op.commute,
        }
    }

    /// `inout = input op inout` on packed data.
    pub fn apply(&self, input: &[u8], inout: &mut [u8]) {
        match self {
            Reduction::Predefined(k) => k(input, inout),
            Reduction::User { op, handle, dt } => {
                debug_assert_eq!(input.len(), inout.len());
                if dt.size == 0 || inout.is_empty() {
                    return;
                }
                let count = inout.len() / dt.size;
                if dt.is_contiguous() {
                    // SAFETY: both slices hold `count` packed elements,
                    // which for a contiguous type is its memory layout;
                    // the function reads `invec` only (MPI-4.0 §6.9.5).
                    unsafe {
                        call_user(
                            op,
                            input.as_ptr().cast_mut(),
                            inout.as_mut_ptr(),
                            count,
                            *handle,
                            dt.extent,
                        )
                    };
                } else {
                    user_strided(op, *handle, dt, count, input, inout);
                }
            }
        }
    }
}

/// Call the operation's function on `count` elements, `extent` bytes
/// apart, in slices of at most `max_len` elements.
///
/// # Safety
/// `invec` and `inoutvec` address `count` elements of the datatype
/// `handle` names, in its memory layout.
unsafe fn call_user(
    op: &UserOp,
    invec: *mut u8,
    inoutvec: *mut u8,
    count: usize,
    handle: u64,
    extent: isize,
) {
    // The function may query the datatype through MPI (`run_callback`).
    crate::core::run_callback(|| {
        let mut done = 0;
        while done < count {
            let n = (count - done).min(op.max_len);
            let at = done as isize * extent;
            // SAFETY: `f` is what the entry layer stored with `call`;
            // the slice's `n` elements lie inside the caller's buffers.
            unsafe {
                (op.call)(
                    op.f,
                    invec.wrapping_offset(at).cast(),
                    inoutvec.wrapping_offset(at).cast(),
                    n,
                    handle,
                )
            };
            done += n;
        }
    });
}

/// A user function on non-contiguous data: unpack both operands into the
/// datatype's layout, call, pack the result back.
fn user_strided(
    op: &UserOp,
    handle: u64,
    dt: &Datatype,
    count: usize,
    input: &[u8],
    inout: &mut [u8],
) {
    // The bytes `count` elements touch, relative to the buffer address.
    let lo_blk = dt.blocks.iter().map(|b| b.0).min().unwrap_or(0);
    let hi_blk = dt
        .blocks
        .iter()
        .map(|b| b.0 + b.1 as isize)
        .max()
        .unwrap_or(0);
    let last = (count as isize - 1) * dt.extent;
    let lo = lo_blk + last.min(0);
    let hi = hi_blk + last.max(0);
    let span = (hi - lo) as usize;
    let mut a = vec![0u8; span];
    let mut b = vec![0u8; span];
    // Buffer addresses such that `addr + lo` is the scratch's start.
    let (pa, pb) = (
        a.as_mut_ptr().wrapping_offset(-lo),
        b.as_mut_ptr().wrapping_offset(-lo),
    );
    // SAFETY: every block of every element lies in `lo..hi` from `pa` /
    // `pb`, that is inside the scratch vectors.
    unsafe {
        dt.unpack(input, count, pa);
        dt.unpack(inout, count, pb);
        call_user(op, pa, pb, count, handle, dt.extent);
        dt.pack(pb, count, inout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Num>(v: &[T]) -> Vec<u8> {
        let mut out = vec![0u8; v.len() * T::N];
        for (x, c) in v.iter().zip(out.chunks_exact_mut(T::N)) {
            x.put(c);
        }
        out
    }

    fn run<T: Num>(op: Op, elem: Elem, a: &[T], b: &[T]) -> Vec<u8> {
        let mut acc = bytes(b);
        apply(op, elem, &bytes(a), &mut acc).unwrap();
        acc
    }

    #[test]
    fn pair_layouts_are_the_c_structs() {
        let layout = |p: Pair| {
            (
                p.value_size() + p.index_size(),
                p.index_offset(),
                p.extent(),
            )
        };
        assert_eq!(layout(Pair::DoubleInt), (12, 8, 16));
        assert_eq!(layout(Pair::ShortInt), (6, 4, 8));
        assert_eq!(layout(Pair::LongDoubleInt), (20, 16, 32));
        assert_eq!(layout(Pair::TwoInt), (8, 4, 8));
        assert_eq!(layout(Pair::FloatInt), (8, 4, 8));
        assert_eq!(layout(Pair::LongInt), (12, 8, 16));
        assert_eq!(layout(Pair::TwoReal), (8, 4, 8));
        assert_eq!(layout(Pair::TwoDouble), (16, 8, 16));
    }

    #[test]
    fn integer_operations() {
        let i = Elem::I32;
        assert_eq!(run(Op::Sum, i, &[2, 2, 2], &[1, 5, -3]), bytes(&[3, 7, -1]));
        assert_eq!(
            run(Op::Prod, i, &[2, -2, i32::MAX], &[3, 5, 2]),
            bytes(&[6, -10, -2])
        );
        assert_eq!(run(Op::Max, i, &[4, 0, 0], &[3, 7, -1]), bytes(&[4, 7, 0]));
        assert_eq!(run(Op::Min, i, &[4, 0, 0], &[3, 7, -1]), bytes(&[3, 0, -1]));
        assert_eq!(run(Op::Band, i, &[6, 3], &[3, 5]), bytes(&[2, 1]));
        assert_eq!(run(Op::Bor, i, &[6, 3], &[3, 5]), bytes(&[7, 7]));
        assert_eq!(run(Op::Bxor, i, &[6, 3], &[3, 5]), bytes(&[5, 6]));
        assert_eq!(run(Op::Land, i, &[0, 9, 2], &[1, 0, 5]), bytes(&[0, 0, 1]));
        assert_eq!(run(Op::Lor, i, &[0, 9, 0], &[1, 0, 0]), bytes(&[1, 1, 0]));
        assert_eq!(run(Op::Lxor, i, &[0, 9, 2], &[1, 0, 5]), bytes(&[1, 1, 0]));
        assert_eq!(run(Op::Max, Elem::U8, &[200u8], &[100u8]), vec![200]);
        assert_eq!(
            run(Op::Min, Elem::I8, &[-100i8], &[100i8]),
            bytes(&[-100i8])
        );
        assert_eq!(
            run(Op::Sum, Elem::U64, &[u64::MAX], &[2u64]),
            bytes(&[1u64])
        );
        assert_eq!(run(Op::Max, Elem::I16, &[-1i16], &[-2i16]), bytes(&[-1i16]));
    }

    #[test]
    fn floating_point_and_complex_operations() {
        assert_eq!(
            run(Op::Sum, Elem::F64, &[0.5, 1.0], &[0.25, -1.0]),
            bytes(&[0.75, 0.0])
        );
        assert_eq!(
            run(Op::Prod, Elem::F32, &[3.0f32], &[-2.0f32]),
            bytes(&[-6.0f32])
        );
        assert_eq!(run(Op::Min, Elem::F64, &[1.5], &[-2.5]), bytes(&[-2.5]));
        assert_eq!(
            run(Op::Max, Elem::F32, &[1.5f32], &[-2.5f32]),
            bytes(&[1.5f32])
        );
        // (1 + 2i)(3 + 4i) = -5 + 10i
        let z = run(Op::Prod, Elem::C64, &[(1.0, 2.0)], &[(3.0, 4.0)]);
        assert_eq!(z, bytes(&[(-5.0, 10.0)]));
        let z = run(Op::Sum, Elem::C32, &[(1.0f32, 2.0f32)], &[(3.0, 4.0)]);
        assert_eq!(z, bytes(&[(4.0f32, 6.0f32)]));
        assert!(check(Op::Max, Elem::C64).is_err());
    }

    /// x87 extended values: 1.0 is mantissa 1<<63, exponent 16383.
    fn f80(mantissa: u64, exp: u16, neg: bool) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&mantissa.to_le_bytes());
        b[8..10].copy_from_slice(&(exp | (neg as u16) << 15).to_le_bytes());
        b
    }

    #[test]
    fn long_double_operations() {
        let one = f80(1 << 63, 16383, false);
        let two = f80(1 << 63, 16384, false);
        let three = f80(3 << 62, 16384, false);
        let minus_two = f80(1 << 63, 16384, true);
        let mut acc = one;
        apply(Op::Max, Elem::LongDouble, &minus_two, &mut acc).unwrap();
        assert_eq!(acc, one);
        apply(Op::Min, Elem::LongDouble, &minus_two, &mut acc).unwrap();
        assert_eq!(acc, minus_two);
        #[cfg(target_arch = "x86_64")]
        {
            let mut acc = one;
            apply(Op::Sum, Elem::LongDouble, &two, &mut acc).unwrap();
            assert_eq!(acc[..10], three[..10]);
            apply(Op::Prod, Elem::LongDouble, &minus_two, &mut acc).unwrap();
            assert_eq!(acc[..10], f80(3 << 62, 16385, true)[..10]);
        }
    }

    /// A small integer as an x87 extended value.
    fn f80_int(n: i64) -> [u8; 16] {
        if n == 0 {
            return [0; 16];
        }
        let m = n.unsigned_abs();
        let top = 63 - m.leading_zeros();
        f80(m << (63 - top), 16383 + top as u16, n < 0)
    }

    #[test]
    fn long_double_complex_operations() {
        let z = |re: i64, im: i64| [f80_int(re), f80_int(im)].concat();
        let (first, second) = (z(1, 2), z(3, 4));
        let ten_bytes = |v: &[u8]| [&v[..10], &v[16..26]].concat();
        #[cfg(target_arch = "x86_64")]
        {
            // (1 + 2i)(3 + 4i) = -5 + 10i, and (3 + 4i)(1 + 2i) alike.
            for (x, y) in [(&first, &second), (&second, &first)] {
                let mut acc = y.clone();
                apply(Op::Prod, Elem::LongDoubleComplex, x, &mut acc).unwrap();
                assert_eq!(ten_bytes(&acc), ten_bytes(&z(-5, 10)));
            }
            let mut acc = [second.clone(), z(0, -1)].concat();
            let input = [first.clone(), z(-7, 1)].concat();
            apply(Op::Sum, Elem::LongDoubleComplex, &input, &mut acc).unwrap();
            let want = [z(4, 6), z(-7, 0)].concat();
            assert_eq!(ten_bytes(&acc[..32]), ten_bytes(&want[..32]));
            assert_eq!(ten_bytes(&acc[32..]), ten_bytes(&want[32..]));
        }
        assert!(check(Op::Max, Elem::LongDoubleComplex).is_err());
        assert!(check(Op::Land, Elem::LongDoubleComplex).is_err());
    }

    #[test]
    fn logical_and_byte_operations() {
        assert_eq!(run(Op::Land, Elem::Bool, &[1u8, 1], &[0u8, 1]), vec![0, 1]);
        assert_eq!(run(Op::Lxor, Elem::Bool, &[1u8, 1], &[0u8, 1]), vec![1, 0]);
        assert_eq!(run(Op::Bor, Elem::Byte, &[0xf0u8], &[0x0fu8]), vec![0xff]);
        assert!(check(Op::Sum, Elem::Bool).is_err());
        assert!(check(Op::Land, Elem::Byte).is_err());
        assert_eq!(
            run(Op::Lor, Elem::Logical, &[0, 7], &[0, 0]),
            bytes(&[0, 1])
        );
        assert!(check(Op::Sum, Elem::Logical).is_err());
    }

    fn pair(p: Pair, value: &[u8], index: i32) -> Vec<u8> {
        let mut v = value.to_vec();
        v.resize(p.value_size(), 0);
        v.extend_from_slice(&index.to_ne_bytes());
        v
    }

    #[test]
    fn minloc_and_maxloc_prefer_the_lower_index_on_ties() {
        let p = Pair::DoubleInt;
        let e = Elem::Pair(p);
        let d = |x: f64| x.to_ne_bytes();
        let mut acc = pair(p, &d(2.0), 5);
        apply(Op::Minloc, e, &pair(p, &d(2.0), 3), &mut acc).unwrap();
        assert_eq!(acc, pair(p, &d(2.0), 3));
        apply(Op::Minloc, e, &pair(p, &d(2.0), 4), &mut acc).unwrap();
        assert_eq!(acc, pair(p, &d(2.0), 3));
        apply(Op::Minloc, e, &pair(p, &d(1.0), 9), &mut acc).unwrap();
        assert_eq!(acc, pair(p, &d(1.0), 9));
        apply(Op::Maxloc, e, &pair(p, &d(7.0), 8), &mut acc).unwrap();
        assert_eq!(acc, pair(p, &d(7.0), 8));
        apply(Op::Maxloc, e, &pair(p, &d(-7.0), 0), &mut acc).unwrap();
        assert_eq!(acc, pair(p, &d(7.0), 8));
        // Every pair kind, by its value type.
        let cases: [(Pair, Vec<u8>, Vec<u8>); 6] = [
            (
                Pair::FloatInt,
                1f32.to_ne_bytes().to_vec(),
                2f32.to_ne_bytes().to_vec(),
            ),
            (Pair::DoubleInt, d(1.0).to_vec(), d(2.0).to_vec()),
            (
                Pair::LongInt,
                (-5i64).to_ne_bytes().to_vec(),
                3i64.to_ne_bytes().to_vec(),
            ),
            (
                Pair::TwoInt,
                1i32.to_ne_bytes().to_vec(),
                2i32.to_ne_bytes().to_vec(),
            ),
            (
                Pair::ShortInt,
                (-1i16).to_ne_bytes().to_vec(),
                1i16.to_ne_bytes().to_vec(),
            ),
            (
                Pair::LongDoubleInt,
                f80(1 << 63, 1, false).to_vec(),
                f80(1 << 63, 2, false).to_vec(),
            ),
        ];
        for (p, small, big) in cases {
            let e = Elem::Pair(p);
            let mut acc = pair(p, &big, 1);
            apply(Op::Minloc, e, &pair(p, &small, 2), &mut acc).unwrap();
            assert_eq!(acc, pair(p, &small, 2), "{p:?}");
            apply(Op::Maxloc, e, &pair(p, &big, 0), &mut acc).unwrap();
            assert_eq!(acc, pair(p, &big, 0), "{p:?}");
            apply(Op::Maxloc, e, &pair(p, &big, 4), &mut acc).unwrap();
            assert_eq!(acc, pair(p, &big, 0), "{p:?}");
            assert!(check(Op::Sum, e).is_err());
        }
    }

    #[test]
    fn fortran_pairs_carry_a_real_index() {
        let two = |p: Pair, v: f64, i: f64| -> Vec<u8> {
            if p == Pair::TwoReal {
                [(v as f32).to_ne_bytes(), (i as f32).to_ne_bytes()].concat()
            } else {
                [v.to_ne_bytes(), i.to_ne_bytes()].concat()
            }
        };
        for p in [Pair::TwoReal, Pair::TwoDouble] {
            let e = Elem::Pair(p);
            // Two elements: a new winner, and a tie the lower index takes
            // (2.5 against 3.0: compared as numbers, not as integers).
            let mut acc = [two(p, 1.0, 7.0), two(p, 4.0, 3.0)].concat();
            let other = [two(p, 2.0, 9.0), two(p, 4.0, 2.5)].concat();
            apply(Op::Maxloc, e, &other, &mut acc).unwrap();
            assert_eq!(acc, [two(p, 2.0, 9.0), two(p, 4.0, 2.5)].concat(), "{p:?}");
            apply(
                Op::Minloc,
                e,
                &[two(p, -1.0, 5.0), two(p, 4.0, 1.0)].concat(),
                &mut acc,
            )
            .unwrap();
            assert_eq!(acc, [two(p, -1.0, 5.0), two(p, 4.0, 1.0)].concat(), "{p:?}");
            assert!(check(Op::Sum, e).is_err());
            assert_eq!(Elem::from_wire(e.wire().unwrap()), Some(e));
        }
    }

    #[test]
    fn operations_outside_their_domain_are_err_op() {
        for (op, elem) in [
            (Op::Band, Elem::F64),
            (Op::Sum, Elem::Bool),
            (Op::Replace, Elem::I32),
            (Op::NoOp, Elem::I32),
            (Op::Minloc, Elem::I32),
            (Op::Sum, Elem::Opaque),
            (Op::Land, Elem::LongDouble),
        ] {
            assert_eq!(
                check(op, elem).unwrap_err().code,
                Class::Op,
                "{op:?} {elem:?}"
            );
        }
        assert!(check(Op::Prod, Elem::F32).is_ok());
        let mixed = Datatype {
            elem: None,
            ..Datatype::basic(12, Elem::I32)
        };
        assert!(Reduction::predefined(Op::Sum, &mixed).is_err());
    }

    /// A non-commutative user function: `inout = in * 10 + inout`. The
    /// handle tells the layout: 1 for ints, 2 (standing for a strided
    /// type) for one int out of every two; `f` is the slice length the
    /// operation allows, checked.
    ///
    /// # Safety
    /// [`UserCaller`]'s.
    unsafe fn concat(f: usize, a: *mut c_void, b: *mut c_void, len: usize, stride: u64) {
        assert!(len <= f);
        let stride = stride as usize;
        for i in 0..len {
            // SAFETY: `len` elements of the layout the handle stands for.
            unsafe {
                let (x, y) = (
                    a.cast::<i32>().add(stride * i),
                    b.cast::<i32>().add(stride * i),
                );
                *y += *x * 10;
            }
        }
    }

    #[test]
    fn user_functions_see_the_datatype_handle_and_layout() {
        let op = UserOp {
            f: 2,
            call: concat,
            max_len: 2,
            commute: false,
        };
        let dt = std::sync::Arc::new(Datatype::basic(4, Elem::I32)).into();
        let r = Reduction::User { op, handle: 1, dt };
        assert!(!r.commutative());
        let mut acc = bytes(&[2, 3]);
        r.apply(&bytes(&[1, 4]), &mut acc);
        assert_eq!(acc, bytes(&[12, 43]));
        // Strided: one int out of every two (extent 8); packed data.
        let mut strided = Datatype::basic(4, Elem::I32);
        strided.extent = 8;
        let strided = std::sync::Arc::new(strided).into();
        let r = Reduction::User {
            op,
            handle: 2,
            dt: strided,
        };
        let mut acc = bytes(&[5, 6, 7]);
        r.apply(&bytes(&[1, 2, 3]), &mut acc);
        assert_eq!(acc, bytes(&[15, 26, 37]));
    }
}
