//! Entries that take application callbacks, and the trampolines through
//! which the library calls them: each translates the handles, statuses
//! and error codes the callback receives and returns.

use std::sync::Mutex;

use super::*;
use crate::mpich::attr::{CopyFn, DeleteFn};
use crate::ops::UserOp;

/// The predefined copy functions of the standard ABI are the values 0
/// (`MPI_*_NULL_COPY_FN`, also the null delete functions) and 1
/// (`MPI_*_DUP_FN`).
const NULL_FN: usize = 0;
const DUP_FN: usize = 1;

/// What a keyval created through this layer calls.
struct KeyvalFns {
    copy: usize,
    delete: usize,
    extra_state: *mut c_void,
}

type StdCopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type StdDeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// # Safety
/// Called by the library with the `KeyvalFns` made at creation as
/// `extra_state` and the pointers `MPI_Comm_copy_attr_function` receives.
unsafe extern "C" fn copy_trampoline(
    obj: c_int,
    keyval: c_int,
    extra_state: *mut c_void,
    value_in: *mut c_void,
    value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `extra_state` is the leaked `KeyvalFns` of this keyval.
    let fns = unsafe { &*extra_state.cast::<KeyvalFns>() };
    // SAFETY: the library passes valid output pointers.
    unsafe {
        match fns.copy {
            NULL_FN => *flag = 0,
            DUP_FN => {
                *value_out.cast::<*mut c_void>() = value_in;
                *flag = 1;
            }
            f => {
                let f: StdCopyFn = std::mem::transmute(f);
                return code_in(f(
                    handle_out(obj),
                    keyval_out(keyval),
                    fns.extra_state,
                    value_in,
                    value_out,
                    flag,
                ));
            }
        }
    }
    abi::MPI_SUCCESS
}

/// # Safety
/// As [`copy_trampoline`], for `MPI_Comm_delete_attr_function`.
unsafe extern "C" fn delete_trampoline(
    obj: c_int,
    keyval: c_int,
    value: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `extra_state` is the leaked `KeyvalFns` of this keyval.
    let fns = unsafe { &*extra_state.cast::<KeyvalFns>() };
    if fns.delete == NULL_FN {
        return abi::MPI_SUCCESS;
    }
    // SAFETY: a function pointer the application gave for this keyval.
    unsafe {
        let f: StdDeleteFn = std::mem::transmute(fns.delete);
        code_in(f(
            handle_out(obj),
            keyval_out(keyval),
            value,
            fns.extra_state,
        ))
    }
}

type CreateKeyval =
    unsafe extern "C" fn(Option<CopyFn>, Option<DeleteFn>, *mut c_int, *mut c_void) -> c_int;

/// # Safety
/// `keyval` is null or writable.
unsafe fn create_keyval(
    create: CreateKeyval,
    copy: usize,
    delete: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // Lives as long as the keyval may be used: the library frees no keyval
    // state it did not allocate.
    let fns = Box::into_raw(Box::new(KeyvalFns {
        copy,
        delete,
        extra_state,
    }));
    // SAFETY: the trampolines match the library's callback types.
    let rc = unsafe {
        create(
            Some(copy_trampoline),
            Some(delete_trampoline),
            keyval,
            fns.cast(),
        )
    };
    if rc != abi::MPI_SUCCESS {
        // SAFETY: not handed to the library.
        drop(unsafe { Box::from_raw(fns) });
    }
    code_out(rc)
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: usize,
    comm_delete_attr_fn: usize,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's output pointer.
    unsafe {
        create_keyval(
            entries::MPI_Comm_create_keyval,
            comm_copy_attr_fn,
            comm_delete_attr_fn,
            comm_keyval,
            extra_state,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: usize,
    type_delete_attr_fn: usize,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's output pointer.
    unsafe {
        create_keyval(
            entries::MPI_Type_create_keyval,
            type_copy_attr_fn,
            type_delete_attr_fn,
            type_keyval,
            extra_state,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    win_copy_attr_fn: usize,
    win_delete_attr_fn: usize,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's output pointer.
    unsafe {
        create_keyval(
            entries::MPI_Win_create_keyval,
            win_copy_attr_fn,
            win_delete_attr_fn,
            win_keyval,
            extra_state,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's output pointer.
    unsafe {
        create_keyval(
            entries::MPI_Keyval_create,
            copy_fn,
            delete_fn,
            keyval,
            extra_state,
        )
    }
}

/// Values of the predefined attributes, translated, where the library
/// answers with a pointer to its own `int`.
// Boxed: each value keeps its address as the vector grows.
#[allow(clippy::vec_box)]
static ATTRIBUTE_VALUES: Mutex<Vec<Box<c_int>>> = Mutex::new(Vec::new());

/// # Safety
/// `value` and `flag` are the caller's outputs of `MPI_Comm_get_attr`
/// (or of `MPI_Win_get_attr`, whose object is a window).
unsafe fn get_attr(
    get: unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_int) -> c_int,
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let key = keyval_in(keyval);
    // SAFETY: the caller's outputs.
    unsafe {
        let rc = get(handle_in(comm), key, value, flag);
        if rc != abi::MPI_SUCCESS || value.is_null() || flag.is_null() || *flag == 0 {
            return code_out(rc);
        }
        let translate: fn(c_int) -> c_int = match key {
            abi::MPI_HOST | abi::MPI_IO => rank_out,
            abi::MPI_LASTUSEDCODE => code_out,
            abi::MPI_WIN_CREATE_FLAVOR => win_flavor_out,
            abi::MPI_WIN_MODEL => win_model_out,
            _ => return abi::MPI_SUCCESS,
        };
        let slot = value.cast::<*mut c_int>();
        let translated = Box::new(translate(**slot));
        let mut values = ATTRIBUTE_VALUES.lock().unwrap_or_else(|p| p.into_inner());
        // One cell per query: a pointer handed out stays valid.
        *slot = std::ptr::from_ref::<c_int>(&translated).cast_mut();
        values.push(translated);
        abi::MPI_SUCCESS
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: Handle,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's outputs.
    unsafe {
        get_attr(
            entries::MPI_Comm_get_attr,
            comm,
            comm_keyval,
            attribute_val,
            flag,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: Handle,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's outputs.
    unsafe {
        get_attr(
            entries::MPI_Win_get_attr,
            win,
            win_keyval,
            attribute_val,
            flag,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's outputs.
    unsafe { get_attr(entries::MPI_Attr_get, comm, keyval, attribute_val, flag) }
}

/// `MPI_User_function` of the standard ABI: the datatype is an
/// address-sized handle.
type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);
/// `MPI_User_function_c`: the same with a 64-bit `MPI_Count` length.
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut Handle);

/// # Safety
/// [`crate::ops::UserCaller`]'s: `f` is a [`UserFn`] (`MPI_Op_create`
/// stored it).
unsafe fn call_int(f: usize, invec: *mut c_void, inoutvec: *mut c_void, len: usize, dt: u64) {
    // SAFETY: `f` is the address of a `UserFn`.
    let f = unsafe { std::mem::transmute::<usize, UserFn>(f) };
    let (mut len, mut dt) = (len as c_int, handle_out(dt as u32 as c_int));
    // SAFETY: the buffers hold `len` elements of `dt` (the caller's).
    unsafe { f(invec, inoutvec, &mut len, &mut dt) }
}

/// # Safety
/// [`crate::ops::UserCaller`]'s: `f` is a [`UserFnC`] (`MPI_Op_create_c`
/// stored it).
unsafe fn call_large(f: usize, invec: *mut c_void, inoutvec: *mut c_void, len: usize, dt: u64) {
    // SAFETY: `f` is the address of a `UserFnC`.
    let f = unsafe { std::mem::transmute::<usize, UserFnC>(f) };
    let (mut len, mut dt) = (len as i64, handle_out(dt as u32 as c_int));
    // SAFETY: the buffers hold `len` elements of `dt` (the caller's).
    unsafe { f(invec, inoutvec, &mut len, &mut dt) }
}

/// `MPI_Op_create` and `MPI_Op_create_c`: the application's function `f`
/// (null: `None`), called through `call` on at most `max_len` elements.
///
/// # Safety
/// `op` is null or writable; `f` is of the type `call` expects.
unsafe fn op_create(
    name: &str,
    f: Option<usize>,
    (call, max_len): (crate::ops::UserCaller, usize),
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    let user = f.map(|f| UserOp {
        f,
        call,
        max_len,
        commute: commute != 0,
    });
    // SAFETY: the caller's output pointer.
    unsafe {
        let mut made = handle_ptr_in(op);
        let out = if op.is_null() {
            std::ptr::null_mut()
        } else {
            &mut made
        };
        let rc = entries::op_create(name, user, out);
        handle_ptr_out(op, made);
        code_out(rc)
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_create(
    user_fn: Option<UserFn>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    let caller = (call_int as crate::ops::UserCaller, c_int::MAX as usize);
    // SAFETY: forwarded; `call_int` calls a `UserFn`.
    unsafe {
        op_create(
            "MPI_Op_create",
            user_fn.map(|f| f as usize),
            caller,
            commute,
            op,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_create_c(
    user_fn: Option<UserFnC>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    let caller = (call_large as crate::ops::UserCaller, i64::MAX as usize);
    // SAFETY: forwarded; `call_large` calls a `UserFnC`.
    unsafe {
        op_create(
            "MPI_Op_create_c",
            user_fn.map(|f| f as usize),
            caller,
            commute,
            op,
        )
    }
}

/// The application's error handler functions, by the library's handle of
/// the error handler made for them.
static ERRHANDLERS: Mutex<Vec<(c_int, usize)>> = Mutex::new(Vec::new());

type StdErrhFn = unsafe extern "C" fn(*mut Handle, *mut c_int);

fn registered(errhandler: c_int) -> Option<usize> {
    let list = ERRHANDLERS.lock().unwrap_or_else(|p| p.into_inner());
    list.iter()
        .rev()
        .find(|(h, _)| *h == errhandler)
        .map(|(_, f)| *f)
}

/// Calls the application's handler of the object (`get` names its error
/// handler) with the object and the code translated.
///
/// # Safety
/// `object` and `code` point to the library's handle and error code.
unsafe fn errhandler_trampoline(
    get: unsafe extern "C" fn(c_int, *mut c_int) -> c_int,
    counted: bool,
    object: *mut c_int,
    code: *mut c_int,
) {
    // SAFETY: the library's pointers; the handler is the object's own.
    unsafe {
        let mut errh = 0;
        if get(*object, &mut errh) != abi::MPI_SUCCESS {
            return;
        }
        let f = registered(errh);
        // The reference `get` took (a session's handler is not counted).
        if counted {
            entries::MPI_Errhandler_free(&mut errh);
        }
        if let Some(f) = f {
            let f: StdErrhFn = std::mem::transmute(f);
            let mut handle = handle_out(*object);
            let mut std_code = code_out(*code);
            f(&mut handle, &mut std_code);
        }
    }
}

unsafe extern "C" fn comm_errhandler_trampoline(comm: *mut c_int, code: *mut c_int) {
    // SAFETY: called by the library with its communicator and code.
    unsafe { errhandler_trampoline(entries::MPI_Comm_get_errhandler, true, comm, code) }
}

unsafe extern "C" fn win_errhandler_trampoline(win: *mut c_int, code: *mut c_int) {
    // SAFETY: called by the library with its window and code.
    unsafe { errhandler_trampoline(entries::MPI_Win_get_errhandler, true, win, code) }
}

unsafe extern "C" fn session_errhandler_trampoline(session: *mut c_int, code: *mut c_int) {
    // SAFETY: called by the library with its session and code.
    unsafe { errhandler_trampoline(entries::MPI_Session_get_errhandler, false, session, code) }
}

/// # Safety
/// `errhandler` is null or writable; `f` is the application's function.
unsafe fn create_errhandler(
    create: impl FnOnce(*mut c_int) -> c_int,
    f: usize,
    errhandler: *mut Handle,
) -> c_int {
    if f == 0 || errhandler.is_null() {
        return code_out(abi::MPI_ERR_ARG);
    }
    let mut made = 0;
    let rc = create(&mut made);
    if rc == abi::MPI_SUCCESS {
        ERRHANDLERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((made, f));
        // SAFETY: non-null output.
        unsafe { *errhandler = handle_out(made) };
    }
    code_out(rc)
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    comm_errhandler_fn: usize,
    errhandler: *mut Handle,
) -> c_int {
    // SAFETY: the trampoline has the library's handler type (the variadic
    // tail is never read); the caller's output pointer.
    unsafe {
        create_errhandler(
            |out| {
                entries::MPI_Comm_create_errhandler(
                    Some(std::mem::transmute::<
                        unsafe extern "C" fn(*mut c_int, *mut c_int),
                        crate::mpich::errh::ErrhFn,
                    >(comm_errhandler_trampoline)),
                    out,
                )
            },
            comm_errhandler_fn,
            errhandler,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    win_errhandler_fn: usize,
    errhandler: *mut Handle,
) -> c_int {
    // SAFETY: as for `MPI_Comm_create_errhandler`.
    unsafe {
        create_errhandler(
            |out| {
                entries::MPI_Win_create_errhandler(
                    Some(std::mem::transmute::<
                        unsafe extern "C" fn(*mut c_int, *mut c_int),
                        crate::mpich::errh::ErrhFn,
                    >(win_errhandler_trampoline)),
                    out,
                )
            },
            win_errhandler_fn,
            errhandler,
        )
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    session_errhandler_fn: usize,
    errhandler: *mut Handle,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        create_errhandler(
            |out| {
                entries::MPI_Session_create_errhandler(
                    Some(std::mem::transmute::<
                        unsafe extern "C" fn(*mut c_int, *mut c_int),
                        unsafe extern "C" fn(*mut c_int, *mut c_int, ...),
                    >(session_errhandler_trampoline)),
                    out,
                )
            },
            session_errhandler_fn,
            errhandler,
        )
    }
}

/// What a generalized request created through this layer calls.
struct GrequestFns {
    query: unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int,
    free: unsafe extern "C" fn(*mut c_void) -> c_int,
    cancel: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    extra_state: *mut c_void,
}

unsafe extern "C" fn grequest_query(
    extra_state: *mut c_void,
    status: *mut abi::MPI_Status,
) -> c_int {
    // SAFETY: `extra_state` is this request's `GrequestFns`; the library
    // passes a writable status.
    unsafe {
        let fns = &*extra_state.cast::<GrequestFns>();
        let mut std_status = status_from_mpich(&*status);
        let rc = (fns.query)(fns.extra_state, &mut std_status);
        *status = status_to_mpich(&std_status);
        code_in(rc)
    }
}

unsafe extern "C" fn grequest_free(extra_state: *mut c_void) -> c_int {
    // SAFETY: `extra_state` is this request's `GrequestFns`, freed here,
    // the last call the library makes for the request.
    unsafe {
        let fns = Box::from_raw(extra_state.cast::<GrequestFns>());
        code_in((fns.free)(fns.extra_state))
    }
}

unsafe extern "C" fn grequest_cancel(extra_state: *mut c_void, complete: c_int) -> c_int {
    // SAFETY: `extra_state` is this request's `GrequestFns`.
    unsafe {
        let fns = &*extra_state.cast::<GrequestFns>();
        code_in((fns.cancel)(fns.extra_state, complete))
    }
}

#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int>,
    free_fn: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    cancel_fn: Option<unsafe extern "C" fn(*mut c_void, c_int) -> c_int>,
    extra_state: *mut c_void,
    request: *mut Handle,
) -> c_int {
    let (Some(query), Some(free), Some(cancel)) = (query_fn, free_fn, cancel_fn) else {
        return code_out(abi::MPI_ERR_ARG);
    };
    let fns = Box::into_raw(Box::new(GrequestFns {
        query,
        free,
        cancel,
        extra_state,
    }));
    // SAFETY: the trampolines have the library's callback types; the
    // caller's output pointer.
    unsafe {
        let mut made = 0;
        let out = if request.is_null() {
            std::ptr::null_mut()
        } else {
            &mut made
        };
        let rc = entries::MPI_Grequest_start(
            Some(grequest_query),
            Some(grequest_free),
            Some(grequest_cancel),
            fns.cast(),
            out,
        );
        if rc == abi::MPI_SUCCESS {
            handle_ptr_out(request, made);
        } else {
            drop(Box::from_raw(fns));
        }
        code_out(rc)
    }
}
