//! Error handlers, classes, codes and strings (MPI-4.0 §9.3–§9.5): user
//! error handlers on communicators and user error classes and codes, which
//! the application may remove again (MPI-4.1 §9.5). Predefined codes are
//! their own classes.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::attr::refresh_last_used;
use super::codes::{code_in, code_out};
use super::*;
use crate::core::AppFn;
use crate::core::Code;
use crate::core::errh::{self, Errhandler};

/// `MPI_Comm_errhandler_function` and `MPI_Session_errhandler_function`:
/// called with pointers to the object's handle and the error code.
pub type ErrhFn = unsafe extern "C" fn(*mut c_int, *mut c_int, ...);

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn, MPI_Errhandler *errhandler)",
    "int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)",
    "int MPI_Errhandler_free(MPI_Errhandler *errhandler)",
    "int MPI_Errhandler_create(MPI_Comm_errhandler_function *comm_errhandler_fn, MPI_Errhandler *errhandler)",
    "int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)",
    "int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)",
    "int MPI_Add_error_class(int *errorclass)",
    "int MPI_Add_error_code(int errorclass, int *errorcode)",
    "int MPI_Add_error_string(int errorcode, const char *string)",
    "int MPI_Remove_error_class(int errorclass)",
    "int MPI_Remove_error_code(int errorcode)",
    "int MPI_Remove_error_string(int errorcode)",
    "int MPI_Error_class(int errorcode, int *errorclass)",
    "int MPI_Error_string(int errorcode, char *string, int *resultlen)",
];

/// An error handler handle as the core's; `None` for a value that is
/// no error handler handle (whether a user handle is live is the caller's
/// check).
pub(crate) fn errhandler_in(h: MPI_Errhandler) -> Option<Errhandler> {
    match h {
        abi::MPI_ERRORS_ARE_FATAL => Some(Errhandler::Fatal),
        abi::MPI_ERRORS_ABORT => Some(Errhandler::Abort),
        abi::MPI_ERRORS_RETURN => Some(Errhandler::Return),
        h => abi::direct_index(Kind::Errhandler, h).map(|i| {
            match i.checked_sub(FIRST_SESSION_ERRHANDLER) {
                Some(s) => Errhandler::Session(s),
                None => Errhandler::User(i),
            }
        }),
    }
}

/// The handle of a core error handler.
pub(crate) fn errhandler_out(e: Errhandler) -> MPI_Errhandler {
    match e {
        Errhandler::Fatal => abi::MPI_ERRORS_ARE_FATAL,
        Errhandler::Abort => abi::MPI_ERRORS_ABORT,
        Errhandler::Return => abi::MPI_ERRORS_RETURN,
        Errhandler::User(i) => abi::direct_handle(Kind::Errhandler, i),
        Errhandler::Session(s) => {
            abi::direct_handle(Kind::Errhandler, FIRST_SESSION_ERRHANDLER + s)
        }
    }
}

/// Session handlers' handles have indices from here up, so that they
/// never name a communicator's user handler.
const FIRST_SESSION_ERRHANDLER: usize = 1 << 20;

/// [`errhandler_in`] of a handle the caller checked.
/// The handler `h` names, if an object may take it: a predefined one or
/// a user handler the application still holds (`MPI_Comm_set_errhandler`,
/// `MPI_Win_set_errhandler`).
pub(crate) fn settable_errhandler(rt: &Runtime, h: MPI_Errhandler) -> MpiResult<Errhandler> {
    match errhandler_in(h) {
        Some(e) if e.is_predefined() => Ok(e),
        Some(Errhandler::User(i)) if rt.errors.is_live(i) => Ok(Errhandler::User(i)),
        _ => Err(err(Class::Arg, format!("invalid error handler {h:#x}"))),
    }
}

pub(crate) fn checked_errhandler(h: MPI_Errhandler) -> MpiResult<Errhandler> {
    errhandler_in(h).ok_or_else(|| err(Class::Arg, format!("invalid error handler {h:#x}")))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    comm_errhandler_fn: Option<ErrhFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe { create_errhandler("MPI_Comm_create_errhandler", comm_errhandler_fn, errhandler) }
}

/// A new error handler calling `f` (`MPI_Comm_create_errhandler`,
/// `MPI_Win_create_errhandler`: the handler receives a pointer to the
/// object's handle, an `int` in this ABI).
///
/// # Safety
/// `errhandler` is null or writable.
pub(crate) unsafe fn create_errhandler(
    name: &str,
    f: Option<ErrhFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let f = f.ok_or_else(|| err(Class::Arg, "null error handler function"))?;
        nonnull(errhandler, "errhandler")?;
        let slot = rt.errors.create_handler(AppFn::new(f as usize));
        // SAFETY: output argument, checked non-null.
        unsafe { out(errhandler, abi::direct_handle(Kind::Errhandler, slot)) }
    })
}

/// The MPI-1 name of `MPI_Comm_create_errhandler` (MPICH still exports it).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Errhandler_create(
    comm_errhandler_fn: Option<ErrhFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe { MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler) }
}

/// The MPI-1 name of `MPI_Comm_set_errhandler`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    super::comm::MPI_Comm_set_errhandler(comm, errhandler)
}

/// The MPI-1 name of `MPI_Comm_get_errhandler`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Errhandler_get(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe { super::comm::MPI_Comm_get_errhandler(comm, errhandler) }
}

/// Invoke `comm`'s error handler on `errorcode`; `MPI_SUCCESS` once a
/// handler that returns has run (MPI-4.0 §9.3.6).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let name = "MPI_Comm_call_errhandler";
    let text = locked(name, |rt| {
        rt.comm(comm_slot(comm)?)?;
        Ok(rt
            .errors
            .string(code_in(errorcode))
            .map_or_else(|| format!("error code {errorcode}"), str::to_owned))
    });
    match text {
        Ok(text) => {
            let _ = fail(name, comm, MpiError::new(code_in(errorcode), text));
            abi::MPI_SUCCESS
        }
        Err(e) => fail(name, comm, e),
    }
}

/// Predefined handlers may be freed (nothing happens); a user handler
/// stays in use by the communicators it is set on.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    call_any_time("MPI_Errhandler_free", abi::MPI_COMM_WORLD, |rt| {
        nonnull(errhandler, "errhandler")?;
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *errhandler };
        let freed = match errhandler_in(h) {
            Some(Errhandler::User(i)) => rt.errors.free_handler(i),
            Some(Errhandler::Session(s)) => errh::count_session_handler(s, -1),
            Some(_) => true,
            None => false,
        };
        if !freed {
            return Err(err(Class::Arg, format!("invalid error handler {h:#x}")));
        }
        // SAFETY: as above.
        unsafe { out(errhandler, abi::MPI_ERRHANDLER_NULL) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    call("MPI_Add_error_class", abi::MPI_COMM_WORLD, |rt| {
        nonnull(errorclass, "errorclass")?;
        let class = rt.errors.add_class()?;
        refresh_last_used(rt);
        // SAFETY: output argument, checked non-null.
        unsafe { out(errorclass, code_out(class)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    call("MPI_Add_error_code", abi::MPI_COMM_WORLD, |rt| {
        nonnull(errorcode, "errorcode")?;
        let code = rt.errors.add_code(code_in(errorclass))?;
        refresh_last_used(rt);
        // SAFETY: output argument, checked non-null.
        unsafe { out(errorcode, code_out(code)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    call("MPI_Add_error_string", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: a NUL-terminated string (MPI contract).
        let text = unsafe { read_cstr(string, Class::Arg, "string") }?;
        if text.len() >= abi::MPI_MAX_ERROR_STRING as usize {
            return Err(err(
                Class::Arg,
                format!("error string of {} characters", text.len()),
            ));
        }
        rt.errors.set_string(code_in(errorcode), &text)
    })
}

/// Removing an error class the application added: its codes must have
/// been removed before (MPI-4.1 §9.5); a predefined class is `MPI_ERR_ARG`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    call("MPI_Remove_error_class", abi::MPI_COMM_WORLD, |rt| {
        rt.errors.remove_class(code_in(errorclass))?;
        refresh_last_used(rt);
        Ok(())
    })
}

/// Removing an error code the application added: its string must have
/// been removed before (MPI-4.1 §9.5).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    call("MPI_Remove_error_code", abi::MPI_COMM_WORLD, |rt| {
        rt.errors.remove_code(code_in(errorcode))?;
        refresh_last_used(rt);
        Ok(())
    })
}

/// Removing the string `MPI_Add_error_string` attached to a user class
/// or code; one without a string is `MPI_ERR_ARG`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    call("MPI_Remove_error_string", abi::MPI_COMM_WORLD, |rt| {
        rt.errors.remove_string(code_in(errorcode))
    })
}

/// What the running library knows about user code `code`, if anything
/// (user codes exist only between `MPI_Init` and `MPI_Finalize`).
fn user_code<T>(f: impl FnOnce(&core::errh::Errors) -> Option<T>) -> Option<T> {
    if let Some(rt) = core::callback_runtime() {
        // SAFETY: read only, while the call that lent the runtime waits
        // for the callback (`core::run_callback`).
        return f(unsafe { &(*rt).errors });
    }
    match &*core::state_any_time() {
        core::Library::Running(rt) => f(&rt.errors),
        _ => None,
    }
}

/// Callable at any time, like `MPI_Error_string`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    let class = match code_in(errorcode) {
        code @ Code::Class(_) => Some(code),
        code => user_code(|e| e.class_of(code)),
    };
    let Some(class) = class else {
        return fail(
            "MPI_Error_class",
            abi::MPI_COMM_WORLD,
            err(Class::Arg, format!("invalid error code {errorcode}")),
        );
    };
    // SAFETY: output argument.
    match unsafe { out(errorclass, code_out(class)) } {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => fail("MPI_Error_class", abi::MPI_COMM_WORLD, e),
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Error_string(
    errorcode: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let text = match code_in(errorcode) {
        Code::Class(c) => c.name().to_owned(),
        code => user_code(|e| e.string(code).map(str::to_owned))
            .unwrap_or_else(|| format!("unknown error code {errorcode}")),
    };
    let cap = abi::MPI_MAX_ERROR_STRING as usize;
    // SAFETY: MPI_MAX_ERROR_STRING bytes at `string`.
    match unsafe { write_cstr(string, cap, &text, resultlen) } {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => fail("MPI_Error_string", abi::MPI_COMM_WORLD, e),
    }
}
