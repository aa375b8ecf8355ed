//! The standard ABI's own functions: the ABI queries (`MPI_Abi_*`,
//! MPI-5.0 §20.3), the conversions of handles to and from `int`
//! (`MPI_Comm_toint`...: the integer is the library's own handle, which is
//! also what a Fortran binding would hold), and the extensions that take
//! a status by value.

use std::sync::Mutex;

use super::*;

/// The version of the standard ABI this layer implements.
const ABI_VERSION: (c_int, c_int) = (1, 0);

/// `EXTRA_PROTOTYPES`: the C prototypes of this module's functions, for the
/// header.
pub const PROTOTYPES: &[&str] = &[
    "int MPI_Abi_get_version(int *abi_major, int *abi_minor)",
    "int MPI_Abi_get_info(MPI_Info *info)",
    "int MPI_Abi_get_fortran_info(MPI_Info *info)",
    "int MPI_Abi_set_fortran_info(MPI_Info info)",
    "int MPI_Abi_get_fortran_booleans(int logical_size, void *logical_true, void *logical_false, int *is_set)",
    "int MPI_Abi_set_fortran_booleans(int logical_size, void *logical_true, void *logical_false)",
    "MPI_Comm MPI_Comm_fromint(int comm)",
    "int MPI_Comm_toint(MPI_Comm comm)",
    "MPI_Errhandler MPI_Errhandler_fromint(int errhandler)",
    "int MPI_Errhandler_toint(MPI_Errhandler errhandler)",
    "MPI_File MPI_File_fromint(int file)",
    "int MPI_File_toint(MPI_File file)",
    "MPI_Group MPI_Group_fromint(int group)",
    "int MPI_Group_toint(MPI_Group group)",
    "MPI_Info MPI_Info_fromint(int info)",
    "int MPI_Info_toint(MPI_Info info)",
    "MPI_Message MPI_Message_fromint(int message)",
    "int MPI_Message_toint(MPI_Message message)",
    "MPI_Op MPI_Op_fromint(int op)",
    "int MPI_Op_toint(MPI_Op op)",
    "MPI_Request MPI_Request_fromint(int request)",
    "int MPI_Request_toint(MPI_Request request)",
    "MPI_Session MPI_Session_fromint(int session)",
    "int MPI_Session_toint(MPI_Session session)",
    "MPI_Datatype MPI_Type_fromint(int datatype)",
    "int MPI_Type_toint(MPI_Datatype datatype)",
    "MPI_Win MPI_Win_fromint(int win)",
    "int MPI_Win_toint(MPI_Win win)",
];

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_get_version(
    abi_major: *mut c_int,
    abi_minor: *mut c_int,
) -> c_int {
    if abi_major.is_null() || abi_minor.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    // SAFETY: non-null outputs.
    unsafe { (*abi_major, *abi_minor) = ABI_VERSION };
    abi::MPI_SUCCESS
}

/// A new info object holding `pairs`.
///
/// # Safety
/// `info` is null or writable.
unsafe fn info_with(info: *mut Handle, pairs: &[(&str, String)]) -> c_int {
    if info.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    let mut made = 0;
    // SAFETY: live locals and NUL-terminated strings.
    unsafe {
        let rc = entries::MPI_Info_create(&mut made);
        if rc != abi::MPI_SUCCESS {
            return code_out(rc);
        }
        for (key, value) in pairs {
            let key = std::ffi::CString::new(*key).unwrap();
            let value = std::ffi::CString::new(value.as_str()).unwrap();
            entries::MPI_Info_set(made, key.as_ptr(), value.as_ptr());
        }
        *info = handle_out(made);
    }
    abi::MPI_SUCCESS
}

/// The sizes of the ABI's integer types, as the standard's keys name them.
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_get_info(info: *mut Handle) -> c_int {
    let pairs = [
        ("mpi_aint_size", size_of::<MPI_Aint>().to_string()),
        ("mpi_count_size", size_of::<MPI_Count>().to_string()),
        ("mpi_offset_size", size_of::<MPI_Offset>().to_string()),
    ];
    // SAFETY: the caller's output.
    unsafe { info_with(info, &pairs) }
}

/// The Fortran facts an application or binding set with
/// `MPI_Abi_set_fortran_info` (the library has no Fortran binding of its
/// own, so there are none before).
static FORTRAN_INFO: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// The size of a Fortran `LOGICAL` and its true and false values.
type Booleans = Option<(c_int, Vec<u8>, Vec<u8>)>;
static FORTRAN_BOOLEANS: Mutex<Booleans> = Mutex::new(None);

/// `MPI_INFO_NULL` until an application or binding set the facts: the
/// library has no Fortran binding to know them from (MPICH's answer when
/// built without one).
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_get_fortran_info(info: *mut Handle) -> c_int {
    if info.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    if FORTRAN_INFO
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty()
    {
        // SAFETY: non-null output argument.
        unsafe { *info = handle_out(abi::MPI_INFO_NULL) };
        return abi::MPI_SUCCESS;
    }
    let pairs: Vec<(&str, String)> = FORTRAN_INFO
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(k, v)| (leak(k), v.clone()))
        .collect();
    // SAFETY: the caller's output.
    unsafe { info_with(info, &pairs) }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_set_fortran_info(info: Handle) -> c_int {
    let info = handle_in(info);
    let mut nkeys = 0;
    let mut pairs = Vec::new();
    // SAFETY: live local buffers of the sizes the calls are told.
    unsafe {
        let rc = entries::MPI_Info_get_nkeys(info, &mut nkeys);
        if rc != abi::MPI_SUCCESS {
            return code_out(rc);
        }
        for i in 0..nkeys {
            let mut key = [0 as c_char; 256];
            let mut value = [0 as c_char; 1025];
            let (mut len, mut flag) = (value.len() as c_int - 1, 0);
            entries::MPI_Info_get_nthkey(info, i, key.as_mut_ptr());
            entries::MPI_Info_get_string(
                info,
                key.as_ptr(),
                &mut len,
                value.as_mut_ptr(),
                &mut flag,
            );
            let text = |b: &[c_char]| {
                std::ffi::CStr::from_ptr(b.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            pairs.push((text(&key), text(&value)));
        }
    }
    *FORTRAN_INFO.lock().unwrap_or_else(|p| p.into_inner()) = pairs;
    abi::MPI_SUCCESS
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_set_fortran_booleans(
    logical_size: c_int,
    logical_true: *mut c_void,
    logical_false: *mut c_void,
) -> c_int {
    if logical_size <= 0 || logical_true.is_null() || logical_false.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    let n = logical_size as usize;
    // SAFETY: the caller's values of `logical_size` bytes.
    let (t, f) = unsafe {
        (
            std::slice::from_raw_parts(logical_true.cast::<u8>(), n).to_vec(),
            std::slice::from_raw_parts(logical_false.cast::<u8>(), n).to_vec(),
        )
    };
    *FORTRAN_BOOLEANS.lock().unwrap_or_else(|p| p.into_inner()) = Some((logical_size, t, f));
    abi::MPI_SUCCESS
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Abi_get_fortran_booleans(
    logical_size: c_int,
    logical_true: *mut c_void,
    logical_false: *mut c_void,
    is_set: *mut c_int,
) -> c_int {
    if is_set.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    let set = FORTRAN_BOOLEANS.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the caller's outputs of `logical_size` bytes.
    unsafe {
        match &*set {
            Some((size, t, f))
                if *size == logical_size && !logical_true.is_null() && !logical_false.is_null() =>
            {
                std::ptr::copy_nonoverlapping(t.as_ptr(), logical_true.cast(), t.len());
                std::ptr::copy_nonoverlapping(f.as_ptr(), logical_false.cast(), f.len());
                *is_set = 1;
            }
            _ => *is_set = 0,
        }
    }
    abi::MPI_SUCCESS
}

/// `MPI_X_toint` and `MPI_X_fromint` for one kind of handle.
macro_rules! int_conversions {
    ($($toint:ident, $fromint:ident, $out:ident;)*) => {$(
        #[doc = concat!("`", stringify!($toint), "`: the library's own handle.")]
        #[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
        pub extern "C" fn $toint(handle: Handle) -> c_int {
            handle_in(handle)
        }

        #[doc = concat!("`", stringify!($fromint), "`: the handle `", stringify!($toint), "` gave.")]
        #[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
        pub extern "C" fn $fromint(handle: c_int) -> Handle {
            $out(handle)
        }
    )*};
}

// Messages cross out through their own table (the library's
// `MPI_MESSAGE_NULL` is its `MPI_REQUEST_NULL`).
int_conversions! {
    MPI_Comm_toint, MPI_Comm_fromint, handle_out;
    MPI_Errhandler_toint, MPI_Errhandler_fromint, handle_out;
    MPI_Group_toint, MPI_Group_fromint, handle_out;
    MPI_Info_toint, MPI_Info_fromint, handle_out;
    MPI_Message_toint, MPI_Message_fromint, message_out;
    MPI_Op_toint, MPI_Op_fromint, handle_out;
    MPI_Request_toint, MPI_Request_fromint, handle_out;
    MPI_Session_toint, MPI_Session_fromint, handle_out;
    MPI_Type_toint, MPI_Type_fromint, handle_out;
    MPI_Win_toint, MPI_Win_fromint, handle_out;
}

/// `MPI_File_toint`: the library has no MPI-IO, so the only file is
/// `MPI_FILE_NULL`, whose integer is 0 (as `MPI_File_c2f` gives it).
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub extern "C" fn MPI_File_toint(_file: Handle) -> c_int {
    0
}

/// `MPI_File_fromint`: `MPI_FILE_NULL`, the only file there is.
#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub extern "C" fn MPI_File_fromint(_file: c_int) -> Handle {
    constants::value("MPI_FILE_NULL") as Handle
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Get_recv_buf(status: MPI_Status, buf: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's output pointer.
    code_out(unsafe { entries::MPIX_Get_recv_buf(status_to_mpich(&status), buf) })
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Release_recv_buf(status: MPI_Status, buf: *mut c_void) -> c_int {
    // SAFETY: the buffer `MPIX_Get_recv_buf` gave.
    code_out(unsafe { entries::MPIX_Release_recv_buf(status_to_mpich(&status), buf) })
}
