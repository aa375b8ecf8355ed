//! The MPI tool information interface (MPI-4.0 §15.3).
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
    self, MPI_Datatype, MPI_T_ERR_INVALID, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID_INDEX,
    MPI_T_ERR_INVALID_NAME, MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_NOT_INITIALIZED,
    MPI_T_cvar_handle, MPI_T_enum, MPI_T_pvar_handle, MPI_T_pvar_session,
};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_T_init_thread(int required, int *provided)",
    "int MPI_T_finalize(void)",
    "int MPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)",
    "int MPI_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len)",
    "int MPI_T_cvar_get_num(int *num_cvar)",
    "int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope)",
    "int MPI_T_cvar_get_index(const char *name, int *cvar_index)",
    "int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)",
    "int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)",
    "int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)",
    "int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)",
    "int MPI_T_pvar_get_num(int *num_pvar)",
    "int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *readonly, int *continuous, int *atomic)",
    "int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)",
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
    "int MPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len, int *num_cvars, int *num_pvars, int *num_categories)",
    "int MPI_T_category_get_index(const char *name, int *cat_index)",
    "int MPI_T_category_get_cvars(int cat_index, int len, int indices[])",
    "int MPI_T_category_get_pvars(int cat_index, int len, int indices[])",
    "int MPI_T_category_get_categories(int cat_index, int len, int indices[])",
    "int MPI_T_category_changed(int *update_number)",
    "int MPI_T_category_get_num_events(int cat_index, int *num_events)",
    "int MPI_T_category_get_events(int cat_index, int len, int indices[])",
    "int MPI_T_event_get_num(int *num_events)",
    "int MPI_T_source_get_num(int *num_sources)",
];

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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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
        #[unsafe(no_mangle)]
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

/// No enumeration exists, so no handle of one is valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_enum_get_info(
    _enumtype: MPI_T_enum,
    _num: *mut c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_enum_get_item(
    _enumtype: MPI_T_enum,
    _indx: c_int,
    _value: *mut c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    _cvar_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _datatype: *mut MPI_Datatype,
    _enumtype: *mut MPI_T_enum,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
    _scope: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

/// The name lookups: no variable, category or event has a name.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_cvar_get_index(_name: *const c_char, _index: *mut c_int) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_NAME))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_pvar_get_index(
    _name: *const c_char,
    _var_class: c_int,
    _index: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_NAME))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_category_get_index(
    _name: *const c_char,
    _index: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_NAME))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(
    _cvar_index: c_int,
    _obj_handle: *mut c_void,
    _handle: *mut MPI_T_cvar_handle,
    _count: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

/// No control variable handle can be allocated, so none is valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(_handle: *mut MPI_T_cvar_handle) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_cvar_read(_handle: MPI_T_cvar_handle, _buf: *mut c_void) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_cvar_write(
    _handle: MPI_T_cvar_handle,
    _buf: *const c_void,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    _pvar_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _var_class: *mut c_int,
    _datatype: *mut MPI_Datatype,
    _enumtype: *mut MPI_T_enum,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
    _readonly: *mut c_int,
    _continuous: *mut c_int,
    _atomic: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_pvar_start(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_pvar_stop(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_pvar_reset(
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> c_int {
    tool(|t| t.all_handles(session, handle))
}

/// Reading and writing need one real handle, and there are none.
#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_T_category_get_info(
    _cat_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _num_cvars: *mut c_int,
    _num_pvars: *mut c_int,
    _num_categories: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

/// The per-category queries: no category index is valid.
macro_rules! category_lists {
    ($($name:ident),*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(_cat_index: c_int, _len: c_int, _indices: *mut c_int) -> c_int {
            tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
        }
    )*};
}

category_lists!(
    MPI_T_category_get_cvars,
    MPI_T_category_get_pvars,
    MPI_T_category_get_categories,
    MPI_T_category_get_events
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_category_get_num_events(
    _cat_index: c_int,
    _num_events: *mut c_int,
) -> c_int {
    tool(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

/// The categories never change: the stamp stays 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_T_category_changed(update_number: *mut c_int) -> c_int {
    // SAFETY: output argument.
    tool(|_| unsafe { put(update_number, 0) })
}
