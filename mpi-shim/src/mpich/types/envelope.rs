//! Envelopes and contents (MPI-4.1 §5.1.13): how a derived datatype was
//! made, in either width; a type built by a `_c` constructor answers only
//! the large-count form.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

/// The MPICH combiner constant of a constructor.
fn combiner_code(c: Combiner) -> c_int {
    match c {
        Combiner::Named => abi::MPI_COMBINER_NAMED,
        Combiner::Dup => abi::MPI_COMBINER_DUP,
        Combiner::Contiguous => abi::MPI_COMBINER_CONTIGUOUS,
        Combiner::Vector => abi::MPI_COMBINER_VECTOR,
        Combiner::Hvector => abi::MPI_COMBINER_HVECTOR,
        Combiner::Indexed => abi::MPI_COMBINER_INDEXED,
        Combiner::Hindexed => abi::MPI_COMBINER_HINDEXED,
        Combiner::IndexedBlock => abi::MPI_COMBINER_INDEXED_BLOCK,
        Combiner::HindexedBlock => abi::MPI_COMBINER_HINDEXED_BLOCK,
        Combiner::Struct => abi::MPI_COMBINER_STRUCT,
        Combiner::Subarray => abi::MPI_COMBINER_SUBARRAY,
        Combiner::Darray => abi::MPI_COMBINER_DARRAY,
        Combiner::Resized => abi::MPI_COMBINER_RESIZED,
        Combiner::F90Real => abi::MPI_COMBINER_F90_REAL,
        Combiner::F90Complex => abi::MPI_COMBINER_F90_COMPLEX,
        Combiner::F90Integer => abi::MPI_COMBINER_F90_INTEGER,
    }
}

/// The error of the `int` form of an envelope query on a type made by a
/// `_c` constructor: its large counts are out of that form's reach, and
/// calling it is erroneous (MPI-4.1 §5.1.13).
fn needs_large_form(e: &Envelope, name: &str) -> MpiResult<()> {
    if e.counts.is_empty() {
        Ok(())
    } else {
        Err(err(
            Class::Type,
            format!("a datatype built with large counts: {name}_c describes it"),
        ))
    }
}

/// `MPI_Type_get_envelope` in either width: `num_large_counts` is `None`
/// in the `int` form.
///
/// # Safety
/// Each pointer is null or writable (MPI contract).
unsafe fn get_envelope<N: CountOut>(
    name: &str,
    datatype: MPI_Datatype,
    num_integers: *mut N,
    num_addresses: *mut N,
    num_large_counts: Option<*mut N>,
    num_datatypes: *mut N,
    combiner: *mut c_int,
) -> c_int {
    query(name, datatype, |t| {
        let e = &t.envelope;
        if num_large_counts.is_none() {
            needs_large_form(e, "MPI_Type_get_envelope")?;
        }
        let len = |n: usize| {
            N::from_count(n as MPI_Count)
                .ok_or_else(|| err(Class::ValueTooLarge, format!("{n} constructor arguments")))
        };
        // SAFETY: output arguments.
        unsafe {
            out(num_integers, len(e.ints.len())?)?;
            out(num_addresses, len(e.addrs.len())?)?;
            if let Some(p) = num_large_counts {
                out(p, len(e.counts.len())?)?;
            }
            out(num_datatypes, len(e.types.len())?)?;
            out(combiner, combiner_code(e.combiner))
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    // SAFETY: the caller's output arguments.
    unsafe {
        get_envelope(
            "MPI_Type_get_envelope",
            datatype,
            num_integers,
            num_addresses,
            None,
            num_datatypes,
            combiner,
        )
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    datatype: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> c_int {
    // SAFETY: the caller's output arguments.
    unsafe {
        get_envelope(
            "MPI_Type_get_envelope_c",
            datatype,
            num_integers,
            num_addresses,
            Some(num_large_counts),
            num_datatypes,
            combiner,
        )
    }
}

/// Whether `max` entries hold `n`.
fn holds(max: MPI_Count, n: usize) -> bool {
    usize::try_from(max).is_ok_and(|m| m >= n)
}

/// Copy `src` into the caller's array of `max` entries.
///
/// # Safety
/// A non-null `dst` holds `max` writable entries (MPI contract).
unsafe fn fill<T: Copy>(dst: *mut T, max: MPI_Count, src: &[T], what: &str) -> MpiResult<()> {
    if holds(max, src.len()) && (src.is_empty() || !dst.is_null()) {
        // SAFETY: `dst` holds `max >= src.len()` entries.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    } else {
        Err(err(
            Class::Arg,
            format!("{what} array of {max} entries, {} needed", src.len()),
        ))
    }
}

/// `MPI_Type_get_contents` in either width: `large` (the large counts'
/// array and its length) is `None` in the `int` form.
///
/// # Safety
/// Each non-null array holds its `max_*` writable entries (MPI contract).
#[allow(clippy::too_many_arguments)]
unsafe fn get_contents<N: Count>(
    name: &str,
    datatype: MPI_Datatype,
    max_integers: N,
    max_addresses: N,
    large: Option<(N, *mut MPI_Count)>,
    max_datatypes: N,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let t = super::datatype(rt, datatype)?;
        let e = &t.envelope;
        if e.combiner == Combiner::Named {
            return Err(err(Class::Type, "a predefined datatype has no contents"));
        }
        if large.is_none() {
            needs_large_form(e, "MPI_Type_get_contents")?;
        }
        // Checked before new handles are made for the constituents.
        if !holds(max_datatypes.get(), e.types.len())
            || (datatypes.is_null() && !e.types.is_empty())
        {
            return Err(err(Class::Arg, "datatype array too small"));
        }
        let addrs: Vec<MPI_Aint> = e.addrs.iter().map(|&a| a as MPI_Aint).collect();
        // SAFETY: the caller's arrays hold `max_*` entries.
        unsafe {
            fill(integers, max_integers.get(), &e.ints, "integer")?;
            fill(addresses, max_addresses.get(), &addrs, "address")?;
            if let Some((max, counts)) = large {
                fill(counts, max.get(), &e.counts, "large count")?;
            }
        }
        // Derived constituents come back as new handles the application
        // frees (MPI-4.0 §5.1.13).
        let handles: Vec<MPI_Datatype> = e.types.iter().map(|c| handle_of(rt, c)).collect();
        // SAFETY: as above.
        unsafe { fill(datatypes, max_datatypes.get(), &handles, "datatype") }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arrays of the given lengths.
    unsafe {
        get_contents(
            "MPI_Type_get_contents",
            datatype,
            max_integers,
            max_addresses,
            None,
            max_datatypes,
            integers,
            addresses,
            datatypes,
        )
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    datatype: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    integers: *mut c_int,
    addresses: *mut MPI_Aint,
    large_counts: *mut MPI_Count,
    datatypes: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arrays of the given lengths.
    unsafe {
        get_contents(
            "MPI_Type_get_contents_c",
            datatype,
            max_integers,
            max_addresses,
            Some((max_large_counts, large_counts)),
            max_datatypes,
            integers,
            addresses,
            datatypes,
        )
    }
}
