//! Datatypes.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

pub(super) const PROTOTYPES: &[&str] = &["int MPI_Type_size(MPI_Datatype datatype, int *size)"];

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    call("MPI_Type_size", abi::MPI_COMM_WORLD, |rt| {
        let s = super::datatype(rt, datatype)?.size;
        // SAFETY: output argument.
        unsafe { out(size, s as c_int) }
    })
}
