//! Communicators (MPI-4.0 chapter 7): rank and size, duplication and
//! freeing (with their attribute callbacks), split and create, compare,
//! names, info hints, error handlers; intercommunicators (MPI-4.1 §7.6:
//! creation, merging, the remote group), whose work is in
//! [`crate::core::intercomm`].

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::attr::{copy_comm_attrs, delete_comm_attrs};
use super::group::{group_members, new_group};
use super::info::{info_hints, new_info, set_hint};
use super::*;
use crate::core::hwsplit::Resource;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_rank(MPI_Comm comm, int *rank)",
    "int MPI_Comm_size(MPI_Comm comm, int *size)",
    "int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)",
    "int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)",
    "int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request)",
    "int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)",
    "int MPI_Comm_free(MPI_Comm *comm)",
    "int MPI_Comm_disconnect(MPI_Comm *comm)",
    "int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)",
    "int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)",
    "int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)",
    "int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)",
    "int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)",
    "int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)",
    "int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)",
    "int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)",
    "int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)",
    "int MPI_Comm_test_inter(MPI_Comm comm, int *flag)",
    "int MPI_Comm_remote_size(MPI_Comm comm, int *size)",
    "int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)",
    "int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag, MPI_Comm *newintercomm)",
    "int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)",
    "int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)",
    "int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)",
];

/// The handle of an optional new communicator (`MPI_COMM_NULL` if none).
fn opt_handle(slot: Option<usize>) -> MPI_Comm {
    slot.map_or(abi::MPI_COMM_NULL, comm_handle)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", comm, |rt| {
        let r = rt.comm(comm_slot(comm)?)?.rank;
        // SAFETY: output argument.
        unsafe { out(rank, r) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", comm, |rt| {
        let n = rt.comm(comm_slot(comm)?)?.size();
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

/// Duplicate `comm` with its attributes copied by their callbacks
/// (MPI-4.0 §7.4.2, §7.7.2); `hints` replace its info hints.
fn dup(name: &str, comm: MPI_Comm, hints: Option<core::info::Info>) -> MpiResult<usize> {
    let (parent, slot) = locked(name, |rt| {
        let parent = comm_slot(comm)?;
        let slot = rt.comm_dup(parent)?;
        if let Some(h) = hints {
            rt.comm_mut(slot)?.info = h;
        }
        Ok((parent, slot))
    })?;
    if let Err(e) = copy_comm_attrs(name, parent, slot) {
        locked(name, |rt| rt.comm_free(slot))?;
        return Err(e);
    }
    Ok(slot)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    call_unlocked("MPI_Comm_dup", comm, || {
        nonnull(newcomm, "newcomm")?;
        let slot = dup("MPI_Comm_dup", comm, None)?;
        // SAFETY: output argument.
        unsafe { out(newcomm, comm_handle(slot)) }
    })
}

/// The nonblocking duplications: the new communicator's handle at once,
/// and a request that is complete already (the id came from the parent's
/// reserved block) or completes when the members have agreed on one
/// (`crate::core::comm`); the attributes are copied at the call, as
/// copying is local.
fn idup(
    name: &str,
    comm: MPI_Comm,
    info: Option<MPI_Info>,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call_unlocked(name, comm, || {
        nonnull(newcomm, "newcomm")?;
        nonnull(request, "request")?;
        let hints = info.map(info_hints).transpose()?;
        let (parent, slot, req) = locked(name, |rt| {
            let parent = comm_slot(comm)?;
            let (slot, agreement) = rt.comm_idup(parent)?;
            if let Some(h) = hints {
                rt.comm_mut(slot)?.info = h;
            }
            let req = match agreement {
                Some(mut s) => {
                    s.advance(&mut rt.ep);
                    rt.add_coll(Box::new(s))
                }
                None => rt.add_req(Req::Done(Status::empty())),
            };
            Ok((parent, slot, req))
        })?;
        // When a copy callback fails, the call fails; an agreement in
        // flight still ends with the other members'.
        copy_comm_attrs(name, parent, slot)?;
        // SAFETY: output arguments, checked non-null above.
        unsafe {
            out(newcomm, comm_handle(slot))?;
            out(request, abi::direct_handle(Kind::Request, req))
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    idup("MPI_Comm_idup", comm, None, newcomm, request)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    idup(
        "MPI_Comm_idup_with_info",
        comm,
        Some(info),
        newcomm,
        request,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call_unlocked("MPI_Comm_dup_with_info", comm, || {
        nonnull(newcomm, "newcomm")?;
        let hints = info_hints(info)?;
        let slot = dup("MPI_Comm_dup_with_info", comm, Some(hints))?;
        // SAFETY: output argument.
        unsafe { out(newcomm, comm_handle(slot)) }
    })
}

/// Runs the delete callbacks of the communicator's attributes first
/// (MPI-4.0 §7.7.2); if one fails, the communicator stays.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { free_comm("MPI_Comm_free", comm, false) }
}

/// `MPI_Comm_free` that first waits, collectively, until the members are
/// done with the communicator (MPI-4.1 §11.10.4): a barrier on it (over
/// both groups of an intercommunicator), after which no member sends on
/// it again.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { free_comm("MPI_Comm_disconnect", comm, true) }
}

/// Free the communicator `*comm` (after a barrier on it when
/// `disconnect`) and null the handle.
///
/// # Safety
/// `comm` is null or points to a handle (MPI contract).
unsafe fn free_comm(name: &str, comm: *mut MPI_Comm, disconnect: bool) -> c_int {
    if comm.is_null() {
        return fail(
            name,
            abi::MPI_COMM_WORLD,
            err(Class::Arg, "null communicator pointer"),
        );
    }
    // SAFETY: non-null pointer to the caller's handle.
    let h = unsafe { *comm };
    call_unlocked(name, h, || {
        let slot = locked(name, |rt| {
            let slot = comm_slot(h)?;
            rt.comm(slot)?;
            if slot <= core::SELF {
                return Err(err(Class::Comm, "predefined communicators cannot be freed"));
            }
            if disconnect {
                crate::coll::barrier(rt, slot)?;
            }
            Ok(slot)
        })?;
        delete_comm_attrs(name, slot)?;
        locked(name, |rt| rt.comm_free(slot))?;
        // SAFETY: as above.
        unsafe { out(comm, abi::MPI_COMM_NULL) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Comm_split", comm, |rt| {
        let parent = comm_slot(comm)?;
        rt.comm(parent)?;
        nonnull(newcomm, "newcomm")?;
        let color = match color {
            abi::MPI_UNDEFINED => None,
            c => Some(
                u32::try_from(c).map_err(|_| err(Class::Arg, format!("invalid color {color}")))?,
            ),
        };
        let slot = rt.comm_split(parent, color, key)?;
        // SAFETY: output argument.
        unsafe { out(newcomm, opt_handle(slot)) }
    })
}

/// `MPI_COMM_TYPE_SHARED` groups the processes of one node (the engine's
/// node, virtual nodes included), talking only to processes of the node.
/// `MPI_COMM_TYPE_HW_GUIDED` splits by the resource the info key
/// `mpi_hw_resource_type` names, and `MPI_COMM_TYPE_HW_UNGUIDED` by the
/// coarsest one that gives strict subsets, setting that key in `info` to
/// its name (MPI-4.0 §7.4.2; [`crate::core::hwsplit`]). Processes outside
/// every instance get `MPI_COMM_NULL`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Comm_split_type", comm, |rt| {
        let parent = comm_slot(comm)?;
        rt.comm(parent)?;
        nonnull(newcomm, "newcomm")?;
        let hints = info_hints(info)?;
        let slot = match split_type {
            abi::MPI_COMM_TYPE_SHARED => rt.comm_split_hw(parent, key, Some(Resource::Node))?,
            abi::MPI_COMM_TYPE_HW_GUIDED => {
                let resource = hints.get(HW_RESOURCE_KEY).and_then(Resource::parse);
                rt.comm_split_hw(parent, key, resource)?
            }
            abi::MPI_COMM_TYPE_HW_UNGUIDED => {
                let split = rt.comm_split_unguided(parent, key)?;
                if let Some((_, resource)) = split
                    && info != abi::MPI_INFO_NULL
                    && info != abi::MPI_INFO_ENV
                {
                    set_hint(info, HW_RESOURCE_KEY, resource.name())?;
                }
                split.map(|(slot, _)| slot)
            }
            abi::MPI_UNDEFINED => rt.comm_split_hw(parent, key, None)?,
            t => return Err(err(Class::Arg, format!("invalid split type {t}"))),
        };
        // SAFETY: output argument.
        unsafe { out(newcomm, opt_handle(slot)) }
    })
}

/// The info key of `MPI_COMM_TYPE_HW_GUIDED` and `_UNGUIDED`.
const HW_RESOURCE_KEY: &str = "mpi_hw_resource_type";

/// The members of `group`, which must be a subset of `parent`'s.
fn subset(rt: &Runtime, parent: usize, group: MPI_Group) -> MpiResult<Vec<u32>> {
    let members = group_members(rt, group)?;
    let p = rt.comm(parent)?;
    if let Some(pid) = members.iter().find(|pid| !p.rank_of.contains_key(pid)) {
        return Err(err(
            Class::Group,
            format!("process {pid} of the group is not in the communicator"),
        ));
    }
    Ok(members)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create(
    comm: MPI_Comm,
    group: MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Comm_create", comm, |rt| {
        let parent = comm_slot(comm)?;
        let members = subset(rt, parent, group)?;
        nonnull(newcomm, "newcomm")?;
        let slot = rt.comm_create(parent, members)?;
        // SAFETY: output argument.
        unsafe { out(newcomm, opt_handle(slot)) }
    })
}

/// Collective over the group only; a process outside it gets
/// `MPI_COMM_NULL` at once.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_group(
    comm: MPI_Comm,
    group: MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Comm_create_group", comm, |rt| {
        let parent = comm_slot(comm)?;
        let members = subset(rt, parent, group)?;
        core::peer::check_tag(tag_arg(tag), false)?;
        nonnull(newcomm, "newcomm")?;
        let slot = if members.contains(&rt.ep.rank()) {
            Some(rt.comm_create_group(parent, members, tag)?)
        } else {
            None
        };
        // SAFETY: output argument.
        unsafe { out(newcomm, opt_handle(slot)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_compare(
    comm1: MPI_Comm,
    comm2: MPI_Comm,
    result: *mut c_int,
) -> c_int {
    call("MPI_Comm_compare", comm1, |rt| {
        let (a, b) = (comm_slot(comm1)?, comm_slot(comm2)?);
        let (ca, cb) = (rt.comm(a)?, rt.comm(b)?);
        use crate::core::group::{Comparison, compare};
        // Intercommunicators compare both groups (MPI-4.1 §7.4.1).
        let remote = match (&ca.remote, &cb.remote) {
            (None, None) => Comparison::Ident,
            (Some(x), Some(y)) => compare(&x.members, &y.members),
            _ => Comparison::Unequal,
        };
        let r = match (compare(&ca.members, &cb.members), remote) {
            _ if a == b => Comparison::Ident,
            (Comparison::Ident, Comparison::Ident) => Comparison::Congruent,
            (Comparison::Unequal, _) | (_, Comparison::Unequal) => Comparison::Unequal,
            _ => Comparison::Similar,
        };
        let r = comparison_out(r);
        // SAFETY: output argument.
        unsafe { out(result, r) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    call("MPI_Comm_set_info", comm, |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        let hints = info_hints(info)?;
        rt.comm_mut(slot)?.info = hints;
        Ok(())
    })
}

/// A new info object with the hints set on the communicator.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    call("MPI_Comm_get_info", comm, |rt| {
        let hints = rt.comm(comm_slot(comm)?)?.info.clone();
        nonnull(info_used, "info_used")?;
        // SAFETY: output argument.
        unsafe { out(info_used, new_info(hints)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", comm, |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        // SAFETY: a NUL-terminated name (MPI contract).
        let name = unsafe { read_object_name(comm_name) }?;
        rt.comm_mut(slot)?.name = Some(name);
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_name(
    comm: MPI_Comm,
    comm_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    call("MPI_Comm_get_name", comm, |rt| {
        // The null handle is predefined, with its name (MPI-4.1 §7.8 names
        // the predefined objects; Open MPI and mpi4py read it too).
        let name = if comm == abi::MPI_COMM_NULL {
            "MPI_COMM_NULL"
        } else {
            let c = rt.comm(comm_slot(comm)?)?;
            c.name.as_deref().unwrap_or("")
        };
        nonnull(resultlen, "resultlen")?;
        // SAFETY: MPI_MAX_OBJECT_NAME bytes at `comm_name` (MPI contract).
        unsafe {
            write_cstr(
                comm_name,
                abi::MPI_MAX_OBJECT_NAME as usize,
                name,
                resultlen,
            )
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", comm, |rt| {
        let inter = rt.comm(comm_slot(comm)?)?.is_inter();
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(inter)) }
    })
}

/// The remote group's members of intercommunicator `comm`.
fn remote_members(rt: &Runtime, comm: MPI_Comm) -> MpiResult<&[u32]> {
    let c = rt.comm(comm_slot(comm)?)?;
    match &c.remote {
        Some(r) => Ok(&r.members),
        None => Err(err(Class::Comm, "not an intercommunicator")),
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", comm, |rt| {
        let n = remote_members(rt, comm)?.len() as c_int;
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_remote_group", comm, |rt| {
        let members = remote_members(rt, comm)?.to_vec();
        let session = rt.comm(comm_slot(comm)?)?.session;
        // SAFETY: output argument.
        unsafe { new_group(rt, core::group::Group { members, session }, group) }
    })
}

/// `MPI_Intercomm_create` (MPI-4.1 §7.6.2): collective over `local_comm`
/// in both groups; `peer_comm`, `remote_leader` and `tag` matter at the
/// local leader only. The new intercommunicator takes `local_comm`'s
/// error handler.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Intercomm_create", local_comm, |rt| {
        let local = comm_slot(local_comm)?;
        let leader = rt.intra(local)?.rank == local_leader;
        // Invalid where it is significant only.
        let peer = if leader {
            comm_slot(peer_comm)?
        } else {
            comm_slot(peer_comm).unwrap_or(local)
        };
        nonnull(newintercomm, "newintercomm")?;
        let slot = rt.intercomm_create(local, local_leader, peer, remote_leader, tag)?;
        // SAFETY: output argument.
        unsafe { out(newintercomm, comm_handle(slot)) }
    })
}

/// `MPI_Intercomm_merge` (MPI-4.1 §7.6.2): the group that passes `high`
/// false comes first in the new intracommunicator.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Intercomm_merge(
    intercomm: MPI_Comm,
    high: c_int,
    newintracomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Intercomm_merge", intercomm, |rt| {
        let slot = comm_slot(intercomm)?;
        nonnull(newintracomm, "newintracomm")?;
        let merged = rt.intercomm_merge(slot, high != 0)?;
        // SAFETY: output argument.
        unsafe { out(newintracomm, comm_handle(merged)) }
    })
}

/// Predefined handlers, or one made by `MPI_Comm_create_errhandler`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    call("MPI_Comm_set_errhandler", comm, |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        let handler = settable_errhandler(rt, errhandler)?;
        rt.comm_mut(slot)?.errhandler = handler;
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call("MPI_Comm_get_errhandler", comm, |rt| {
        let h = rt.comm(comm_slot(comm)?)?.errhandler;
        nonnull(errhandler, "errhandler")?;
        // The application frees what a get returns (MPI-4.1 §9.3.1).
        if let Errhandler::User(i) = h {
            rt.errors.retain_handler(i);
        }
        // SAFETY: output argument.
        unsafe { out(errhandler, errhandler_out(h)) }
    })
}
