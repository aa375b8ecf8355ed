//! Partitioned point-to-point communication (MPI-4.0 chapter 4): the
//! persistent requests of `MPI_Psend_init` and `MPI_Precv_init`, and the
//! calls that mark partitions ready and ask whether they arrived. The
//! rounds themselves are the core's ([`crate::core::partitioned`]).

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::core::Class;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use shm_engine::TagMatch;

use super::super::info::info_hints;
use super::super::{call, call_starting, comm_slot, err, out};
use super::requests::req_slot;
use super::{persistent, recv_args, send_args};
use crate::abi::{self, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Request};
use crate::core::p2p::SendMode;
use crate::core::partitioned::{PARTITIONED, Round};
use crate::core::peer::{Rank, Tag};
use crate::core::{Comm, MpiResult, Req, Runtime, Status};

pub(in crate::mpich) const PROTOTYPES: &[&str] = &[
    "int MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Pready(int partition, MPI_Request request)",
    "int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)",
    "int MPI_Pready_list(int length, int array_of_partitions[], MPI_Request request)",
    "int MPI_Parrived(MPI_Request request, int partition, int *flag)",
];

/// Checked common arguments: the number of partitions and the element
/// count of the whole buffer.
fn shape(partitions: c_int, count: MPI_Count, info: MPI_Info) -> MpiResult<(usize, MPI_Count)> {
    info_hints(info)?;
    let n = usize::try_from(partitions)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| err(Class::Arg, format!("{partitions} partitions (at least 1)")))?;
    if count < 0 {
        return Err(err(Class::Count, format!("negative count {count}")));
    }
    let total = count
        .checked_mul(MPI_Count::from(partitions))
        .ok_or_else(|| err(Class::Count, "the buffer's element count overflows"))?;
    Ok((n, total))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    call_starting("MPI_Psend_init", comm, request, |rt| {
        let (n, total) = shape(partitions, count, info)?;
        // SAFETY: forwarded from the caller.
        let (to, etag, ub) = unsafe { send_args(rt, buf, total, datatype, dest, tag, comm)? };
        let slot = comm_slot(comm)?;
        let ub = Rc::new(ub);
        let start = move |_: &mut Runtime| {
            let ub = ub.clone();
            let send = move |rt: &mut Runtime| match to {
                // SAFETY: MPI forbids touching a ready partition until the
                // round completes; the buffer stays valid until the
                // request is freed.
                Some(to) => unsafe {
                    rt.start_send(to, etag | PARTITIONED, &ub, slot, SendMode::Standard)
                },
                None => Ok(Req::Done(Status::empty())),
            };
            Ok(Req::Part(Round::send(n, Box::new(send))))
        };
        Ok(persistent(rt, Box::new(start)))
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    call_starting("MPI_Precv_init", comm, request, |rt| {
        let (n, total) = shape(partitions, count, info)?;
        // A partitioned receive names its peer and tag (MPI-4.0 §4.2.2).
        let c = rt.comm(comm_slot(comm)?)?;
        if super::rank_arg(source) == Rank::Any {
            return Err(err(Class::Rank, "MPI_ANY_SOURCE in a partitioned receive"));
        }
        if super::tag_arg(tag) == Tag::Any {
            return Err(err(Class::Tag, "MPI_ANY_TAG in a partitioned receive"));
        }
        let exact = TagMatch::exact(Comm::tag(c.ctx, tag) | PARTITIONED);
        // SAFETY: forwarded from the caller.
        let (from, ub, slot) = unsafe { recv_args(rt, buf, total, datatype, source, tag, comm)? };
        let from = from.map(|(src, _)| (src, exact));
        let start = move |rt: &mut Runtime| {
            // SAFETY: MPI forbids touching the buffer while a round is
            // active; it stays valid until the request is freed.
            let op = unsafe { rt.start_recv(from, &ub, slot)? };
            Ok(Req::Part(Round::recv(n, op)))
        };
        Ok(persistent(rt, Box::new(start)))
    })
}

/// A partition number argument.
fn partition(k: c_int) -> MpiResult<usize> {
    usize::try_from(k).map_err(|_| err(Class::Arg, format!("partition {k}")))
}

/// The slot of a partitioned request's handle.
fn live(request: MPI_Request) -> MpiResult<usize> {
    req_slot(request)?.ok_or_else(|| err(Class::Request, "MPI_REQUEST_NULL"))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Pready(partition_: c_int, request: MPI_Request) -> c_int {
    call("MPI_Pready", abi::MPI_COMM_WORLD, |rt| {
        rt.pready(live(request)?, &[partition(partition_)?])
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Pready_range(
    partition_low: c_int,
    partition_high: c_int,
    request: MPI_Request,
) -> c_int {
    call("MPI_Pready_range", abi::MPI_COMM_WORLD, |rt| {
        let (lo, hi) = (partition(partition_low)?, partition(partition_high)?);
        let all: Vec<usize> = (lo..=hi).collect();
        rt.pready(live(request)?, &all)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Pready_list(
    length: c_int,
    array_of_partitions: *const c_int,
    request: MPI_Request,
) -> c_int {
    call("MPI_Pready_list", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: `length` partitions (MPI contract).
        let list = unsafe { super::super::group::ints(array_of_partitions, length, "partition")? };
        let all = list
            .iter()
            .map(|&k| partition(k))
            .collect::<MpiResult<Vec<_>>>()?;
        rt.pready(live(request)?, &all)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Parrived(
    request: MPI_Request,
    partition_: c_int,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Parrived", abi::MPI_COMM_WORLD, |rt| {
        let arrived = rt.parrived(live(request)?, partition(partition_)?)?;
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(arrived)) }
    })
}
