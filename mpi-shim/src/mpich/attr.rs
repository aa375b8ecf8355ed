//! Attribute caching on communicators and datatypes (MPI-4.0 §7.7), with
//! the MPI-1 forms (`MPI_Keyval_create`, `MPI_Attr_*`) and the predefined
//! attributes of `MPI_COMM_WORLD` (MPI-4.0 §9.1.1, served on every
//! communicator).
//!
//! Copy and delete callbacks are the application's functions and may call
//! MPI, so they run without the library lock: each function here takes
//! the lock ([`locked`]) for its steps and calls the callbacks in between.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::core::AppFn;
use crate::core::attr::{self, Attr, Keyval, Object, Predefined, Value};

/// `MPI_Comm_copy_attr_function` / `MPI_Type_copy_attr_function` (the
/// handle is an `int` in this ABI).
pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;

/// `MPI_Comm_delete_attr_function` / `MPI_Type_delete_attr_function`.
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// The predefined attribute keys, in the order of [`PREDEFINED_VALUES`].
const PREDEFINED_KEYS: [(c_int, Predefined); 7] = [
    (abi::MPI_TAG_UB, Predefined::TagUb),
    (abi::MPI_HOST, Predefined::Host),
    (abi::MPI_IO, Predefined::Io),
    (abi::MPI_WTIME_IS_GLOBAL, Predefined::WtimeIsGlobal),
    (abi::MPI_UNIVERSE_SIZE, Predefined::UniverseSize),
    (abi::MPI_LASTUSEDCODE, Predefined::LastUsedCode),
    (abi::MPI_APPNUM, Predefined::Appnum),
];

/// The predefined attributes' values in MPICH's numbers, each behind a
/// stable address: `MPI_Comm_get_attr` hands out pointers to them (an
/// `AtomicI32` is laid out as the `int` the application reads), and
/// [`refresh_last_used`] keeps `MPI_LASTUSEDCODE` current behind its
/// pointer.
static PREDEFINED_VALUES: [AtomicI32; 7] = [const { AtomicI32::new(0) }; 7];

fn predefined_index(keyval: c_int) -> Option<usize> {
    PREDEFINED_KEYS.iter().position(|&(k, _)| k == keyval)
}

/// The address of the value of predefined key `keyval`, refreshed from
/// the runtime.
fn predefined_value(rt: &Runtime, keyval: c_int) -> Option<*const c_int> {
    let i = predefined_index(keyval)?;
    let v = match rt.predefined_attr(PREDEFINED_KEYS[i].1) {
        Value::Int(v) => v,
        Value::Rank(r) => rank_out(Some(r)),
        Value::LastCode(c) => codes::last_used_out(c),
    };
    PREDEFINED_VALUES[i].store(v, Ordering::Relaxed);
    Some(PREDEFINED_VALUES[i].as_ptr().cast_const())
}

/// Keep `MPI_LASTUSEDCODE` behind the pointer the application may hold
/// in step with the codes added and removed.
pub(super) fn refresh_last_used(rt: &Runtime) {
    predefined_value(rt, abi::MPI_LASTUSEDCODE);
}

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn, MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state)",
    "int MPI_Comm_free_keyval(int *comm_keyval)",
    "int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)",
    "int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)",
    "int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)",
    "int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state)",
    "int MPI_Keyval_free(int *keyval)",
    "int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)",
    "int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)",
    "int MPI_Attr_delete(MPI_Comm comm, int keyval)",
    "int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn, MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state)",
    "int MPI_Type_free_keyval(int *type_keyval)",
    "int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)",
    "int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)",
    "int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)",
    "int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn, MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state)",
    "int MPI_Win_free_keyval(int *win_keyval)",
    "int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)",
    "int MPI_Win_delete_attr(MPI_Win win, int win_keyval)",
];

/// The object attributes are cached on.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// A communicator slot.
    Comm(usize),
    /// A datatype handle.
    Type(MPI_Datatype),
    /// A window slot.
    Win(usize),
}

impl Target {
    fn object(self) -> Object {
        match self {
            Target::Comm(_) => Object::Comm,
            Target::Type(_) => Object::Datatype,
            Target::Win(_) => Object::Win,
        }
    }

    /// The handle the callbacks receive.
    fn handle(self) -> c_int {
        match self {
            Target::Comm(slot) => comm_handle(slot),
            Target::Type(h) => h,
            Target::Win(slot) => super::win::win_handle(slot),
        }
    }

    /// The target's attribute list (checking that the object exists).
    fn attrs(self, rt: &mut Runtime) -> MpiResult<&mut Vec<Attr>> {
        match self {
            Target::Comm(slot) => Ok(&mut rt.comm_mut(slot)?.attrs),
            Target::Type(h) => {
                datatype(rt, h)?;
                Ok(rt.attrs.types.entry(i64::from(h)).or_default())
            }
            Target::Win(slot) => Ok(&mut rt.win_mut(slot)?.attrs),
        }
    }
}

fn keyval_handle(slot: usize) -> c_int {
    abi::direct_handle(Kind::Keyval, slot)
}

/// The keyval slot of a user keyval handle.
fn keyval_slot(h: c_int) -> MpiResult<usize> {
    if predefined_index(h).is_some() {
        return Err(err(
            Class::Keyval,
            format!("predefined keyval {h:#x} cannot be changed"),
        ));
    }
    abi::direct_index(Kind::Keyval, h)
        .ok_or_else(|| err(Class::Keyval, format!("invalid keyval {h:#x}")))
}

/// Call the delete callback of `kv` (if any) for `value` on `target`.
fn run_delete(target: Target, kv_slot: usize, kv: &Keyval, value: usize) -> MpiResult<()> {
    let Some(delete) = kv.delete else {
        return Ok(());
    };
    // SAFETY: this layer registered a `DeleteFn` ([`create_keyval`]).
    let delete = unsafe { std::mem::transmute::<usize, DeleteFn>(delete.addr()) };
    // SAFETY: the application's delete callback (MPI-4.0 §7.7.2), called
    // with the arguments it was registered for.
    let rc = unsafe {
        delete(
            target.handle(),
            keyval_handle(kv_slot),
            value as *mut c_void,
            kv.extra as *mut c_void,
        )
    };
    if rc == abi::MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::new(
            codes::code_in(rc),
            format!("attribute delete callback returned {rc}"),
        ))
    }
}

/// Delete every attribute of `target`, running the delete callbacks, the
/// last set first; an attribute whose callback fails stays, and the error
/// is returned (`MPI_Comm_free`, `MPI_Finalize` for `MPI_COMM_SELF`, and
/// `MPI_Type_free` of the datatype code).
fn delete_all(name: &str, target: Target) -> MpiResult<()> {
    let attrs: Vec<(usize, Keyval, usize)> = locked(name, |rt| {
        let list = target.attrs(rt)?.clone();
        list.into_iter()
            .map(|(kv, v)| Ok((kv, rt.attrs.keyval(kv, target.object(), true)?, v)))
            .collect()
    })?;
    for (slot, kv, value) in attrs.into_iter().rev() {
        run_delete(target, slot, &kv, value)?;
        locked(name, |rt| Ok(attr::remove(target.attrs(rt)?, slot)))?;
    }
    Ok(())
}

/// Copy the attributes of `from` to `to` through their copy callbacks
/// (MPI-4.0 §7.7.2: a null callback copies nothing).
fn copy_all(name: &str, from: Target, to: Target) -> MpiResult<()> {
    let attrs: Vec<(usize, Keyval, usize)> = locked(name, |rt| {
        let list = from.attrs(rt)?.clone();
        list.into_iter()
            .map(|(kv, v)| Ok((kv, rt.attrs.keyval(kv, from.object(), true)?, v)))
            .collect()
    })?;
    let mut copies = Vec::new();
    for (slot, kv, value) in attrs {
        let Some(copy) = kv.copy else { continue };
        // SAFETY: this layer registered a `CopyFn` ([`create_keyval`]).
        let copy = unsafe { std::mem::transmute::<usize, CopyFn>(copy.addr()) };
        let (mut new, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        // SAFETY: the application's copy callback (MPI-4.0 §7.7.2), with
        // valid pointers for the new value and the flag.
        let rc = unsafe {
            copy(
                from.handle(),
                keyval_handle(slot),
                kv.extra as *mut c_void,
                value as *mut c_void,
                (&raw mut new).cast(),
                &mut flag,
            )
        };
        if rc != abi::MPI_SUCCESS {
            return Err(MpiError::new(
                codes::code_in(rc),
                format!("attribute copy callback returned {rc}"),
            ));
        }
        if flag != 0 {
            copies.push((slot, new as usize));
        }
    }
    locked(name, |rt| {
        let list = to.attrs(rt)?;
        for (slot, v) in copies {
            attr::store(list, slot, v);
        }
        Ok(())
    })
}

/// Attribute copies for `MPI_Comm_dup` and friends.
pub(crate) fn copy_comm_attrs(name: &str, from: usize, to: usize) -> MpiResult<()> {
    copy_all(name, Target::Comm(from), Target::Comm(to))
}

/// Attribute deletion for `MPI_Comm_free` and `MPI_Finalize`.
pub(crate) fn delete_comm_attrs(name: &str, slot: usize) -> MpiResult<()> {
    delete_all(name, Target::Comm(slot))
}

/// Attribute copies for `MPI_Type_dup`.
pub(crate) fn copy_type_attrs(name: &str, from: MPI_Datatype, to: MPI_Datatype) -> MpiResult<()> {
    copy_all(name, Target::Type(from), Target::Type(to))
}

/// Attribute deletion for `MPI_Type_free`, before the type goes (which
/// drops the handle's entry of `rt.attrs.types`).
pub(crate) fn delete_win_attrs(name: &str, slot: usize) -> MpiResult<()> {
    delete_all(name, Target::Win(slot))
}

pub(crate) fn delete_type_attrs(name: &str, dt: MPI_Datatype) -> MpiResult<()> {
    delete_all(name, Target::Type(dt))
}

fn create_keyval(
    name: &str,
    object: Object,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        nonnull(keyval, "keyval")?;
        let slot = rt.attrs.create_keyval(Keyval {
            object,
            copy: copy.map(|f| AppFn::new(f as usize)),
            delete: delete.map(|f| AppFn::new(f as usize)),
            extra: extra as usize,
            freed: false,
        });
        // SAFETY: output argument, checked non-null.
        unsafe { out(keyval, keyval_handle(slot)) }
    })
}

fn free_keyval(name: &str, object: Object, keyval: *mut c_int) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        nonnull(keyval, "keyval")?;
        // SAFETY: non-null pointer to the caller's keyval.
        let slot = keyval_slot(unsafe { *keyval })?;
        rt.attrs.free_keyval(slot, object)?;
        // SAFETY: as above.
        unsafe { out(keyval, abi::MPI_KEYVAL_INVALID) }
    })
}

/// Set `keyval` on `target` to `value`, deleting the old value first.
fn set_attr(
    name: &str,
    err_comm: MPI_Comm,
    target: impl FnOnce(&Runtime) -> MpiResult<Target>,
    keyval: c_int,
    value: *mut c_void,
) -> c_int {
    call_unlocked(name, err_comm, || {
        let (target, slot, kv, old) = locked(name, |rt| {
            let target = target(rt)?;
            let slot = keyval_slot(keyval)?;
            let kv = rt.attrs.keyval(slot, target.object(), false)?;
            let old = attr::lookup(target.attrs(rt)?, slot);
            Ok((target, slot, kv, old))
        })?;
        if let Some(v) = old {
            run_delete(target, slot, &kv, v)?;
        }
        locked(name, |rt| {
            attr::store(target.attrs(rt)?, slot, value as usize);
            Ok(())
        })
    })
}

/// Write the value of `keyval` on `target` through `value` (a `void **`).
fn get_attr(
    name: &str,
    err_comm: MPI_Comm,
    target: impl FnOnce(&Runtime) -> MpiResult<Target>,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call(name, err_comm, |rt| {
        let target = target(rt)?;
        nonnull(flag, "flag")?;
        let found = match (target, predefined_value(rt, keyval)) {
            (Target::Comm(_), Some(p)) => Some(p as usize),
            _ => {
                let slot = abi::direct_index(Kind::Keyval, keyval)
                    .ok_or_else(|| err(Class::Keyval, format!("invalid keyval {keyval:#x}")))?;
                rt.attrs.keyval(slot, target.object(), true)?;
                attr::lookup(target.attrs(rt)?, slot)
            }
        };
        if let Some(v) = found {
            // SAFETY: `value` is where the application wants the
            // attribute's pointer-sized value (a `void **`, MPI-4.0 §7.7.2).
            unsafe { out(value.cast::<usize>(), v) }?;
        }
        // SAFETY: output argument, checked non-null.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

/// Delete `keyval` from `target` (nothing to do if it is not set).
fn delete_attr(
    name: &str,
    err_comm: MPI_Comm,
    target: impl FnOnce(&Runtime) -> MpiResult<Target>,
    keyval: c_int,
) -> c_int {
    call_unlocked(name, err_comm, || {
        let (target, slot, kv, old) = locked(name, |rt| {
            let target = target(rt)?;
            let slot = keyval_slot(keyval)?;
            let kv = rt.attrs.keyval(slot, target.object(), true)?;
            let old = attr::lookup(target.attrs(rt)?, slot);
            Ok((target, slot, kv, old))
        })?;
        let Some(v) = old else { return Ok(()) };
        run_delete(target, slot, &kv, v)?;
        locked(name, |rt| {
            attr::remove(target.attrs(rt)?, slot);
            Ok(())
        })
    })
}

fn comm_target(comm: MPI_Comm) -> impl FnOnce(&Runtime) -> MpiResult<Target> {
    move |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        Ok(Target::Comm(slot))
    }
}

fn win_target(slot: usize) -> impl FnOnce(&Runtime) -> MpiResult<Target> {
    move |rt| {
        rt.win(slot)?;
        Ok(Target::Win(slot))
    }
}

fn type_target(dt: MPI_Datatype) -> impl FnOnce(&Runtime) -> MpiResult<Target> {
    move |rt| {
        datatype(rt, dt)?;
        Ok(Target::Type(dt))
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: Option<CopyFn>,
    comm_delete_attr_fn: Option<DeleteFn>,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Comm_create_keyval",
        Object::Comm,
        comm_copy_attr_fn,
        comm_delete_attr_fn,
        comm_keyval,
        extra_state,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Comm_free_keyval", Object::Comm, comm_keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_set_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    set_attr(
        "MPI_Comm_set_attr",
        comm,
        comm_target(comm),
        comm_keyval,
        attribute_val,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    get_attr(
        "MPI_Comm_get_attr",
        comm,
        comm_target(comm),
        comm_keyval,
        attribute_val,
        flag,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> c_int {
    delete_attr("MPI_Comm_delete_attr", comm, comm_target(comm), comm_keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: Option<CopyFn>,
    delete_fn: Option<DeleteFn>,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Keyval_create",
        Object::Comm,
        copy_fn,
        delete_fn,
        keyval,
        extra_state,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Keyval_free", Object::Comm, keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Attr_put(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    set_attr(
        "MPI_Attr_put",
        comm,
        comm_target(comm),
        keyval,
        attribute_val,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    get_attr(
        "MPI_Attr_get",
        comm,
        comm_target(comm),
        keyval,
        attribute_val,
        flag,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    delete_attr("MPI_Attr_delete", comm, comm_target(comm), keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: Option<CopyFn>,
    type_delete_attr_fn: Option<DeleteFn>,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Type_create_keyval",
        Object::Datatype,
        type_copy_attr_fn,
        type_delete_attr_fn,
        type_keyval,
        extra_state,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Type_free_keyval", Object::Datatype, type_keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_set_attr(
    datatype: MPI_Datatype,
    type_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    set_attr(
        "MPI_Type_set_attr",
        abi::MPI_COMM_WORLD,
        type_target(datatype),
        type_keyval,
        attribute_val,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_get_attr(
    datatype: MPI_Datatype,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    get_attr(
        "MPI_Type_get_attr",
        abi::MPI_COMM_WORLD,
        type_target(datatype),
        type_keyval,
        attribute_val,
        flag,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) -> c_int {
    delete_attr(
        "MPI_Type_delete_attr",
        abi::MPI_COMM_WORLD,
        type_target(datatype),
        type_keyval,
    )
}

// ---------------------------------------------------------------------
// Window attributes (MPI-4.1 §12.2.7). Windows are never copied, so the
// copy callback is kept but never called. Errors of these calls go to
// `MPI_COMM_WORLD`'s handler, as for datatypes.

/// The window slot of a handle, for the attribute calls.
fn win_of(rt: &Runtime, win: crate::abi::MPI_Win) -> MpiResult<usize> {
    abi::direct_index(Kind::Win, win)
        .filter(|&s| rt.win(s).is_ok())
        .ok_or_else(|| err(Class::Win, format!("invalid window {win:#x}")))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    win_copy_attr_fn: Option<CopyFn>,
    win_delete_attr_fn: Option<DeleteFn>,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Win_create_keyval",
        Object::Win,
        win_copy_attr_fn,
        win_delete_attr_fn,
        win_keyval,
        extra_state,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    free_keyval("MPI_Win_free_keyval", Object::Win, win_keyval)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_set_attr(
    win: crate::abi::MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
) -> c_int {
    let slot = locked("MPI_Win_set_attr", |rt| win_of(rt, win));
    match slot {
        Ok(slot) => set_attr(
            "MPI_Win_set_attr",
            abi::MPI_COMM_WORLD,
            win_target(slot),
            win_keyval,
            attribute_val,
        ),
        Err(e) => fail("MPI_Win_set_attr", abi::MPI_COMM_WORLD, e),
    }
}

/// A user keyval's value on window `slot` (`MPI_Win_get_attr` answers
/// the predefined ones itself).
pub(crate) fn get_win_attr(
    slot: usize,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    get_attr(
        "MPI_Win_get_attr",
        abi::MPI_COMM_WORLD,
        win_target(slot),
        keyval,
        value,
        flag,
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: crate::abi::MPI_Win, win_keyval: c_int) -> c_int {
    let slot = locked("MPI_Win_delete_attr", |rt| win_of(rt, win));
    match slot {
        Ok(slot) => delete_attr(
            "MPI_Win_delete_attr",
            abi::MPI_COMM_WORLD,
            win_target(slot),
            win_keyval,
        ),
        Err(e) => fail("MPI_Win_delete_attr", abi::MPI_COMM_WORLD, e),
    }
}
