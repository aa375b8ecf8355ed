//! Collective operations.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Barrier(MPI_Comm comm)",
    "int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)",
    "int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)",
    "int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
];

// ---------------------------------------------------------------------
// Collectives.

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    call("MPI_Barrier", comm, |rt| {
        crate::coll::barrier(rt, comm_slot(comm)?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Bcast", comm, |rt| {
        let slot = comm_slot(comm)?;
        let root = check_root(rt.comm(slot)?, root)?;
        // SAFETY: forwarded from the caller.
        let ub = unsafe { UserBuf::new(rt, buffer, count, datatype)? };
        // SAFETY: the buffer is readable and writable (MPI contract).
        let mut data = unsafe { ub.data() }.into_owned();
        crate::coll::bcast(rt, slot, &mut data, root)?;
        // SAFETY: as above.
        unsafe { ub.unpack(&data) };
        Ok(())
    })
}

/// Checked arguments of a reduction, and the accumulator initialised from
/// the send buffer (or from the receive buffer with `MPI_IN_PLACE`).
unsafe fn reduce_args(
    rt: &Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    receives: bool,
) -> MpiResult<(Vec<u8>, ops::Elem)> {
    let dt = super::datatype(rt, datatype)?;
    let elem = dt.elem.unwrap_or(ops::Elem::Opaque);
    ops::check(op, elem)?;
    let src = if abi::is_in_place(sendbuf) {
        if !receives {
            return Err(err(
                abi::MPI_ERR_BUFFER,
                "MPI_IN_PLACE is only valid at the root",
            ));
        }
        recvbuf.cast_const()
    } else {
        sendbuf
    };
    // SAFETY: forwarded from the caller.
    let ub = unsafe { UserBuf::new(rt, src, count, datatype)? };
    // SAFETY: the buffer is readable (MPI contract).
    Ok((unsafe { ub.data() }.into_owned(), elem))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Reduce", comm, |rt| {
        let slot = comm_slot(comm)?;
        let c = rt.comm(slot)?;
        let root = check_root(c, root)?;
        let at_root = c.rank as usize == root;
        // SAFETY: forwarded from the caller.
        let (mut acc, elem) =
            unsafe { reduce_args(rt, sendbuf, recvbuf, count, datatype, op, at_root)? };
        crate::coll::reduce(rt, slot, &mut acc, op, elem, root)?;
        if at_root {
            // SAFETY: the root's receive buffer holds `count` elements.
            unsafe { UserBuf::new(rt, recvbuf, count, datatype)?.unpack(&acc) };
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Allreduce", comm, |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        // SAFETY: forwarded from the caller.
        let (mut acc, elem) =
            unsafe { reduce_args(rt, sendbuf, recvbuf, count, datatype, op, true)? };
        crate::coll::allreduce(rt, slot, &mut acc, op, elem)?;
        // SAFETY: the receive buffer holds `count` elements.
        unsafe { UserBuf::new(rt, recvbuf, count, datatype)?.unpack(&acc) };
        Ok(())
    })
}
