//! Groups (MPI-4.0 §7.3): made from communicators and from each other,
//! all local. `MPI_GROUP_EMPTY` is slot 0 of the runtime's group table;
//! an empty result is always `MPI_GROUP_EMPTY`.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;
use crate::core::group::{self, Group};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)",
    "int MPI_Group_size(MPI_Group group, int *size)",
    "int MPI_Group_rank(MPI_Group group, int *rank)",
    "int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])",
    "int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)",
    "int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)",
    "int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)",
    "int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)",
    "int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)",
    "int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)",
    "int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)",
    "int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)",
    "int MPI_Group_free(MPI_Group *group)",
];

/// The group-table slot of a handle.
pub(crate) fn group_slot(h: MPI_Group) -> MpiResult<usize> {
    match h {
        abi::MPI_GROUP_EMPTY => Ok(0),
        h => abi::direct_index(Kind::Group, h)
            .filter(|&i| i > 0)
            .ok_or_else(|| err(Class::Group, format!("invalid group {h:#x}"))),
    }
}

/// The handle of group slot `slot`.
pub(crate) fn group_handle(slot: usize) -> MPI_Group {
    match slot {
        0 => abi::MPI_GROUP_EMPTY,
        i => abi::direct_handle(Kind::Group, i),
    }
}

/// The group behind handle `h`.
pub(crate) fn group_ref(rt: &Runtime, h: MPI_Group) -> MpiResult<&Group> {
    rt.groups
        .get(group_slot(h)?)
        .ok_or_else(|| err(Class::Group, format!("invalid group {h:#x}")))
}

/// The members (engine process ids) of group `h`.
pub(crate) fn group_members(rt: &Runtime, h: MPI_Group) -> MpiResult<Vec<u32>> {
    Ok(group_ref(rt, h)?.members.clone())
}

/// Store `g` and write its handle (`MPI_GROUP_EMPTY` if it is empty).
pub(crate) unsafe fn new_group(
    rt: &mut Runtime,
    g: Group,
    newgroup: *mut MPI_Group,
) -> MpiResult<()> {
    nonnull(newgroup, "newgroup")?;
    let h = if g.members.is_empty() {
        abi::MPI_GROUP_EMPTY
    } else {
        group_handle(rt.groups.insert(g))
    };
    // SAFETY: output argument, checked non-null.
    unsafe { out(newgroup, h) }
}

/// `n` ints at `p` (an array the caller passes with its length).
///
/// # Safety
/// A non-null `p` addresses `n` ints (MPI contract).
pub(crate) unsafe fn ints<'a>(p: *const c_int, n: c_int, what: &str) -> MpiResult<&'a [c_int]> {
    if n < 0 {
        return Err(err(Class::Arg, format!("negative {what} count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(Class::Arg, format!("null {what} array")));
    }
    // SAFETY: `n` readable ints (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_group", comm, |rt| {
        let c = rt.comm(comm_slot(comm)?)?;
        let g = Group {
            members: c.members.clone(),
            session: c.session,
        };
        // SAFETY: output argument.
        unsafe { new_group(rt, g, group) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    call("MPI_Group_size", abi::MPI_COMM_WORLD, |rt| {
        let n = group_ref(rt, group)?.size();
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", abi::MPI_COMM_WORLD, |rt| {
        let me = rt.ep.rank();
        let r = group_ref(rt, group)?
            .rank_of(me)
            .unwrap_or(abi::MPI_UNDEFINED);
        // SAFETY: output argument.
        unsafe { out(rank, r) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: MPI_Group,
    n: c_int,
    ranks1: *const c_int,
    group2: MPI_Group,
    ranks2: *mut c_int,
) -> c_int {
    call("MPI_Group_translate_ranks", abi::MPI_COMM_WORLD, |rt| {
        let (g1, g2) = (group_ref(rt, group1)?, group_ref(rt, group2)?);
        // SAFETY: `n` ranks at `ranks1` (MPI contract).
        let ranks = unsafe { ints(ranks1, n, "rank") }?;
        let res: Vec<c_int> = g1
            .translate(ranks.iter().map(|&r| rank_arg(r)), g2)?
            .into_iter()
            .map(rank_out)
            .collect();
        if !res.is_empty() {
            nonnull(ranks2, "ranks2")?;
            // SAFETY: `n` writable ints at `ranks2` (MPI contract).
            unsafe { std::ptr::copy_nonoverlapping(res.as_ptr(), ranks2, res.len()) };
        }
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_compare(
    group1: MPI_Group,
    group2: MPI_Group,
    result: *mut c_int,
) -> c_int {
    call("MPI_Group_compare", abi::MPI_COMM_WORLD, |rt| {
        let (g1, g2) = (group_ref(rt, group1)?, group_ref(rt, group2)?);
        let r = comparison_out(group::compare(&g1.members, &g2.members));
        // SAFETY: output argument.
        unsafe { out(result, r) }
    })
}

/// A group from two others.
unsafe fn combine(
    name: &str,
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
    op: fn(&Group, &Group) -> Group,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let g = op(group_ref(rt, group1)?, group_ref(rt, group2)?);
        // SAFETY: output argument.
        unsafe { new_group(rt, g, newgroup) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_union(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe { combine("MPI_Group_union", group1, group2, newgroup, Group::union) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_intersection(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe {
        combine(
            "MPI_Group_intersection",
            group1,
            group2,
            newgroup,
            Group::intersection,
        )
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_difference(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe {
        combine(
            "MPI_Group_difference",
            group1,
            group2,
            newgroup,
            Group::difference,
        )
    }
}

/// A subgroup of `group` from a rank list.
unsafe fn select(
    name: &str,
    group: MPI_Group,
    ranks: &dyn Fn(&Group) -> MpiResult<Vec<c_int>>,
    include: bool,
    newgroup: *mut MPI_Group,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let g = group_ref(rt, group)?;
        let ranks = ranks(g)?;
        let sub = if include {
            g.incl(&ranks)?
        } else {
            g.excl(&ranks)?
        };
        // SAFETY: output argument.
        unsafe { new_group(rt, sub, newgroup) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_incl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: `n` ranks at `ranks` (MPI contract).
    let list = |_: &Group| unsafe { ints(ranks, n, "rank") }.map(<[c_int]>::to_vec);
    // SAFETY: forwarded output argument.
    unsafe { select("MPI_Group_incl", group, &list, true, newgroup) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_excl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: `n` ranks at `ranks` (MPI contract).
    let list = |_: &Group| unsafe { ints(ranks, n, "rank") }.map(<[c_int]>::to_vec);
    // SAFETY: forwarded output argument.
    unsafe { select("MPI_Group_excl", group, &list, false, newgroup) }
}

/// The ranks of `n` `(first, last, stride)` triplets at `ranges`.
///
/// # Safety
/// `ranges` addresses `n` triplets (MPI contract).
unsafe fn ranges_of(g: &Group, n: c_int, ranges: *mut [c_int; 3]) -> MpiResult<Vec<c_int>> {
    // SAFETY: `n` triplets are `3 n` ints (the caller's promise).
    let flat = unsafe { ints(ranges.cast::<c_int>(), n.saturating_mul(3), "range") }?;
    let triplets: Vec<[c_int; 3]> = flat.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect();
    g.expand_ranges(&triplets)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_range_incl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: `n` triplets at `ranges` (MPI contract).
    let list = |g: &Group| unsafe { ranges_of(g, n, ranges) };
    // SAFETY: forwarded output argument.
    unsafe { select("MPI_Group_range_incl", group, &list, true, newgroup) }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_range_excl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: `n` triplets at `ranges` (MPI contract).
    let list = |g: &Group| unsafe { ranges_of(g, n, ranges) };
    // SAFETY: forwarded output argument.
    unsafe { select("MPI_Group_range_excl", group, &list, false, newgroup) }
}

/// Freeing `MPI_GROUP_EMPTY` is allowed and does nothing.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    call("MPI_Group_free", abi::MPI_COMM_WORLD, |rt| {
        nonnull(group, "group")?;
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *group };
        let slot = group_slot(h)?;
        group_ref(rt, h)?;
        if slot != 0 {
            rt.groups.remove(slot);
        }
        // SAFETY: as above.
        unsafe { out(group, abi::MPI_GROUP_NULL) }
    })
}
