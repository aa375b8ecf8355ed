//! Predefined datatypes (sizes and element kinds) and the predefined
//! reduction operations on them.

use crate::abi::{self, MPI_Datatype, MPI_Op};
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
    /// `MPI_C_BOOL`: logical operations only.
    Bool,
    /// `MPI_BYTE`: bitwise operations only.
    Byte,
    /// Sendable, but no predefined operation applies (`long double`,
    /// pair types, `MPI_PACKED`).
    Opaque,
}

/// Size in bytes and element kind of a predefined datatype.
pub fn predefined(dt: MPI_Datatype) -> MpiResult<(usize, Elem)> {
    use Elem::*;
    let elem = match dt {
        abi::MPI_CHAR | abi::MPI_SIGNED_CHAR | abi::MPI_INT8_T => I8,
        abi::MPI_UNSIGNED_CHAR | abi::MPI_UINT8_T => U8,
        abi::MPI_SHORT | abi::MPI_INT16_T => I16,
        abi::MPI_UNSIGNED_SHORT | abi::MPI_UINT16_T => U16,
        abi::MPI_INT | abi::MPI_INT32_T | abi::MPI_WCHAR => I32,
        abi::MPI_UNSIGNED | abi::MPI_UINT32_T => U32,
        abi::MPI_LONG
        | abi::MPI_LONG_LONG_INT
        | abi::MPI_INT64_T
        | abi::MPI_AINT
        | abi::MPI_OFFSET
        | abi::MPI_COUNT => I64,
        abi::MPI_UNSIGNED_LONG | abi::MPI_UNSIGNED_LONG_LONG | abi::MPI_UINT64_T => U64,
        abi::MPI_FLOAT => F32,
        abi::MPI_DOUBLE => F64,
        abi::MPI_C_BOOL => Bool,
        abi::MPI_BYTE => Byte,
        abi::MPI_LONG_DOUBLE | abi::MPI_PACKED | abi::MPI_2INT => Opaque,
        // Pair types have MPICH's "direct" handles, so no size bits.
        abi::MPI_FLOAT_INT | abi::MPI_SHORT_INT => return Ok((8, Opaque)),
        abi::MPI_DOUBLE_INT | abi::MPI_LONG_INT => return Ok((16, Opaque)),
        abi::MPI_LONG_DOUBLE_INT => return Ok((32, Opaque)),
        _ => {
            return Err(MpiError::new(
                abi::MPI_ERR_TYPE,
                format!("invalid datatype {dt:#x}"),
            ));
        }
    };
    // Predefined handles carry their size in bits 8-15.
    Ok((((dt as u32 >> 8) & 0xff) as usize, elem))
}

macro_rules! fold {
    ($ty:ty, $a:expr, $b:expr, $f:expr) => {{
        const N: usize = size_of::<$ty>();
        for (x, y) in $a.chunks_exact(N).zip($b.chunks_exact_mut(N)) {
            let x = <$ty>::from_ne_bytes(x.try_into().unwrap());
            let yv = <$ty>::from_ne_bytes((&*y).try_into().unwrap());
            let f: fn($ty, $ty) -> $ty = $f;
            y.copy_from_slice(&f(x, yv).to_ne_bytes());
        }
    }};
}

macro_rules! int_ops {
    ($ty:ty, $op:expr, $a:expr, $b:expr) => {
        match $op {
            abi::MPI_SUM => fold!($ty, $a, $b, |x, y| x.wrapping_add(y)),
            abi::MPI_PROD => fold!($ty, $a, $b, |x, y| x.wrapping_mul(y)),
            abi::MPI_MAX => fold!($ty, $a, $b, |x, y| x.max(y)),
            abi::MPI_MIN => fold!($ty, $a, $b, |x, y| x.min(y)),
            abi::MPI_LAND => fold!($ty, $a, $b, |x, y| ((x != 0) && (y != 0)) as $ty),
            abi::MPI_LOR => fold!($ty, $a, $b, |x, y| ((x != 0) || (y != 0)) as $ty),
            abi::MPI_LXOR => fold!($ty, $a, $b, |x, y| ((x != 0) != (y != 0)) as $ty),
            abi::MPI_BAND => fold!($ty, $a, $b, |x, y| x & y),
            abi::MPI_BOR => fold!($ty, $a, $b, |x, y| x | y),
            abi::MPI_BXOR => fold!($ty, $a, $b, |x, y| x ^ y),
            op => return Err(bad_op(op, "integer")),
        }
    };
}

macro_rules! float_ops {
    ($ty:ty, $op:expr, $a:expr, $b:expr) => {
        match $op {
            abi::MPI_SUM => fold!($ty, $a, $b, |x, y| x + y),
            abi::MPI_PROD => fold!($ty, $a, $b, |x, y| x * y),
            abi::MPI_MAX => fold!($ty, $a, $b, |x, y| if x > y { x } else { y }),
            abi::MPI_MIN => fold!($ty, $a, $b, |x, y| if x < y { x } else { y }),
            op => return Err(bad_op(op, "floating-point")),
        }
    };
}

fn bad_op(op: MPI_Op, what: &str) -> MpiError {
    MpiError::new(
        abi::MPI_ERR_OP,
        format!("operation {op:#x} is not defined on {what} datatypes"),
    )
}

/// Check that `op` applies to `elem`, without computing anything.
pub fn check(op: MPI_Op, elem: Elem) -> MpiResult<()> {
    apply(op, elem, &[], &mut [])
}

/// `inout[i] = input[i] op inout[i]` for every element. Integer
/// arithmetic wraps, as in C.
pub fn apply(op: MPI_Op, elem: Elem, input: &[u8], inout: &mut [u8]) -> MpiResult<()> {
    use Elem::*;
    if !(0x5800_0001..=0x5800_000e).contains(&op) {
        return Err(MpiError::new(
            abi::MPI_ERR_OP,
            format!("invalid operation {op:#x}"),
        ));
    }
    match elem {
        I8 => int_ops!(i8, op, input, inout),
        I16 => int_ops!(i16, op, input, inout),
        I32 => int_ops!(i32, op, input, inout),
        I64 => int_ops!(i64, op, input, inout),
        U8 => int_ops!(u8, op, input, inout),
        U16 => int_ops!(u16, op, input, inout),
        U32 => int_ops!(u32, op, input, inout),
        U64 => int_ops!(u64, op, input, inout),
        F32 => float_ops!(f32, op, input, inout),
        F64 => float_ops!(f64, op, input, inout),
        Bool => match op {
            abi::MPI_LAND => fold!(u8, input, inout, |x, y| ((x != 0) && (y != 0)) as u8),
            abi::MPI_LOR => fold!(u8, input, inout, |x, y| ((x != 0) || (y != 0)) as u8),
            abi::MPI_LXOR => fold!(u8, input, inout, |x, y| ((x != 0) != (y != 0)) as u8),
            _ => return Err(bad_op(op, "logical")),
        },
        Byte => match op {
            abi::MPI_BAND => fold!(u8, input, inout, |x, y| x & y),
            abi::MPI_BOR => fold!(u8, input, inout, |x, y| x | y),
            abi::MPI_BXOR => fold!(u8, input, inout, |x, y| x ^ y),
            _ => return Err(bad_op(op, "byte")),
        },
        Opaque => return Err(bad_op(op, "this")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn sizes_come_from_the_handles() {
        assert_eq!(predefined(abi::MPI_DOUBLE).unwrap(), (8, Elem::F64));
        assert_eq!(predefined(abi::MPI_SHORT).unwrap(), (2, Elem::I16));
        assert_eq!(predefined(abi::MPI_DOUBLE_INT).unwrap().0, 16);
        assert_eq!(
            predefined(abi::MPI_DATATYPE_NULL).unwrap_err().class,
            abi::MPI_ERR_TYPE
        );
    }

    #[test]
    fn integer_operations() {
        let mut acc = ints(&[1, 5, -3]);
        apply(abi::MPI_SUM, Elem::I32, &ints(&[2, 2, 2]), &mut acc).unwrap();
        assert_eq!(acc, ints(&[3, 7, -1]));
        apply(abi::MPI_MAX, Elem::I32, &ints(&[4, 0, 0]), &mut acc).unwrap();
        assert_eq!(acc, ints(&[4, 7, 0]));
        apply(abi::MPI_BXOR, Elem::I32, &ints(&[4, 7, 1]), &mut acc).unwrap();
        assert_eq!(acc, ints(&[0, 0, 1]));
        apply(abi::MPI_LOR, Elem::I32, &ints(&[0, 9, 0]), &mut acc).unwrap();
        assert_eq!(acc, ints(&[0, 1, 1]));
    }

    #[test]
    fn operations_outside_their_domain_are_err_op() {
        assert_eq!(
            check(abi::MPI_BAND, Elem::F64).unwrap_err().class,
            abi::MPI_ERR_OP
        );
        assert_eq!(
            check(abi::MPI_SUM, Elem::Bool).unwrap_err().class,
            abi::MPI_ERR_OP
        );
        assert_eq!(
            check(abi::MPI_OP_NULL, Elem::I32).unwrap_err().class,
            abi::MPI_ERR_OP
        );
        assert!(check(abi::MPI_PROD, Elem::F32).is_ok());
    }
}
