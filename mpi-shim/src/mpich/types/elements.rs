//! The elements a status counts (MPI-4.0 §5.1.11, §12.3): `MPI_Get_elements`
//! and `MPI_Status_set_elements`, and their `_c` and `_x` forms.

use super::*;

/// The basic elements `status` counts in `datatype`; `None` for
/// `MPI_UNDEFINED`.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or readable (MPI contract).
unsafe fn elements(
    rt: &Runtime,
    status: *const MPI_Status,
    dt: MPI_Datatype,
) -> MpiResult<Option<u64>> {
    if status.is_null() || abi::is_status_ignore(status) {
        return Err(err(Class::Arg, "no status"));
    }
    let t = super::datatype(rt, dt)?;
    // SAFETY: non-null status (MPI contract).
    let bytes = status_in(unsafe { &*status }).bytes;
    // MPICH counts its builtin types (not the pair types, which it
    // builds as structs) only in whole elements.
    let builtin = t.predefined.is_some() && abi::direct_index(Kind::Datatype, dt).is_none();
    if builtin && t.size > 0 && !bytes.is_multiple_of(t.size as u64) {
        return Ok(None);
    }
    Ok(usize::try_from(bytes)
        .ok()
        .and_then(|b| t.elements_in(b))
        .map(|n| n as u64))
}

large_count! {
    fn MPI_Get_elements / MPI_Get_elements_c(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut C,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            // SAFETY: the caller's status.
            let n = unsafe { elements(rt, status, datatype)? }
                .and_then(|n| MPI_Count::try_from(n).ok())
                .and_then(C::from_count)
                .unwrap_or(C::UNDEFINED);
            // SAFETY: output argument.
            unsafe { out(count, n) }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> c_int {
    call("MPI_Get_elements_x", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: the caller's status.
        let n = unsafe { elements(rt, status, datatype)? }
            .map_or(MPI_Count::from(abi::MPI_UNDEFINED), |n| n as MPI_Count);
        // SAFETY: output argument.
        unsafe { out(count, n) }
    })
}

/// Make `status` count `n` basic elements of `dt` (its cancelled flag
/// kept).
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or writable (MPI contract).
unsafe fn set_elements(
    rt: &Runtime,
    status: *mut MPI_Status,
    dt: MPI_Datatype,
    n: i64,
) -> MpiResult<()> {
    if status.is_null() || abi::is_status_ignore(status) {
        return Err(err(Class::Arg, "no status"));
    }
    let n = usize::try_from(n).map_err(|_| err(Class::Count, format!("negative count {n}")))?;
    let t = super::datatype(rt, dt)?;
    let bytes = t
        .bytes_of_elements(n)
        .ok_or_else(|| err(Class::Arg, format!("{n} elements of a type without any")))?;
    // SAFETY: non-null, writable status (MPI contract).
    let st = unsafe { &mut *status };
    *st = status_out(&Status {
        bytes: bytes as u64,
        ..status_in(st)
    });
    Ok(())
}

large_count! {
    fn MPI_Status_set_elements / MPI_Status_set_elements_c(
        status: *mut MPI_Status,
        datatype: MPI_Datatype,
        count: C,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            check_status(status)?;
            // SAFETY: the caller's status.
            unsafe { set_elements(rt, status, datatype, count.get()) }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: MPI_Count,
) -> c_int {
    call("MPI_Status_set_elements_x", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: the caller's status.
        unsafe { set_elements(rt, status, datatype, count) }
    })
}
