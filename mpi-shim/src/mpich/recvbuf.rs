//! Library-managed receive buffers, an extension from the MVAPICH work this
//! project follows: `MPI_Irecv(NULL, count, datatype, ...)` with a
//! contiguous datatype and `count > 0` lets the library place the message
//! in a buffer of its own shared heap, where the sender and idle processes
//! of the node copy into it directly. After completion the application
//! takes the buffer with `MPIX_Get_recv_buf(status, &buf)` and returns it
//! with `MPIX_Release_recv_buf(status, buf)`. `mpi.h` defines
//! `MPIX_HAS_RECV_BUF` so that portable code can test for them.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPIX_Get_recv_buf(MPI_Status status, void **buf)",
    "int MPIX_Release_recv_buf(MPI_Status status, void *buf)",
];

/// Hand out the buffer of a completed library-managed receive whose status
/// is `status` (see `core::recvbuf` for receives with equal statuses).
/// `MPI_ERR_ARG` for a null `buf` or a status no such receive completed
/// with.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Get_recv_buf(status: MPI_Status, buf: *mut *mut c_void) -> c_int {
    call("MPIX_Get_recv_buf", abi::MPI_COMM_WORLD, |rt| {
        if buf.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        let st = status_in(&status);
        let (src, tag, bytes) = (status.MPI_SOURCE, status.MPI_TAG, st.bytes);
        let p = rt.recv_bufs.take(&st).ok_or_else(|| {
            err(
                Class::Arg,
                format!(
                    "no library-managed receive completed from rank {src} with tag {tag} and \
                     {bytes} bytes (or its buffer was already taken)"
                ),
            )
        })?;
        // SAFETY: `buf` is a non-null output argument (MPI contract).
        unsafe { out(buf, p.cast()) }
    })
}

/// Return a buffer from `MPIX_Get_recv_buf` to the library. `MPI_ERR_BUFFER`
/// for anything else (and nothing changes).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Release_recv_buf(_status: MPI_Status, buf: *mut c_void) -> c_int {
    call("MPIX_Release_recv_buf", abi::MPI_COMM_WORLD, |rt| {
        if rt.recv_bufs.release(buf.cast()) {
            Ok(())
        } else {
            Err(err(
                Class::Buffer,
                format!("{buf:p} is not a buffer from MPIX_Get_recv_buf, or was released already"),
            ))
        }
    })
}
