//! Data and callbacks that MPICH's header names as symbols rather than
//! values, exported under MPICH's names so that binaries built against
//! MPICH find them: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` (MPI-4.0
//! §8.5.4), `MPI_F_STATUS(ES)_IGNORE` and their Fortran 2008 forms
//! (MPI-4.0 §19.3.5), `MPI_T_PVAR_ALL_HANDLES` (MPI-4.0 §15.3.7), and
//! `MPIR_Dup_fn`, the function behind `MPI_*_DUP_FN` (MPI-4.0 §7.7.2).

#![allow(non_upper_case_globals)]

use std::ffi::{c_int, c_void};

use crate::abi::{self, MPI_Comm};

/// An address exported as a C pointer variable.
#[derive(Debug)]
#[repr(transparent)]
pub struct Address<T>(pub(crate) *const T);

// SAFETY: the addresses are of statics (or null); nothing writes through
// them, neither the library nor, by MPI's rules, the application.
unsafe impl<T> Sync for Address<T> {}

impl<T> Address<T> {
    /// The address, for comparisons with the caller's argument.
    pub fn get(&self) -> *const T {
        self.0
    }
}

/// The targets: distinct objects, so that the special addresses differ
/// from each other and from every buffer the application owns. Their
/// contents never matter.
static UNWEIGHTED: c_int = 0x0004_6618;
static WEIGHTS_EMPTY: c_int = 0x0002_2284;
static F08_STATUS_IGNORE: [c_int; 5] = [0; 5];
static F08_STATUSES_IGNORE: [c_int; 5] = [0; 5];
static PVAR_ALL_HANDLES: u8 = 0;

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_UNWEIGHTED: Address<c_int> = Address(&raw const UNWEIGHTED);

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_WEIGHTS_EMPTY: Address<c_int> = Address(&raw const WEIGHTS_EMPTY);

/// Null, as in MPICH when no Fortran binding is loaded: this library has
/// no Fortran binding, so there is no Fortran `MPI_STATUS_IGNORE` to
/// point at.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_F_STATUS_IGNORE: Address<c_int> = Address(std::ptr::null());

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_F_STATUSES_IGNORE: Address<c_int> = Address(std::ptr::null());

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_F08_STATUS_IGNORE: Address<[c_int; 5]> = Address(&raw const F08_STATUS_IGNORE);

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_F08_STATUSES_IGNORE: Address<[c_int; 5]> = Address(&raw const F08_STATUSES_IGNORE);

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub static MPI_T_PVAR_ALL_HANDLES: Address<c_void> = Address((&raw const PVAR_ALL_HANDLES).cast());

/// `MPI_COMM_DUP_FN` and its kin: the copy is the same attribute value.
///
/// # Safety
/// `attribute_val_out` addresses a `void *` and `flag` an `int`, as when
/// the library calls an attribute copy callback.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if attribute_val_out.is_null() || flag.is_null() {
        return abi::MPI_ERR_ARG;
    }
    // SAFETY: both point to writable objects of their types (see above).
    unsafe {
        attribute_val_out
            .cast::<*mut c_void>()
            .write(attribute_val_in);
        flag.write(1);
    }
    abi::MPI_SUCCESS
}
