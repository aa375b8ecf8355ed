//! Memory allocation (MPI-4.0 §9.2): `MPI_Alloc_mem` hands out blocks of
//! the engine's shared heap ([`shm_engine::heap`]), which every process of
//! the node can map, so that large messages from and into such memory are
//! copied by whichever local process is free (receiver, sender or a
//! stealer) with plain loads and stores. `MPI_Free_mem` returns them.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ptr::NonNull;

use super::*;
use crate::abi::{MPI_Aint, MPI_Info};
use crate::core::info;
use shm_engine::heap::{self, HeapError};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)",
    "int MPI_Free_mem(void *base)",
];

/// Whether `h` names an info object (or is `MPI_INFO_NULL`).
fn check_info(h: MPI_Info) -> MpiResult<()> {
    let known = h == abi::MPI_INFO_NULL
        || h == abi::MPI_INFO_ENV
        || abi::direct_index(Kind::Info, h).is_some_and(|i| info::table().get(i).is_some());
    if known {
        Ok(())
    } else {
        Err(err(Class::Info, format!("invalid info {h:#x}")))
    }
}

/// MPI-4.0 §9.2: `size` bytes (at least one block, so every successful
/// call returns a distinct address) from the shared heap, aligned to 64
/// bytes. `info` is checked and otherwise ignored. `MPI_ERR_NO_MEM` when
/// the heap cannot grow.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Alloc_mem(
    size: MPI_Aint,
    info: MPI_Info,
    baseptr: *mut c_void,
) -> c_int {
    call("MPI_Alloc_mem", abi::MPI_COMM_WORLD, |_| {
        let Ok(bytes) = usize::try_from(size) else {
            return Err(err(Class::Size, format!("negative size {size}")));
        };
        check_info(info)?;
        if baseptr.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        let p = heap::alloc(bytes)
            .map_err(|e| err(Class::NoMem, format!("cannot allocate {size} bytes: {e}")))?;
        // SAFETY: `baseptr` is the non-null address of a `void *` (MPI
        // contract: C passes `&ptr` as `void *`).
        unsafe { out(baseptr.cast::<*mut c_void>(), p.as_ptr().cast()) }
    })
}

/// MPI-4.0 §9.2: return memory from `MPI_Alloc_mem`. A null `base` does
/// nothing; any other address that is not a live block from
/// `MPI_Alloc_mem` is `MPI_ERR_BASE` and changes nothing.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    call("MPI_Free_mem", abi::MPI_COMM_WORLD, |_| {
        let Some(block) = NonNull::new(base.cast::<u8>()) else {
            return Ok(());
        };
        // SAFETY: the application no longer uses the block (MPI contract);
        // a pointer that is not a live block is rejected by the heap.
        unsafe { heap::free(block) }.map_err(|e| match e {
            HeapError::NotAllocated { .. } => err(
                Class::Base,
                format!("{base:p} was not allocated by MPI_Alloc_mem or was already freed"),
            ),
            other => err(Class::Other, other.to_string()),
        })
    })
}
