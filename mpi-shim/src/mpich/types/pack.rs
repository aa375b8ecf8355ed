//! Packing and unpacking (MPI-4.0 §5.2, §5.3): `MPI_Pack`, `MPI_Unpack`,
//! their sizes, and the `external32` forms, each with its `_c` form.

use super::*;

/// Read the caller's position, check that `len` bytes from it fit in a
/// buffer of `size` bytes; returns the position.
///
/// # Safety
/// A non-null `position` is readable (MPI contract).
unsafe fn position_in<T: Copy + Into<i64>>(
    position: *const T,
    size: i64,
    len: usize,
    class: Class,
) -> MpiResult<usize> {
    if position.is_null() {
        return Err(err(Class::Arg, "null position"));
    }
    // SAFETY: non-null, readable (the caller's promise).
    let pos: i64 = unsafe { *position }.into();
    let end = i64::try_from(len).ok().and_then(|l| l.checked_add(pos));
    match end {
        Some(end) if pos >= 0 && end <= size => Ok(pos as usize),
        _ => Err(err(
            class,
            format!("{len} bytes at position {pos} overrun a buffer of {size} bytes"),
        )),
    }
}

/// The position after `len` bytes from `pos`, as the caller's position
/// argument holds it (`position_in` checked that it is within a buffer
/// whose size that type holds).
fn advanced<P: CountOut>(pos: usize, len: usize) -> MpiResult<P> {
    MPI_Count::try_from(pos + len)
        .ok()
        .and_then(P::from_count)
        .ok_or_else(|| err(Class::Arg, "position overflows"))
}

/// The caller's packing buffer: `len` bytes at `base + pos`, as a raw
/// slice (checked for null when it must hold data).
fn packing_buffer(base: *const c_void, pos: usize, len: usize) -> MpiResult<*mut [u8]> {
    if len == 0 {
        return Ok(std::ptr::slice_from_raw_parts_mut(
            std::ptr::NonNull::dangling().as_ptr(),
            0,
        ));
    }
    if base.is_null() {
        return Err(err(Class::Buffer, "null packing buffer"));
    }
    let start = base.cast::<u8>().cast_mut().wrapping_add(pos);
    Ok(std::ptr::slice_from_raw_parts_mut(start, len))
}

/// Check that the data representation is "external32".
///
/// # Safety
/// `datarep` is null or a NUL-terminated string (MPI contract).
unsafe fn check_datarep(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return Err(err(Class::Arg, "null data representation"));
    }
    // SAFETY: a NUL-terminated string (MPI contract).
    let rep = unsafe { CStr::from_ptr(datarep) };
    if rep.to_bytes() == b"external32" {
        Ok(())
    } else {
        Err(err(
            Class::Arg,
            format!("unsupported data representation {rep:?}"),
        ))
    }
}

large_count! {
    fn MPI_Pack / MPI_Pack_c(
        inbuf: *const c_void,
        incount: C,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: C,
        position: *mut C,
        comm: MPI_Comm,
    ) {
        call(NAME, comm, |rt| {
            rt.comm(comm_slot(comm)?)?;
            // SAFETY: forwarded from the caller.
            let ub = unsafe { user_buf(rt, inbuf, incount.get(), datatype)? };
            // SAFETY: `position` is the caller's in-out argument and
            // `outbuf` holds `outsize` bytes (MPI contract), of which
            // `position_in` checked that `pos + len` fit; nothing else
            // refers to them.
            unsafe {
                let pos = position_in(position, outsize.get(), ub.len, Class::Truncate)?;
                let end: C = advanced(pos, ub.len)?;
                let dst = &mut *packing_buffer(outbuf, pos, ub.len)?;
                ub.dt.pack(ub.ptr, ub.count, dst);
                *position = end;
            }
            Ok(())
        })
    }
}

large_count! {
    fn MPI_Unpack / MPI_Unpack_c(
        inbuf: *const c_void,
        insize: C,
        position: *mut C,
        outbuf: *mut c_void,
        outcount: C,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
    ) {
        call(NAME, comm, |rt| {
            rt.comm(comm_slot(comm)?)?;
            // SAFETY: forwarded from the caller.
            let ub = unsafe { user_buf(rt, outbuf, outcount.get(), datatype)? };
            // SAFETY: `position` is the caller's in-out argument and
            // `inbuf` holds `insize` readable bytes (MPI contract), of
            // which `position_in` checked that `pos + len` fit.
            unsafe {
                let pos = position_in(position, insize.get(), ub.len, Class::Truncate)?;
                let end: C = advanced(pos, ub.len)?;
                let src = &*packing_buffer(inbuf, pos, ub.len)?;
                ub.unpack(src);
                *position = end;
            }
            Ok(())
        })
    }
}

large_count! {
    fn MPI_Pack_size / MPI_Pack_size_c(
        incount: C,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
        size: *mut C,
    ) {
        call(NAME, comm, |rt| {
            rt.comm(comm_slot(comm)?)?;
            let t = super::datatype(rt, datatype)?;
            let n = t
                .bytes(count(incount.get())?)
                .ok_or_else(|| err(Class::Count, "packed size overflows"))?;
            // The `int` form cannot report a size beyond an `int`
            // (MPI-4.1 §5.2): its `_c` form can.
            let n = MPI_Count::try_from(n)
                .ok()
                .and_then(C::from_count)
                .ok_or_else(|| {
                    err(
                        Class::ValueTooLarge,
                        format!("a packed size of {n} bytes does not fit the output argument"),
                    )
                })?;
            // SAFETY: output argument.
            unsafe { out(size, n) }
        })
    }
}

// The `external32` forms keep positions and sizes in `MPI_Aint` in the
// `int` form, `MPI_Count` in the `_c` one: one 64-bit integer here.
large_count! {
    fn MPI_Pack_external / MPI_Pack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: C,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: MPI_Aint,
        position: *mut MPI_Aint,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            // SAFETY: the caller's string.
            unsafe { check_datarep(datarep)? };
            // SAFETY: forwarded from the caller.
            let ub = unsafe { user_buf(rt, inbuf, incount.get(), datatype)? };
            let len = ub
                .dt
                .external_size(ub.count)
                .ok_or_else(|| err(Class::Count, "packed size overflows"))?;
            // SAFETY: the send buffer is readable (MPI contract).
            let native = unsafe { ub.data() };
            // SAFETY: `position` is the caller's in-out argument and
            // `outbuf` holds `outsize` bytes (MPI contract), of which
            // `position_in` checked that `pos + len` fit; nothing else
            // refers to them.
            unsafe {
                let pos = position_in(position, outsize, len, Class::Truncate)?;
                let end: MPI_Aint = advanced(pos, len)?;
                let dst = &mut *packing_buffer(outbuf, pos, len)?;
                ub.dt.to_external(&native, ub.count, dst)?;
                *position = end;
            }
            Ok(())
        })
    }
}

large_count! {
    fn MPI_Unpack_external / MPI_Unpack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: MPI_Aint,
        position: *mut MPI_Aint,
        outbuf: *mut c_void,
        outcount: C,
        datatype: MPI_Datatype,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            // SAFETY: the caller's string.
            unsafe { check_datarep(datarep)? };
            // SAFETY: forwarded from the caller.
            let ub = unsafe { user_buf(rt, outbuf, outcount.get(), datatype)? };
            let len = ub
                .dt
                .external_size(ub.count)
                .ok_or_else(|| err(Class::Count, "packed size overflows"))?;
            let mut native = vec![0; ub.len];
            // SAFETY: `position` is the caller's in-out argument and
            // `inbuf` holds `insize` readable bytes (MPI contract), of
            // which `position_in` checked that `pos + len` fit.
            unsafe {
                let pos = position_in(position, insize, len, Class::Truncate)?;
                let end: MPI_Aint = advanced(pos, len)?;
                let src = &*packing_buffer(inbuf, pos, len)?;
                ub.dt.from_external(src, ub.count, &mut native);
                ub.unpack(&native);
                *position = end;
            }
            Ok(())
        })
    }
}

large_count! {
    fn MPI_Pack_external_size / MPI_Pack_external_size_c(
        datarep: *const c_char,
        incount: C,
        datatype: MPI_Datatype,
        size: *mut MPI_Aint,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            // SAFETY: the caller's string.
            unsafe { check_datarep(datarep)? };
            let t = super::datatype(rt, datatype)?;
            let n = t
                .external_size(count(incount.get())?)
                .and_then(|n| MPI_Aint::try_from(n).ok())
                .ok_or_else(|| err(Class::Count, "packed size overflows"))?;
            // SAFETY: output argument.
            unsafe { out(size, n) }
        })
    }
}
