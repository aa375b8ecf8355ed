//! Communicators, their error handlers.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_rank(MPI_Comm comm, int *rank)",
    "int MPI_Comm_size(MPI_Comm comm, int *size)",
    "int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)",
    "int MPI_Comm_free(MPI_Comm *comm)",
    "int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)",
    "int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)",
];

// ---------------------------------------------------------------------
// Communicators and errors.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", comm, |rt| {
        let r = rt.comm(comm_slot(comm)?)?.rank;
        // SAFETY: output argument.
        unsafe { out(rank, r) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", comm, |rt| {
        let n = rt.comm(comm_slot(comm)?)?.size();
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_dup", comm, |rt| {
        let slot = rt.comm_dup(comm_slot(comm)?)?;
        // SAFETY: output argument.
        unsafe { out(newcomm, comm_handle(slot)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if comm.is_null() {
        return call("MPI_Comm_free", abi::MPI_COMM_WORLD, |_| {
            Err(err(abi::MPI_ERR_ARG, "null communicator pointer"))
        });
    }
    // SAFETY: non-null pointer to the caller's handle.
    let h = unsafe { *comm };
    call("MPI_Comm_free", h, |rt| {
        rt.comm_free(comm_slot(h)?)?;
        // SAFETY: as above.
        unsafe { out(comm, abi::MPI_COMM_NULL) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    call("MPI_Comm_set_errhandler", comm, |rt| {
        let c = rt.comm_mut(comm_slot(comm)?)?;
        match errhandler {
            abi::MPI_ERRORS_ARE_FATAL | abi::MPI_ERRORS_RETURN | abi::MPI_ERRORS_ABORT => {
                c.errhandler = errhandler;
                Ok(())
            }
            h => Err(err(
                abi::MPI_ERR_ARG,
                format!("invalid error handler {h:#x}"),
            )),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call("MPI_Comm_get_errhandler", comm, |rt| {
        let h = rt.comm(comm_slot(comm)?)?.errhandler;
        // SAFETY: output argument.
        unsafe { out(errhandler, h) }
    })
}
