//! Info objects (MPI-4.0 §10): ordered key/value strings, usable before
//! `MPI_Init` and after `MPI_Finalize`, so they live in their own table
//! ([`core::info::table`]), not in the runtime. Slot 0 is `MPI_INFO_ENV`,
//! filled on first use and read-only.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;
use crate::core::info::{self, Info, InfoTable};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Info_create(MPI_Info *info)",
    "int MPI_Info_create_env(int argc, char *argv[], MPI_Info *info)",
    "int MPI_Info_set(MPI_Info info, const char *key, const char *value)",
    "int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)",
    "int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)",
    "int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)",
    "int MPI_Info_delete(MPI_Info info, const char *key)",
    "int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)",
    "int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)",
    "int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)",
    "int MPI_Info_free(MPI_Info *info)",
];

/// The table slot of an info handle.
fn info_slot(h: MPI_Info) -> MpiResult<usize> {
    match h {
        abi::MPI_INFO_ENV => Ok(info::ENV),
        h => abi::direct_index(Kind::Info, h)
            .filter(|&i| i != info::ENV)
            .ok_or_else(|| err(Class::Info, format!("invalid info object {h:#x}"))),
    }
}

fn info_handle(slot: usize) -> MPI_Info {
    if slot == info::ENV {
        abi::MPI_INFO_ENV
    } else {
        abi::direct_handle(Kind::Info, slot)
    }
}

/// What `MPI_INFO_ENV` holds (MPI-4.0 §11.2.3): the command, its
/// arguments, the job size, the host and the working directory.
fn environment() -> Info {
    let mut env = Info::default();
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut args = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned());
    if let Some(cmd) = args.next() {
        env.set("command", &cmd);
    }
    let rest: Vec<String> = args.collect();
    if !rest.is_empty() {
        env.set("argv", &rest.join(" "));
    }
    if let Ok(n) = std::env::var("PMI_SIZE") {
        env.set("maxprocs", &n);
    }
    let mut host = [0u8; 256];
    // SAFETY: gethostname writes at most `host.len()` bytes.
    if unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) } == 0 {
        let end = host.iter().position(|&b| b == 0).unwrap_or(host.len());
        env.set("host", &String::from_utf8_lossy(&host[..end]));
    }
    if let Ok(dir) = std::env::current_dir() {
        env.set("wdir", &dir.to_string_lossy());
    }
    env
}

/// The info object behind `h`.
fn get(t: &mut InfoTable, h: MPI_Info) -> MpiResult<&mut Info> {
    let slot = info_slot(h)?;
    if slot == info::ENV && t.get(slot).is_none() {
        t.set(info::ENV, environment());
    }
    t.get_mut(slot)
        .ok_or_else(|| err(Class::Info, format!("invalid info object {h:#x}")))
}

/// The info object behind `h`, which the application may change.
fn get_mutable(t: &mut InfoTable, h: MPI_Info) -> MpiResult<&mut Info> {
    if h == abi::MPI_INFO_ENV {
        return Err(err(Class::Info, "MPI_INFO_ENV is read-only"));
    }
    get(t, h)
}

/// A copy of the hints in `h` (none for `MPI_INFO_NULL`).
pub(crate) fn info_hints(h: MPI_Info) -> MpiResult<Info> {
    if h == abi::MPI_INFO_NULL {
        return Ok(Info::default());
    }
    Ok(get(&mut info::table(), h)?.clone())
}

/// Set `key` to `value` in the application's info object `h`.
pub(crate) fn set_hint(h: MPI_Info, key: &str, value: &str) -> MpiResult<()> {
    get_mutable(&mut info::table(), h)?.set(key, value);
    Ok(())
}

/// Store `i` as a new info object; its handle.
pub(crate) fn new_info(i: Info) -> MPI_Info {
    info_handle(info::table().insert(i))
}

/// Run `f` on the info table; an error goes to `MPI_COMM_WORLD`'s handler
/// once the table is unlocked.
fn info_call(name: &str, f: impl FnOnce(&mut InfoTable) -> MpiResult<()>) -> c_int {
    let res = f(&mut info::table());
    match res {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => fail(name, abi::MPI_COMM_WORLD, e),
    }
}

/// A checked key (MPI-4.0 §10: at most `MPI_MAX_INFO_KEY` characters).
///
/// # Safety
/// A non-null `key` is NUL-terminated (MPI contract).
unsafe fn key_of(key: *const c_char) -> MpiResult<String> {
    // SAFETY: forwarded.
    let k = unsafe { read_cstr(key, Class::InfoKey, "key") }?;
    if k.is_empty() || k.len() > abi::MPI_MAX_INFO_KEY as usize {
        return Err(err(
            Class::InfoKey,
            format!("info key of {} characters", k.len()),
        ));
    }
    Ok(k)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_create", |t| {
        nonnull(info, "info")?;
        let h = info_handle(t.insert(Info::default()));
        // SAFETY: output argument.
        unsafe { out(info, h) }
    })
}

/// A new info object with the contents of `MPI_INFO_ENV`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_create_env(
    _argc: c_int,
    _argv: *mut *mut c_char,
    info: *mut MPI_Info,
) -> c_int {
    info_call("MPI_Info_create_env", |t| {
        nonnull(info, "info")?;
        let env = get(t, abi::MPI_INFO_ENV)?.clone();
        let h = info_handle(t.insert(env));
        // SAFETY: output argument.
        unsafe { out(info, h) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_set(
    info: MPI_Info,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    info_call("MPI_Info_set", |t| {
        let i = get_mutable(t, info)?;
        // SAFETY: NUL-terminated strings (MPI contract).
        let (k, v) = unsafe { (key_of(key)?, read_cstr(value, Class::InfoValue, "value")?) };
        if v.len() > abi::MPI_MAX_INFO_VAL as usize {
            return Err(err(
                Class::InfoValue,
                format!("info value of {} characters", v.len()),
            ));
        }
        i.set(&k, &v);
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get", |t| {
        let i = get(t, info)?;
        // SAFETY: NUL-terminated key (MPI contract).
        let k = unsafe { key_of(key) }?;
        if valuelen < 0 {
            return Err(err(Class::Arg, format!("negative valuelen {valuelen}")));
        }
        nonnull(flag, "flag")?;
        let found = i.get(&k);
        if let Some(v) = found {
            // SAFETY: `valuelen + 1` bytes at `value` (MPI contract).
            unsafe { copy_cstr(value, valuelen as usize + 1, v) }?;
        }
        // SAFETY: output argument.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get_valuelen", |t| {
        let i = get(t, info)?;
        // SAFETY: NUL-terminated key (MPI contract).
        let k = unsafe { key_of(key) }?;
        nonnull(flag, "flag")?;
        let found = i.get(&k);
        if let Some(v) = found {
            // SAFETY: output argument.
            unsafe { out(valuelen, v.len() as c_int) }?;
        }
        // SAFETY: output argument.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

/// MPI-4.0 §10: `*buflen` in is the buffer's size, out the value's size
/// with its NUL; a value longer than the buffer is truncated.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get_string", |t| {
        let i = get(t, info)?;
        // SAFETY: NUL-terminated key (MPI contract).
        let k = unsafe { key_of(key) }?;
        nonnull(flag, "flag")?;
        nonnull(buflen, "buflen")?;
        // SAFETY: non-null in/out argument.
        let cap = unsafe { *buflen };
        if cap < 0 {
            return Err(err(Class::Arg, format!("negative buflen {cap}")));
        }
        let found = i.get(&k);
        if let Some(v) = found {
            if cap > 0 {
                // SAFETY: `*buflen` bytes at `value` (MPI contract).
                unsafe { copy_cstr(value, cap as usize, v) }?;
            }
            // SAFETY: output argument.
            unsafe { out(buflen, v.len() as c_int + 1) }?;
        }
        // SAFETY: output argument.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    info_call("MPI_Info_delete", |t| {
        let i = get_mutable(t, info)?;
        // SAFETY: NUL-terminated key (MPI contract).
        let k = unsafe { key_of(key) }?;
        if i.delete(&k) {
            Ok(())
        } else {
            Err(err(Class::InfoNokey, format!("no info key {k:?}")))
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    info_call("MPI_Info_get_nkeys", |t| {
        let n = get(t, info)?.entries.len() as c_int;
        // SAFETY: output argument.
        unsafe { out(nkeys, n) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    info_call("MPI_Info_get_nthkey", |t| {
        let i = get(t, info)?;
        let (k, _) = usize::try_from(n)
            .ok()
            .and_then(|n| i.entries.get(n))
            .ok_or_else(|| {
                err(
                    Class::Arg,
                    format!(
                        "key number {n} of an info object with {} keys",
                        i.entries.len()
                    ),
                )
            })?;
        let cap = abi::MPI_MAX_INFO_KEY as usize + 1;
        // SAFETY: MPI_MAX_INFO_KEY + 1 bytes at `key` (MPI contract).
        unsafe { copy_cstr(key, cap, k) }.map(drop)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_dup", |t| {
        let copy = get(t, info)?.clone();
        nonnull(newinfo, "newinfo")?;
        let h = info_handle(t.insert(copy));
        // SAFETY: output argument.
        unsafe { out(newinfo, h) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    info_call("MPI_Info_free", |t| {
        nonnull(info, "info")?;
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *info };
        get_mutable(t, h)?;
        t.remove(info_slot(h)?);
        // SAFETY: as above.
        unsafe { out(info, abi::MPI_INFO_NULL) }
    })
}
