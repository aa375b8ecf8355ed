//! Count and displacement arguments of either width.
//!
//! Since MPI-4.0 nearly every function with a count has a twin whose name
//! ends in `_c` (§2.5.8, "large counts"): its counts are `MPI_Count`, its
//! displacements in units of an extent `MPI_Aint`. Both forms call one
//! implementation, generic over [`Count`] and [`Displ`]; inside the
//! library a count is always an `MPI_Count`.

use crate::core::Class;
use std::ffi::c_int;

use super::err;
use crate::abi::{self, MPI_Aint, MPI_Count};
use crate::core::MpiResult;

/// A count as an application passes it: `int` or `MPI_Count`.
pub(crate) trait Count: Copy {
    /// `MPI_Count`: the argument of a `_c` function.
    const LARGE: bool;

    fn get(self) -> MPI_Count;
}

impl Count for c_int {
    const LARGE: bool = false;

    fn get(self) -> MPI_Count {
        self.into()
    }
}

impl Count for MPI_Count {
    const LARGE: bool = true;

    fn get(self) -> MPI_Count {
        self
    }
}

/// A count as the library returns it: `int` or `MPI_Count`. `None` when
/// the value does not fit (the `int` forms then report `MPI_UNDEFINED`
/// or `MPI_ERR_VALUE_TOO_LARGE`, as each function says).
pub(crate) trait CountOut: Copy {
    /// `MPI_UNDEFINED` in this width.
    const UNDEFINED: Self;

    fn from_count(n: MPI_Count) -> Option<Self>;
}

impl CountOut for c_int {
    const UNDEFINED: Self = abi::MPI_UNDEFINED;

    fn from_count(n: MPI_Count) -> Option<Self> {
        c_int::try_from(n).ok()
    }
}

impl CountOut for MPI_Count {
    const UNDEFINED: Self = abi::MPI_UNDEFINED as MPI_Count;

    fn from_count(n: MPI_Count) -> Option<Self> {
        Some(n)
    }
}

/// A displacement in units of an extent: `int` or `MPI_Aint`.
pub(crate) trait Displ: Copy {
    fn value(self) -> isize;
}

impl Displ for c_int {
    fn value(self) -> isize {
        self as isize
    }
}

impl Displ for MPI_Aint {
    fn value(self) -> isize {
        self as isize
    }
}

/// `n` counts from an argument array (one per rank, per block...).
///
/// # Safety
/// A non-null `p` has `n` readable entries (MPI contract).
pub(crate) unsafe fn counts<C: Count>(
    p: *const C,
    n: usize,
    what: &str,
) -> MpiResult<Vec<MPI_Count>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(err(Class::Arg, format!("null {what} array")));
    }
    // SAFETY: `n` readable entries (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|c| c.get())
        .collect())
}

/// `n` displacements from an argument array.
///
/// # Safety
/// As for [`counts`].
pub(crate) unsafe fn displs<D: Displ>(p: *const D, n: usize) -> MpiResult<Vec<isize>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(err(Class::Arg, "null displacement array"));
    }
    // SAFETY: `n` readable entries (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|d| d.value())
        .collect())
}

/// Define an entry function in its two widths: `$name` with `int` counts
/// and `$name_c` with `MPI_Count` ones (and `MPI_Aint` displacements);
/// or in one, when no `/ $name_c` follows the name.
/// In the signature and the body, `C` is the count type and `D` the
/// displacement type; `NAME` is the function's name, for its errors.
/// Each width lives in a module of its name, whose function is
/// re-exported.
macro_rules! large_count {
    ($(#[$m:meta])* fn $name:ident ($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        large_count!(@one $(#[$m])* $name, ::std::ffi::c_int, ::std::ffi::c_int, ($($arg: $ty),*) $body);
    };
    ($(#[$m:meta])* fn $name:ident / $name_c:ident ($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        large_count!(@one $(#[$m])* $name, ::std::ffi::c_int, ::std::ffi::c_int, ($($arg: $ty),*) $body);
        large_count!(@one $(#[$m])* $name_c, $crate::abi::MPI_Count, $crate::abi::MPI_Aint, ($($arg: $ty),*) $body);
    };
    (@one $(#[$m:meta])* $name:ident, $c:ty, $d:ty, ($($arg:ident: $ty:ty),*) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type C = $c;
            #[allow(dead_code)]
            type D = $d;
            const NAME: &str = stringify!($name);
            $(#[$m])*
            #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> ::std::ffi::c_int $body
        }
        #[allow(unused_imports)]
        pub use self::$name::$name;
    };
}
pub(crate) use large_count;
