//! Tool support (MPI-4.0 §15): the profiling interface's `MPI_Pcontrol`
//! and the tool information interface (`MPI_T_*`, §15.3).
//!
//! This library exposes no control variables, performance variables,
//! categories, enumerations, event types or event sources: the counts are
//! zero and every index, name or handle that would designate one is
//! invalid. That is a complete implementation of the interface for a
//! library without variables, not a stub: tools that enumerate variables
//! find none, and performance-variable sessions can be created, started
//! and stopped as a whole.
//!
//! These functions do not use error handlers: they return their error
//! codes (MPI-4.0 §15.3.10), and may be called before `MPI_Init` and
//! after `MPI_Finalize`.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use super::predefined::MPI_T_PVAR_ALL_HANDLES;
use crate::abi::{
    self, MPI_Aint, MPI_Count, MPI_Datatype, MPI_Info, MPI_T_ERR_INVALID, MPI_T_ERR_INVALID_HANDLE,
    MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID_NAME, MPI_T_ERR_INVALID_SESSION,
    MPI_T_ERR_NOT_INITIALIZED, MPI_T_cvar_handle, MPI_T_enum, MPI_T_event_instance,
    MPI_T_event_registration, MPI_T_pvar_handle, MPI_T_pvar_session,
};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Pcontrol(const int level, ...)",
    "int MPI_T_init_thread(int required, int *provided)",
    "int MPI_T_finalize(void)",
    "int MPI_T_cvar_get_num(int *num_cvar)",
    "int MPI_T_pvar_get_num(int *num_pvar)",
    "int MPI_T_pvar_session_create(MPI_T_pvar_session *session)",
    "int MPI_T_pvar_session_free(MPI_T_pvar_session *session)",
    "int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle, MPI_T_pvar_handle *handle, int *count)",
    "int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)",
    "int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)",
    "int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)",
    "int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)",
    "int MPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)",
    "int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)",
    "int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)",
    "int MPI_T_category_get_num(int *num_cat)",
    "int MPI_T_category_changed(int *update_number)",
    "int MPI_T_event_get_num(int *num_events)",
    "int MPI_T_source_get_num(int *num_sources)",
];

/// MPI-4.0 §15.2.4: the library keeps no profile of its own, so the call
/// matters only to a profiling layer in front of it and returns at once
/// here. C declares it variadic; the extra arguments are never read, and
/// the x86-64 calling convention passes the first argument the same way
/// to a variadic and to a fixed-argument function.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    abi::MPI_SUCCESS
}

/// The interface's state: how many `MPI_T_init_thread` calls are not yet
/// matched by `MPI_T_finalize`, and the live performance-variable
/// sessions (opaque handles are their numbers).
#[derive(Debug)]
struct Tool {
    inits: usize,
    sessions: BTreeSet<usize>,
    next_session: usize,
}

static TOOL: Mutex<Tool> = Mutex::new(Tool {
    inits: 0,
    sessions: BTreeSet::new(),
    next_session: 1,
});

fn lock() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|p| p.into_inner())
}

type ToolResult = Result<(), c_int>;

/// Run `f` if the interface is initialized; its error code otherwise.
fn tool(f: impl FnOnce(&mut Tool) -> ToolResult) -> c_int {
    let mut t = lock();
    if t.inits == 0 {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    f(&mut t).err().unwrap_or(abi::MPI_SUCCESS)
}

/// Write an output argument.
///
/// # Safety
/// `p` is null or writable.
unsafe fn put<T>(p: *mut T, v: T) -> ToolResult {
    if p.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    // SAFETY: non-null and writable (caller's promise).
    unsafe { p.write(v) };
    Ok(())
}

impl Tool {
    fn session(&self, s: MPI_T_pvar_session) -> ToolResult {
        if self.sessions.contains(&(s as usize)) {
            Ok(())
        } else {
            Err(MPI_T_ERR_INVALID_SESSION)
        }
    }

    /// A valid session and a handle that may name all of its handles:
    /// there are none, so the operation has nothing to do.
    fn all_handles(&self, s: MPI_T_pvar_session, h: MPI_T_pvar_handle) -> ToolResult {
        self.session(s)?;
        if h.cast_const() == MPI_T_PVAR_ALL_HANDLES.get() {
            Ok(())
        } else {
            Err(MPI_T_ERR_INVALID_HANDLE)
        }
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    if !(abi::MPI_THREAD_SINGLE..=abi::MPI_THREAD_MULTIPLE).contains(&required) {
        return MPI_T_ERR_INVALID;
    }
    let mut t = lock();
    // The interface's only state is behind its lock: any thread level.
    // SAFETY: output argument.
    match unsafe { put(provided, required) } {
        Ok(()) => {
            t.inits += 1;
            abi::MPI_SUCCESS
        }
        Err(e) => e,
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_finalize() -> c_int {
    tool(|t| {
        t.inits -= 1;
        if t.inits == 0 {
            t.sessions.clear();
        }
        Ok(())
    })
}

/// The count functions: there is nothing of any kind.
macro_rules! none {
    ($($name:ident),*) => {$(
        #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
        pub unsafe extern "C" fn $name(num: *mut c_int) -> c_int {
            // SAFETY: output argument.
            tool(|_| unsafe { put(num, 0) })
        }
    )*};
}

none!(
    MPI_T_cvar_get_num,
    MPI_T_pvar_get_num,
    MPI_T_category_get_num,
    MPI_T_event_get_num,
    MPI_T_source_get_num
);

/// The functions whose every call names something that does not exist
/// here (a variable, category, event or source by index or name, or a
/// handle of one): each answers with the error for that argument. Each
/// entry: the error, MPICH's prototype, the same signature in Rust.
macro_rules! nothing_there {
    ($( $error:ident: $proto:literal fn $name:ident($($arg:ident: $ty:ty),* $(,)?); )*) => {
        pub(super) const NOTHING_THERE: &[&str] = &[$($proto),*];
        $(
            #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
            #[allow(unused_variables, clippy::too_many_arguments)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                tool(|_| Err($error))
            }
        )*
    };
}

nothing_there! {
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)"
        fn MPI_T_enum_get_info(enumtype: MPI_T_enum, num: *mut c_int, name: *mut c_char, name_len: *mut c_int);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len)"
        fn MPI_T_enum_get_item(enumtype: MPI_T_enum, indx: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope)"
        fn MPI_T_cvar_get_info(cvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, datatype: *mut MPI_Datatype, enumtype: *mut MPI_T_enum, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int, scope: *mut c_int);
    MPI_T_ERR_INVALID_NAME: "int MPI_T_cvar_get_index(const char *name, int *cvar_index)"
        fn MPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)"
        fn MPI_T_cvar_handle_alloc(cvar_index: c_int, obj_handle: *mut c_void, handle: *mut MPI_T_cvar_handle, count: *mut c_int);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)"
        fn MPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)"
        fn MPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)"
        fn MPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *readonly, int *continuous, int *atomic)"
        fn MPI_T_pvar_get_info(pvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, var_class: *mut c_int, datatype: *mut MPI_Datatype, enumtype: *mut MPI_T_enum, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int, readonly: *mut c_int, continuous: *mut c_int, atomic: *mut c_int);
    MPI_T_ERR_INVALID_NAME: "int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)"
        fn MPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len, int *num_cvars, int *num_pvars, int *num_categories)"
        fn MPI_T_category_get_info(cat_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char, desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int, num_categories: *mut c_int);
    MPI_T_ERR_INVALID_NAME: "int MPI_T_category_get_index(const char *name, int *cat_index)"
        fn MPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_cvars(int cat_index, int len, int indices[])"
        fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_pvars(int cat_index, int len, int indices[])"
        fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_categories(int cat_index, int len, int indices[])"
        fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_num_events(int cat_index, int *num_events)"
        fn MPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_category_get_events(int cat_index, int len, int indices[])"
        fn MPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int);
    // Events and their sources (MPI-4.0 §15.3.8).
    MPI_T_ERR_INVALID_NAME: "int MPI_T_event_get_index(const char *name, int *event_index)"
        fn MPI_T_event_get_index(name: *const c_char, event_index: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity, MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[], int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc, int *desc_len, int *bind)"
        fn MPI_T_event_get_info(event_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, array_of_datatypes: *mut MPI_Datatype, array_of_displacements: *mut MPI_Aint, num_elements: *mut c_int, enumtype: *mut MPI_T_enum, info: *mut MPI_Info, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info, MPI_T_event_registration *event_registration)"
        fn MPI_T_event_handle_alloc(event_index: c_int, obj_handle: *mut c_void, info: MPI_Info, event_registration: *mut MPI_T_event_registration);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_handle_free(MPI_T_event_registration event_registration, void *user_data, MPI_T_event_free_cb_function free_cb_function)"
        fn MPI_T_event_handle_free(event_registration: MPI_T_event_registration, user_data: *mut c_void, free_cb_function: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used)"
        fn MPI_T_event_handle_get_info(event_registration: MPI_T_event_registration, info_used: *mut MPI_Info);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)"
        fn MPI_T_event_handle_set_info(event_registration: MPI_T_event_registration, info: MPI_Info);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_register_callback(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, MPI_Info info, void *user_data, MPI_T_event_cb_function event_cb_function)"
        fn MPI_T_event_register_callback(event_registration: MPI_T_event_registration, cb_safety: c_int, info: MPI_Info, user_data: *mut c_void, event_cb_function: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_callback_get_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, MPI_Info *info_used)"
        fn MPI_T_event_callback_get_info(event_registration: MPI_T_event_registration, cb_safety: c_int, info_used: *mut MPI_Info);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_callback_set_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, MPI_Info info)"
        fn MPI_T_event_callback_set_info(event_registration: MPI_T_event_registration, cb_safety: c_int, info: MPI_Info);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_set_dropped_handler(MPI_T_event_registration event_registration, MPI_T_event_dropped_cb_function dropped_cb_function)"
        fn MPI_T_event_set_dropped_handler(event_registration: MPI_T_event_registration, dropped_cb_function: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)"
        fn MPI_T_event_read(event_instance: MPI_T_event_instance, element_index: c_int, buffer: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_copy(MPI_T_event_instance event_instance, void *buffer)"
        fn MPI_T_event_copy(event_instance: MPI_T_event_instance, buffer: *mut c_void);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)"
        fn MPI_T_event_get_timestamp(event_instance: MPI_T_event_instance, event_timestamp: *mut MPI_Count);
    MPI_T_ERR_INVALID_HANDLE: "int MPI_T_event_get_source(MPI_T_event_instance event_instance, int *source_index)"
        fn MPI_T_event_get_source(event_instance: MPI_T_event_instance, source_index: *mut c_int);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_source_get_info(int source_index, char *name, int *name_len, char *desc, int *desc_len, MPI_T_source_order *ordering, MPI_Count *ticks_per_second, MPI_Count *max_ticks, MPI_Info *info)"
        fn MPI_T_source_get_info(source_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char, desc_len: *mut c_int, ordering: *mut c_int, ticks_per_second: *mut MPI_Count, max_ticks: *mut MPI_Count, info: *mut MPI_Info);
    MPI_T_ERR_INVALID_INDEX: "int MPI_T_source_get_timestamp(int source_index, MPI_Count *timestamp)"
        fn MPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut MPI_Count);
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> c_int {
    tool(|t| {
        let id = t.next_session;
        // SAFETY: output argument.
        unsafe { put(session, id as MPI_T_pvar_session) }?;
        t.next_session += 1;
        t.sessions.insert(id);
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> c_int {
    tool(|t| {
        if session.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        // SAFETY: non-null; the caller's session variable.
        let s = unsafe { *session };
        if !t.sessions.remove(&(s as usize)) {
            return Err(MPI_T_ERR_INVALID_SESSION);
        }
        // SAFETY: as above.
        unsafe { put(session, std::ptr::null_mut()) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(
    session: MPI_T_pvar_session,
    _pvar_index: c_int,
    _obj_handle: *mut c_void,
    _handle: *mut MPI_T_pvar_handle,
    _count: *mut c_int,
) -> c_int {
    tool(|t| {
        t.session(session)?;
        Err(MPI_T_ERR_INVALID_INDEX)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_handle_free(
    session: MPI_T_pvar_session,
    _handle: *mut MPI_T_pvar_handle,
) -> c_int {
    tool(|t| {
        t.session(session)?;
        Err(MPI_T_ERR_INVALID_HANDLE)
    })
}

/// Start, stop and reset accept `MPI_T_PVAR_ALL_HANDLES`: all of none.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_start(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_stop(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_reset(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

/// Reading and writing need one real handle, and there are none.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_read(
    session: MPI_T_pvar_session,
    _handle: MPI_T_pvar_handle,
    _buf: *mut c_void,
) -> c_int {
    tool(|t| {
        t.session(session)?;
        Err(MPI_T_ERR_INVALID_HANDLE)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_readreset(
    session: MPI_T_pvar_session,
    _handle: MPI_T_pvar_handle,
    _buf: *mut c_void,
) -> c_int {
    tool(|t| {
        t.session(session)?;
        Err(MPI_T_ERR_INVALID_HANDLE)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_pvar_write(
    session: MPI_T_pvar_session,
    _handle: MPI_T_pvar_handle,
    _buf: *const c_void,
) -> c_int {
    tool(|t| {
        t.session(session)?;
        Err(MPI_T_ERR_INVALID_HANDLE)
    })
}

/// The categories never change: the stamp stays 0.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_T_category_changed(update_number: *mut c_int) -> c_int {
    // SAFETY: output argument.
    tool(|_| unsafe { put(update_number, 0) })
}
