//! Language interoperability: statuses between C and Fortran (MPI-4.0
//! §19.3.5). A Fortran status is `MPI_F_STATUS_SIZE` integers holding the
//! fields of MPICH's C status in the same order (`MPI_F_SOURCE`,
//! `MPI_F_TAG`, `MPI_F_ERROR` index the public ones), and so is MPICH's
//! `MPI_F08_status` (the `mpi_f08` form), so every conversion is a copy. Handles need no functions: in the MPICH ABI a Fortran handle
//! is the C one (the `MPI_*_c2f` macros of `mpi.h`).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;
use crate::abi::MPI_Fint;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)",
    "int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)",
    "int MPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status)",
    "int MPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status)",
    "int MPI_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status)",
    "int MPI_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status)",
];

const WORDS: usize = abi::MPI_F_STATUS_SIZE as usize;
const _: () = assert!(size_of::<MPI_Status>() == WORDS * size_of::<MPI_Fint>());
const _: () =
    assert!(std::mem::offset_of!(MPI_Status, MPI_SOURCE) == 4 * abi::MPI_F_SOURCE as usize);
const _: () = assert!(std::mem::offset_of!(MPI_Status, MPI_TAG) == 4 * abi::MPI_F_TAG as usize);
const _: () = assert!(std::mem::offset_of!(MPI_Status, MPI_ERROR) == 4 * abi::MPI_F_ERROR as usize);

/// Copy the words of a status from `from` to `to`, both checked.
///
/// # Safety
/// Non-null arguments address a status of either form (MPI contract).
unsafe fn copy_status(from: *const MPI_Fint, to: *mut MPI_Fint) -> MpiResult<()> {
    if from.is_null() || to.is_null() {
        return Err(err(Class::Arg, "null status"));
    }
    // SAFETY: both address WORDS integers (a status of either form), and
    // a caller's input and output statuses are distinct objects.
    unsafe { std::ptr::copy_nonoverlapping(from, to, WORDS) };
    Ok(())
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_c2f(
    c_status: *const MPI_Status,
    f_status: *mut MPI_Fint,
) -> c_int {
    call("MPI_Status_c2f", abi::MPI_COMM_WORLD, |_| {
        if abi::is_status_ignore(c_status) {
            return Err(err(Class::Arg, "MPI_STATUS_IGNORE has no Fortran form"));
        }
        // SAFETY: a C status and a Fortran status (MPI contract).
        unsafe { copy_status(c_status.cast(), f_status) }
    })
}

/// `MPI_F_STATUS_IGNORE` is null in this library (no Fortran binding):
/// the null check rejects it.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_f2c(
    f_status: *const MPI_Fint,
    c_status: *mut MPI_Status,
) -> c_int {
    call("MPI_Status_f2c", abi::MPI_COMM_WORLD, |_| {
        if abi::is_status_ignore(c_status) {
            return Err(err(Class::Arg, "cannot convert into MPI_STATUS_IGNORE"));
        }
        // SAFETY: a Fortran status and a C status (MPI contract).
        unsafe { copy_status(f_status, c_status.cast()) }
    })
}

/// `MPI_Status_f082c`: an `mpi_f08` status into a C one.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_f082c(
    f08_status: *const MPI_Fint,
    c_status: *mut MPI_Status,
) -> c_int {
    call("MPI_Status_f082c", abi::MPI_COMM_WORLD, |_| {
        if abi::is_status_ignore(c_status) {
            return Err(err(Class::Arg, "cannot convert into MPI_STATUS_IGNORE"));
        }
        // SAFETY: an `mpi_f08` status and a C status (MPI contract).
        unsafe { copy_status(f08_status, c_status.cast()) }
    })
}

/// `MPI_Status_c2f08`: a C status into an `mpi_f08` one.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_c2f08(
    c_status: *const MPI_Status,
    f08_status: *mut MPI_Fint,
) -> c_int {
    call("MPI_Status_c2f08", abi::MPI_COMM_WORLD, |_| {
        if abi::is_status_ignore(c_status) {
            return Err(err(Class::Arg, "MPI_STATUS_IGNORE has no mpi_f08 form"));
        }
        // SAFETY: a C status and an `mpi_f08` status (MPI contract).
        unsafe { copy_status(c_status.cast(), f08_status) }
    })
}

/// `MPI_Status_f082f`: an `mpi_f08` status into a Fortran one.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_f082f(
    f08_status: *const MPI_Fint,
    f_status: *mut MPI_Fint,
) -> c_int {
    // SAFETY: both statuses (MPI contract).
    call("MPI_Status_f082f", abi::MPI_COMM_WORLD, |_| unsafe {
        copy_status(f08_status, f_status)
    })
}

/// `MPI_Status_f2f08`: a Fortran status into an `mpi_f08` one.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_f2f08(
    f_status: *const MPI_Fint,
    f08_status: *mut MPI_Fint,
) -> c_int {
    // SAFETY: both statuses (MPI contract).
    call("MPI_Status_f2f08", abi::MPI_COMM_WORLD, |_| unsafe {
        copy_status(f_status, f08_status)
    })
}
