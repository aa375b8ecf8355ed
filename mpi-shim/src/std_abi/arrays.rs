//! Entries with arrays of handles, statuses or ranks, whose length is
//! another argument (or the communicator's size or neighbourhood): each
//! array crosses through a copy of that length.

use super::*;

/// # Safety
/// `p` is null or addresses `n` handles.
unsafe fn handles_in(p: *const Handle, n: c_int) -> Vec<c_int> {
    if p.is_null() || n <= 0 {
        return Vec::new();
    }
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
        .iter()
        .map(|&h| handle_in(h))
        .collect()
}

/// # Safety
/// `p` is null or addresses `v.len()` writable handles.
unsafe fn handles_out(p: *mut Handle, v: &[c_int]) {
    if !p.is_null() {
        for (i, &h) in v.iter().enumerate() {
            // SAFETY: the caller's promise.
            unsafe { *p.add(i) = handle_out(h) };
        }
    }
}

fn ptr_or_null<T>(v: &mut [T], given: bool) -> *mut T {
    if given {
        v.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    }
}

/// Call `f` with the requests and statuses as the library's, and write
/// both back.
///
/// # Safety
/// `requests` addresses `count` handles, `statuses` is null
/// (`MPI_STATUSES_IGNORE`) or addresses `count` statuses.
unsafe fn with_requests(
    count: c_int,
    requests: *mut Handle,
    statuses: *mut MPI_Status,
    f: impl FnOnce(*mut c_int, *mut abi::MPI_Status) -> c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    let mut reqs = unsafe { handles_in(requests, count) };
    let n = reqs.len();
    let mut sts = vec![abi::MPI_Status::default(); if statuses.is_null() { 0 } else { n }];
    let sts_arg = if statuses.is_null() {
        status_ignore()
    } else {
        sts.as_mut_ptr()
    };
    let rc = f(ptr_or_null(&mut reqs, !requests.is_null()), sts_arg);
    // SAFETY: the caller's promise, for both arrays.
    unsafe {
        handles_out(requests, &reqs);
        if !statuses.is_null() {
            for (i, s) in sts.iter().enumerate() {
                *statuses.add(i) = status_from_mpich(s);
            }
        }
    }
    code_out(rc)
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut Handle,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's arrays, as the standard describes them.
    unsafe {
        with_requests(count, array_of_requests, array_of_statuses, |r, s| {
            entries::MPI_Waitall(count, r, s)
        })
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_requests(count, array_of_requests, array_of_statuses, |r, s| {
            entries::MPI_Testall(count, r, flag, s)
        })
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_requests(incount, array_of_requests, array_of_statuses, |r, s| {
            entries::MPI_Waitsome(incount, r, outcount, array_of_indices, s)
        })
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_requests(incount, array_of_requests, array_of_statuses, |r, s| {
            entries::MPI_Testsome(incount, r, outcount, array_of_indices, s)
        })
    }
}

/// `Waitany` and `Testany` write one status: the array of statuses is
/// that one (or none).
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut Handle,
    indx: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's arrays; `status` is one status or null.
    unsafe {
        let mut one = status_in(status);
        let st = if status.is_null() {
            status_ignore()
        } else {
            &mut one
        };
        let rc = with_requests(count, array_of_requests, std::ptr::null_mut(), |r, _| {
            entries::MPI_Waitany(count, r, indx, st)
        });
        status_out(status, &one);
        rc
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut Handle,
    indx: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        let mut one = status_in(status);
        let st = if status.is_null() {
            status_ignore()
        } else {
            &mut one
        };
        let rc = with_requests(count, array_of_requests, std::ptr::null_mut(), |r, _| {
            entries::MPI_Testany(count, r, indx, flag, st)
        });
        status_out(status, &one);
        rc
    }
}

/// Call `f` with the requests as the library's (a copy, which the
/// `MPI_Request_get_status` family only reads) and room for `count`
/// statuses; then write back the first `written(rc)` of them, the ones the
/// call filled (`rc` is the library's error code).
///
/// # Safety
/// As [`with_requests`].
unsafe fn query_requests(
    count: c_int,
    requests: *const Handle,
    statuses: *mut MPI_Status,
    f: impl FnOnce(*const c_int, *mut abi::MPI_Status) -> c_int,
    written: impl FnOnce(c_int) -> usize,
) -> c_int {
    // SAFETY: the caller's promise.
    let reqs = unsafe { handles_in(requests, count) };
    let reqs_arg = if requests.is_null() {
        std::ptr::null()
    } else {
        reqs.as_ptr()
    };
    let mut sts = vec![abi::MPI_Status::default(); if statuses.is_null() { 0 } else { reqs.len() }];
    let sts_arg = if statuses.is_null() {
        status_ignore()
    } else {
        sts.as_mut_ptr()
    };
    let rc = f(reqs_arg, sts_arg);
    if !statuses.is_null() {
        for (i, s) in sts.iter().enumerate().take(written(rc)) {
            // SAFETY: the caller's array of `count` statuses.
            unsafe { *statuses.add(i) = status_from_mpich(s) };
        }
    }
    code_out(rc)
}

/// Whether a call that completes requests reported their statuses: it
/// succeeded, or failed with some of them (`MPI_ERR_IN_STATUS`).
fn statuses_reported(rc: c_int) -> bool {
    rc == abi::MPI_SUCCESS || rc == abi::MPI_ERR_IN_STATUS
}

/// # Safety
/// `p` is null or points to an `int` the call wrote.
unsafe fn written_int(p: *const c_int) -> Option<c_int> {
    // SAFETY: the caller's promise.
    unsafe { p.as_ref() }.copied()
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    array_of_requests: *const Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's arrays of `count` entries, and its flag, which
    // the call writes when it reports the statuses.
    unsafe {
        query_requests(
            count,
            array_of_requests,
            array_of_statuses,
            |r, s| entries::MPI_Request_get_status_all(count, r, flag, s),
            |rc| {
                let all = statuses_reported(rc) && written_int(flag) == Some(1);
                if all { count.max(0) as usize } else { 0 }
            },
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    array_of_requests: *const Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's arrays of `incount` entries, and its outcount,
    // which the call writes when it reports the statuses.
    unsafe {
        query_requests(
            incount,
            array_of_requests,
            array_of_statuses,
            |r, s| entries::MPI_Request_get_status_some(incount, r, outcount, array_of_indices, s),
            |rc| match written_int(outcount) {
                Some(n) if statuses_reported(rc) && n > 0 => n as usize,
                _ => 0,
            },
        )
    }
}

/// One status, as for `Testany`.
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    array_of_requests: *const Handle,
    indx: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of `count` requests; `status` is one
    // status or null.
    unsafe {
        let mut one = status_in(status);
        let st = if status.is_null() {
            status_ignore()
        } else {
            &mut one
        };
        let rc = query_requests(
            count,
            array_of_requests,
            std::ptr::null_mut(),
            |r, _| entries::MPI_Request_get_status_any(count, r, indx, flag, st),
            |_| 0,
        );
        status_out(status, &one);
        rc
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Startall(count: c_int, array_of_requests: *mut Handle) -> c_int {
    // SAFETY: the caller's array of `count` requests.
    unsafe {
        with_requests(count, array_of_requests, std::ptr::null_mut(), |r, _| {
            entries::MPI_Startall(count, r)
        })
    }
}

/// Declares a struct constructor of the given count type: the array of
/// datatypes crosses as a copy of `count` handles.
macro_rules! type_struct {
    ($name:ident, $count:ty, $displ:ty) => {
        #[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
        pub unsafe extern "C" fn $name(
            count: $count,
            array_of_blocklengths: *const $count,
            array_of_displacements: *const $displ,
            array_of_types: *const Handle,
            newtype: *mut Handle,
        ) -> c_int {
            // SAFETY: the caller's arrays of `count` entries and output
            // handle.
            unsafe {
                let n = c_int::try_from(count).unwrap_or(0);
                let types = handles_in(array_of_types, n);
                let types_arg = if array_of_types.is_null() {
                    std::ptr::null()
                } else {
                    types.as_ptr()
                };
                let mut made = handle_ptr_in(newtype);
                let out = if newtype.is_null() {
                    std::ptr::null_mut()
                } else {
                    &mut made
                };
                let rc = entries::$name(
                    count,
                    array_of_blocklengths as _,
                    array_of_displacements as _,
                    types_arg as _,
                    out,
                );
                handle_ptr_out(newtype, made);
                code_out(rc)
            }
        }
    };
}

type_struct!(MPI_Type_create_struct, c_int, MPI_Aint);
type_struct!(MPI_Type_create_struct_c, MPI_Count, MPI_Count);

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: Handle,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut Handle,
) -> c_int {
    // SAFETY: the caller's output arrays of the given lengths.
    unsafe {
        let mut types = vec![0; max_datatypes.max(0) as usize];
        let types_arg = ptr_or_null(&mut types, !array_of_datatypes.is_null());
        let rc = entries::MPI_Type_get_contents(
            handle_in(datatype),
            max_integers,
            max_addresses,
            max_datatypes,
            array_of_integers,
            array_of_addresses as _,
            types_arg,
        );
        if rc == abi::MPI_SUCCESS {
            handles_out(array_of_datatypes, &types);
            constants_out(handle_in(datatype), array_of_integers, max_integers.into());
        }
        code_out(rc)
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    datatype: Handle,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_large_counts: *mut MPI_Count,
    array_of_datatypes: *mut Handle,
) -> c_int {
    // SAFETY: the caller's output arrays of the given lengths.
    unsafe {
        // As many handles as the type has constituents, at most: the
        // caller's array may be longer than that.
        let mut nd: MPI_Count = 0;
        let (mut ni, mut na, mut nl, mut combiner) = (0, 0, 0, 0);
        let datatype = handle_in(datatype);
        entries::MPI_Type_get_envelope_c(
            datatype,
            &mut ni,
            &mut na,
            &mut nl,
            &mut nd,
            &mut combiner,
        );
        let len = usize::try_from(max_datatypes.min(nd)).unwrap_or(0);
        let mut types = vec![0; len];
        let types_arg = ptr_or_null(&mut types, !array_of_datatypes.is_null());
        let rc = entries::MPI_Type_get_contents_c(
            datatype,
            max_integers,
            max_addresses,
            max_large_counts,
            max_datatypes,
            array_of_integers,
            array_of_addresses as _,
            array_of_large_counts as _,
            types_arg,
        );
        if rc == abi::MPI_SUCCESS {
            handles_out(array_of_datatypes, &types);
            constants_out(datatype, array_of_integers, max_integers);
        }
        code_out(rc)
    }
}

/// Declares a distributed-array constructor whose global sizes are of
/// the given type: the distributions and their arguments cross as
/// copies of `ndims` translated constants.
macro_rules! type_darray {
    ($name:ident, $count:ty) => {
        #[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
        pub unsafe extern "C" fn $name(
            size: c_int,
            rank: c_int,
            ndims: c_int,
            array_of_gsizes: *const $count,
            array_of_distribs: *const c_int,
            array_of_dargs: *const c_int,
            array_of_psizes: *const c_int,
            order: c_int,
            oldtype: Handle,
            newtype: *mut Handle,
        ) -> c_int {
            // SAFETY: the caller's arrays of `ndims` integers and output
            // handle.
            unsafe {
                let copy = |p: *const c_int| -> Vec<c_int> {
                    if p.is_null() {
                        Vec::new()
                    } else {
                        (0..ndims.max(0) as usize)
                            .map(|i| distribute_in(*p.add(i)))
                            .collect()
                    }
                };
                let (distribs, dargs) = (copy(array_of_distribs), copy(array_of_dargs));
                let arg =
                    |v: &Vec<c_int>, p: *const c_int| if p.is_null() { p } else { v.as_ptr() };
                let mut made = handle_ptr_in(newtype);
                let out = if newtype.is_null() {
                    std::ptr::null_mut()
                } else {
                    &mut made
                };
                let rc = entries::$name(
                    size,
                    rank,
                    ndims,
                    array_of_gsizes as _,
                    arg(&distribs, array_of_distribs) as _,
                    arg(&dargs, array_of_dargs) as _,
                    array_of_psizes as _,
                    order_in(order),
                    handle_in(oldtype),
                    out,
                );
                handle_ptr_out(newtype, made);
                code_out(rc)
            }
        }
    };
}

type_darray!(MPI_Type_create_darray, c_int);
type_darray!(MPI_Type_create_darray_c, MPI_Count);

/// The constants among a subarray's or darray's integers (the order, the
/// distributions and default arguments) as the standard ABI's. A type
/// made by a `_c` constructor keeps its sizes among the large counts, so
/// its integers are fewer (MPI-4.1 §5.1.13).
///
/// # Safety
/// `ints` addresses `max` integers `MPI_Type_get_contents` filled.
unsafe fn constants_out(datatype: c_int, ints: *mut c_int, max: MPI_Count) {
    let (mut ni, mut na, mut nl, mut nd): (MPI_Count, MPI_Count, MPI_Count, MPI_Count) =
        (0, 0, 0, 0);
    let mut combiner = 0;
    // SAFETY: live locals; the caller's array of `max` integers.
    unsafe {
        entries::MPI_Type_get_envelope_c(
            datatype,
            &mut ni,
            &mut na,
            &mut nl,
            &mut nd,
            &mut combiner,
        );
        if ints.is_null() || ni > max || ni < 1 {
            return;
        }
        let large = nl > 0;
        let at = |i: c_int| ints.add(i as usize);
        if combiner == abi::MPI_COMBINER_SUBARRAY {
            // ndims, [sizes, subsizes, starts,] order
            let n = *at(0);
            let order = if large { 1 } else { 3 * n + 1 };
            *at(order) = order_out(*at(order));
        } else if combiner == abi::MPI_COMBINER_DARRAY {
            // size, rank, ndims, [gsizes,] distribs, dargs, psizes, order
            let n = *at(2);
            let distribs = if large { 3 } else { 3 + n };
            for i in 0..2 * n {
                *at(distribs + i) = distribute_out(*at(distribs + i));
            }
            *at(distribs + 3 * n) = order_out(*at(distribs + 3 * n));
        }
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: Handle,
    n: c_int,
    ranks1: *const c_int,
    group2: Handle,
    ranks2: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arrays of `n` ranks.
    unsafe {
        let len = if ranks1.is_null() {
            0
        } else {
            n.max(0) as usize
        };
        let input: Vec<c_int> = (0..len).map(|i| rank_in(*ranks1.add(i))).collect();
        let rc = entries::MPI_Group_translate_ranks(
            handle_in(group1),
            n,
            if ranks1.is_null() {
                ranks1
            } else {
                input.as_ptr()
            } as _,
            handle_in(group2),
            ranks2,
        );
        if rc == abi::MPI_SUCCESS && !ranks2.is_null() {
            for i in 0..n.max(0) as usize {
                *ranks2.add(i) = rank_out(*ranks2.add(i));
            }
        }
        code_out(rc)
    }
}

/// The number of processes an `alltoallw` exchanges with: the group's
/// size (the remote group's on an intercommunicator), or the (in, out)
/// neighbours of a topology.
fn peers(comm: c_int, neighbors: bool) -> (c_int, c_int) {
    let mut size = 0;
    // SAFETY: live local outputs; an invalid communicator leaves them 0
    // and the call itself reports it.
    unsafe {
        if !neighbors {
            let mut inter = 0;
            entries::MPI_Comm_test_inter(comm, &mut inter);
            if inter != 0 {
                entries::MPI_Comm_remote_size(comm, &mut size);
            } else {
                entries::MPI_Comm_size(comm, &mut size);
            }
            return (size, size);
        }
        let mut kind = 0;
        entries::MPI_Topo_test(comm, &mut kind);
        if kind == abi::MPI_DIST_GRAPH {
            let (mut indeg, mut outdeg, mut weighted) = (0, 0, 0);
            entries::MPI_Dist_graph_neighbors_count(comm, &mut indeg, &mut outdeg, &mut weighted);
            (indeg, outdeg)
        } else if kind == abi::MPI_CART {
            entries::MPI_Cartdim_get(comm, &mut size);
            (2 * size, 2 * size)
        } else if kind == abi::MPI_GRAPH {
            let mut rank = 0;
            entries::MPI_Comm_rank(comm, &mut rank);
            entries::MPI_Graph_neighbors_count(comm, rank, &mut size);
            (size, size)
        } else {
            (0, 0)
        }
    }
}

/// Declares an `alltoallw` entry (counts and displacements of the given
/// types; persistent ones take an info): the two arrays of datatypes
/// cross as copies as long as the peers they describe.
macro_rules! alltoallw {
    ($name:ident, $neighbors:expr, $count:ty, $displ:ty $(, $info:ident)? $(; $req:ident)?) => {
        #[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
        pub unsafe extern "C" fn $name(sendbuf: *const c_void, sendcounts: *const $count, sdispls: *const $displ, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const $count, rdispls: *const $displ, recvtypes: *const Handle, comm: Handle $(, $info: Handle)? $(, $req: *mut Handle)?) -> c_int {
            let comm = handle_in(comm);
            let (inn, out) = peers(comm, $neighbors);
            // SAFETY: the caller's arrays, one entry per peer.
            unsafe {
                let st = handles_in(sendtypes, out);
                let rt = handles_in(recvtypes, inn);
                let st_arg = if sendtypes.is_null() { std::ptr::null() } else { st.as_ptr() };
                let rt_arg = if recvtypes.is_null() { std::ptr::null() } else { rt.as_ptr() };
                $(let mut r = handle_ptr_in($req);
                let r_arg: *mut c_int = if $req.is_null() { std::ptr::null_mut() } else { &mut r };)?
                let rc = entries::$name(in_place_in(sendbuf), sendcounts as _, sdispls as _, st_arg as _, recvbuf, recvcounts as _, rdispls as _, rt_arg as _, comm $(, handle_in($info))? $(, { let _ = $req; r_arg })?);
                $(handle_ptr_out($req, r);)?
                code_out(rc)
            }
        }
    };
}

// Counts and displacements as their Rust types (`MPI_Count` is `i64`,
// `MPI_Aint` `isize`): a macro line names only the functions it defines.
alltoallw!(MPI_Alltoallw, false, c_int, c_int);
alltoallw!(MPI_Ialltoallw, false, c_int, c_int; request);
alltoallw!(MPI_Alltoallw_init, false, c_int, c_int, info; request);
alltoallw!(MPI_Alltoallw_c, false, i64, isize);
alltoallw!(MPI_Ialltoallw_c, false, i64, isize; request);
alltoallw!(MPI_Alltoallw_init_c, false, i64, isize, info; request);
alltoallw!(MPI_Neighbor_alltoallw, true, c_int, isize);
alltoallw!(MPI_Ineighbor_alltoallw, true, c_int, isize; request);
alltoallw!(MPI_Neighbor_alltoallw_init, true, c_int, isize, info; request);
alltoallw!(MPI_Neighbor_alltoallw_c, true, i64, isize);
alltoallw!(MPI_Ineighbor_alltoallw_c, true, i64, isize; request);
alltoallw!(MPI_Neighbor_alltoallw_init_c, true, i64, isize, info; request);

/// Translate the error codes a failed spawn wrote at its root (one per
/// process asked for): the library writes codes only there, or zeros.
///
/// # Safety
/// `errcodes` is null or addresses `n` ints.
unsafe fn spawn_codes_out(errcodes: *mut c_int, n: c_int, rc: c_int, root: c_int, comm: c_int) {
    if rc == 0 || errcodes.is_null() {
        return;
    }
    let mut rank = -1;
    // SAFETY: `rank` is a local int the call writes.
    if unsafe { entries::MPI_Comm_rank(comm, &mut rank) } != 0 || rank != root {
        return;
    }
    for i in 0..n.max(0) as usize {
        // SAFETY: the caller's promise.
        unsafe { *errcodes.add(i) = code_out(*errcodes.add(i)) };
    }
}

/// Run a spawn entry `f` with the library's intercommunicator output,
/// then write it back as a standard handle, translate the root's error
/// codes (`asked` of them) and the return code.
///
/// # Safety
/// `intercomm` is null or writable; `errcodes` as for [`spawn_codes_out`].
unsafe fn spawn_entry(
    intercomm: *mut Handle,
    errcodes: *mut c_int,
    asked: c_int,
    (root, comm): (c_int, c_int),
    f: impl FnOnce(*mut c_int) -> c_int,
) -> c_int {
    let mut inter = 0;
    let rc = f(if intercomm.is_null() {
        std::ptr::null_mut()
    } else {
        &mut inter
    });
    // SAFETY: the caller's promises.
    unsafe {
        spawn_codes_out(errcodes, asked, rc, root, comm);
        handle_ptr_out(intercomm, inter);
    }
    code_out(rc)
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let (root, comm) = (rank_in(root), handle_in(comm));
    // SAFETY: the caller's arguments, handles translated.
    unsafe {
        spawn_entry(
            intercomm,
            array_of_errcodes,
            maxprocs,
            (root, comm),
            |inter| {
                entries::MPI_Comm_spawn(
                    command,
                    argv,
                    maxprocs,
                    handle_in(info),
                    root,
                    comm,
                    inter,
                    array_of_errcodes,
                )
            },
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let (root, comm) = (rank_in(root), handle_in(comm));
    // SAFETY: `count` infos (MPI contract, at the root).
    let infos = unsafe { handles_in(array_of_info, count) };
    let asked = if array_of_maxprocs.is_null() || count <= 0 {
        0
    } else {
        // SAFETY: `count` entries (MPI contract).
        unsafe { std::slice::from_raw_parts(array_of_maxprocs, count as usize) }
            .iter()
            .map(|&n| n.max(0))
            .sum()
    };
    let info_ptr = if array_of_info.is_null() {
        std::ptr::null()
    } else {
        infos.as_ptr()
    };
    // SAFETY: the caller's arguments, handles translated.
    unsafe {
        spawn_entry(intercomm, array_of_errcodes, asked, (root, comm), |inter| {
            entries::MPI_Comm_spawn_multiple(
                count,
                array_of_commands,
                array_of_argv,
                array_of_maxprocs,
                info_ptr,
                root,
                comm,
                inter,
                array_of_errcodes,
            )
        })
    }
}
