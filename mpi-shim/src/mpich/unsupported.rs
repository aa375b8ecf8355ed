//! The part of MPI this library does not provide: MPI-IO.
//!
//! Every function of these areas is exported with MPICH's prototype, so a
//! binary built against MPICH loads and resolves every symbol; calling one
//! reports `MPI_ERR_UNSUPPORTED_OPERATION` (MPI-4.0 §9.4) through the
//! error handler of its communicator argument, or of `MPI_COMM_WORLD` when
//! it has none, naming the function and the area; a communicator argument
//! that names no communicator is `MPI_ERR_COMM` first.
//!
//! The Fortran conversions of file handles have a true answer without the
//! area (only `MPI_FILE_NULL` exists).
//! `MPI_Alloc_mem` / `MPI_Free_mem` have their own module, `mem`.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_char;

use super::*;
use crate::abi::{MPI_Aint, MPI_Count, MPI_File, MPI_Fint, MPI_Group, MPI_Info, MPI_Offset};

const IO: &str = "MPI-IO is not supported by this library";

/// Report that `name` is not supported, through the error handler of its
/// communicator argument, if it has one (of `MPI_COMM_WORLD` otherwise):
/// an argument that names no communicator is reported as such first.
fn unsupported(name: &str, comm: Option<MPI_Comm>, area: &str) -> c_int {
    call(name, comm.unwrap_or(abi::MPI_COMM_WORLD), |rt| {
        if let Some(c) = comm {
            rt.comm(comm_slot(c)?)?;
        }
        Err(err(Class::UnsupportedOperation, area))
    })
}

/// Declares each function (MPICH's C prototype, then the same signature
/// in Rust, then `on ARG` when it has a communicator argument) and the
/// `UNSUPPORTED` list of their prototypes.
macro_rules! unsupported {
    ($( $area:ident: [ $( $proto:literal
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(on $comm:ident)?; )* ] )*) => {
        /// The C prototypes of the unsupported functions.
        pub(super) const UNSUPPORTED: &[&str] = &[$($($proto,)*)*];
        $($(
            #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
            #[allow(unused_variables)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                unsupported(stringify!($name), unsupported!(@comm $($comm)?), $area)
            }
        )*)*
    };
    (@comm $comm:ident) => { Some($comm) };
    (@comm) => { None };
}

unsupported! {
    // MPI-IO (MPI-4.0 §14).
    IO: [
        "int MPI_File_call_errhandler(MPI_File fh, int errorcode)"
            fn MPI_File_call_errhandler(fh: MPI_File, errorcode: c_int);
        "int MPI_File_create_errhandler(MPI_File_errhandler_function *file_errhandler_fn, MPI_Errhandler *errhandler)"
            fn MPI_File_create_errhandler(file_errhandler_fn: *mut c_void, errhandler: *mut MPI_Errhandler);
        "int MPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)"
            fn MPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler);
        "int MPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)"
            fn MPI_File_set_errhandler(file: MPI_File, errhandler: MPI_Errhandler);
        "int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)"
            fn MPI_File_open(comm: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info, fh: *mut MPI_File) on comm;
        "int MPI_File_close(MPI_File *fh)"
            fn MPI_File_close(fh: *mut MPI_File);
        "int MPI_File_delete(const char *filename, MPI_Info info)"
            fn MPI_File_delete(filename: *const c_char, info: MPI_Info);
        "int MPI_File_set_size(MPI_File fh, MPI_Offset size)"
            fn MPI_File_set_size(fh: MPI_File, size: MPI_Offset);
        "int MPI_File_preallocate(MPI_File fh, MPI_Offset size)"
            fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset);
        "int MPI_File_get_size(MPI_File fh, MPI_Offset *size)"
            fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset);
        "int MPI_File_get_group(MPI_File fh, MPI_Group *group)"
            fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group);
        "int MPI_File_get_amode(MPI_File fh, int *amode)"
            fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int);
        "int MPI_File_set_info(MPI_File fh, MPI_Info info)"
            fn MPI_File_set_info(fh: MPI_File, info: MPI_Info);
        "int MPI_File_get_info(MPI_File fh, MPI_Info *info_used)"
            fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info);
        "int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep, MPI_Info info)"
            fn MPI_File_set_view(fh: MPI_File, disp: MPI_Offset, etype: MPI_Datatype, filetype: MPI_Datatype, datarep: *const c_char, info: MPI_Info);
        "int MPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype, char *datarep)"
            fn MPI_File_get_view(fh: MPI_File, disp: *mut MPI_Offset, etype: *mut MPI_Datatype, filetype: *mut MPI_Datatype, datarep: *mut c_char);
        "int MPI_File_read_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_at_c(MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_at_all(MPI_File fh, MPI_Offset offset, void * buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_at_all_c(MPI_File fh, MPI_Offset offset, void * buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void * buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_at_c(MPI_File fh, MPI_Offset offset, const void * buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_at_all_c(MPI_File fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_iread_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_at_c(MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_at(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_at_c(MPI_File fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_all_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_all_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_all(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_all_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_all_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence)"
            fn MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int);
        "int MPI_File_get_position(MPI_File fh, MPI_Offset *offset)"
            fn MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset);
        "int MPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)"
            fn MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset);
        "int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_shared(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_shared_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_shared_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_shared(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_shared_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_shared_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_shared(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_shared_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_shared_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_shared(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_shared_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_shared_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_ordered(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_read_ordered_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_read_ordered_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_ordered(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_write_ordered_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status)"
            fn MPI_File_write_ordered_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, status: *mut MPI_Status);
        "int MPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)"
            fn MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int);
        "int MPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset)"
            fn MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset);
        "int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_read_at_all_begin(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_read_at_all_begin_c(MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_read_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *status)"
            fn MPI_File_read_at_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status);
        "int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_write_at_all_begin(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_write_at_all_begin_c(MPI_File fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_write_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *status)"
            fn MPI_File_write_at_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status);
        "int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_read_all_begin(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_read_all_begin_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_read_all_begin_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *status)"
            fn MPI_File_read_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status);
        "int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_write_all_begin(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_write_all_begin_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_write_all_begin_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *status)"
            fn MPI_File_write_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status);
        "int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_read_ordered_begin(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_read_ordered_begin_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_read_ordered_begin_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *status)"
            fn MPI_File_read_ordered_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status);
        "int MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)"
            fn MPI_File_write_ordered_begin(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype);
        "int MPI_File_write_ordered_begin_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype)"
            fn MPI_File_write_ordered_begin_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype);
        "int MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *status)"
            fn MPI_File_write_ordered_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status);
        "int MPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent)"
            fn MPI_File_get_type_extent(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Aint);
        "int MPI_File_get_type_extent_c(MPI_File fh, MPI_Datatype datatype, MPI_Count *extent)"
            fn MPI_File_get_type_extent_c(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Count);
        "int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn, MPI_Datarep_conversion_function *write_conversion_fn, MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)"
            fn MPI_Register_datarep(datarep: *const c_char, read_conversion_fn: *mut c_void, write_conversion_fn: *mut c_void, dtype_file_extent_fn: *mut c_void, extra_state: *mut c_void);
        "int MPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn, MPI_Datarep_conversion_function_c *write_conversion_fn, MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)"
            fn MPI_Register_datarep_c(datarep: *const c_char, read_conversion_fn: *mut c_void, write_conversion_fn: *mut c_void, dtype_file_extent_fn: *mut c_void, extra_state: *mut c_void);
        "int MPI_File_set_atomicity(MPI_File fh, int flag)"
            fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int);
        "int MPI_File_get_atomicity(MPI_File fh, int *flag)"
            fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int);
        "int MPI_File_sync(MPI_File fh)"
            fn MPI_File_sync(fh: MPI_File);
        "int MPI_File_iread_at_all(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_at_all_c(MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_at_all_c(MPI_File fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_all(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iread_all_c(MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iread_all_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_all(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, request: *mut MPI_Request);
        "int MPI_File_iwrite_all_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Request *request)"
            fn MPI_File_iwrite_all_c(fh: MPI_File, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, request: *mut MPI_Request);
    ]
    // Process creation and management (MPI-4.0 §11).
}

pub(super) const PROTOTYPES: &[&str] = &[
    "MPI_Fint MPI_File_c2f(MPI_File file)",
    "MPI_File MPI_File_f2c(MPI_Fint file)",
];

/// MPI-4.0 §19.3.4: no file can be opened, so every file handle converts
/// to the null one.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_File_c2f(_file: MPI_File) -> MPI_Fint {
    0
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_File_f2c(_file: MPI_Fint) -> MPI_File {
    std::ptr::null_mut()
}
