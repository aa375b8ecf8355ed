//! Sessions (MPI-4.0 §11.3): start-up without `MPI_COMM_WORLD`, process
//! sets, groups and communicators made from them, session error handlers.
//!
//! Session handles use MPICH's session kind (`0xe`, the kind of
//! `MPI_SESSION_NULL`) in the direct encoding. Errors go to the session's
//! handler; an invalid session handle goes to the default handler
//! ([`Runtime::default_errhandler`]). A user-defined session handler is called
//! after the library lock is released, so it may call MPI itself.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::CStr;

use super::*;
use crate::abi::{MPI_Group, MPI_Info, MPI_Session};
use crate::core::errh;
use crate::core::info::{self, Info};
use crate::core::session::{PsetOp, Session, ThreadLevel};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)",
    "int MPI_Session_finalize(MPI_Session *session)",
    "int MPI_Session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names)",
    "int MPI_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len, char *pset_name)",
    "int MPI_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info)",
    "int MPI_Session_get_info(MPI_Session session, MPI_Info *info_used)",
    "int MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup)",
    "int MPIX_Pset_create_op(MPI_Session session, MPI_Info hints, const char *pset1, const char *pset2, int op, char *pset_result)",
    "int MPIX_Session_get_psets(MPI_Session session, MPI_Info info, MPI_Info *psets)",
    "int MPIX_Dynres_get(MPI_Session session, int *rc_type, char *delta_pset, int *tag, MPI_Info *info)",
    "int MPIX_Dynres_accept(MPI_Session session, int tag, MPI_Info info)",
    "int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm *newcomm)",
    "int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group, int remote_leader, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm *newintercomm)",
    "int MPI_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler)",
    "int MPI_Session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler)",
    "int MPI_Session_create_errhandler(MPI_Session_errhandler_function *session_errhandler_fn, MPI_Errhandler *errhandler)",
    "int MPI_Session_call_errhandler(MPI_Session session, int errorcode)",
];

// ---------------------------------------------------------------------
// Handles.

fn session_handle(slot: usize) -> MPI_Session {
    abi::direct_handle(Kind::Session, slot)
}

fn session_slot(h: MPI_Session) -> MpiResult<usize> {
    abi::direct_index(Kind::Session, h)
        .ok_or_else(|| err(Class::Session, format!("invalid session {h:#x}")))
}

/// Group slot 0 is `MPI_GROUP_EMPTY`; the others are direct handles.
fn group_handle(slot: usize) -> MPI_Group {
    match slot {
        0 => abi::MPI_GROUP_EMPTY,
        i => abi::direct_handle(Kind::Group, i),
    }
}

fn group_slot(rt: &Runtime, h: MPI_Group) -> MpiResult<usize> {
    let slot = match h {
        abi::MPI_GROUP_EMPTY => Some(0),
        h => abi::direct_index(Kind::Group, h),
    };
    slot.filter(|&s| rt.groups.get(s).is_some())
        .ok_or_else(|| err(Class::Group, format!("invalid group {h:#x}")))
}

/// A copy of the info object `h` (empty for `MPI_INFO_NULL`).
fn read_info(h: MPI_Info) -> MpiResult<Info> {
    if h == abi::MPI_INFO_NULL {
        return Ok(Info::default());
    }
    abi::direct_index(Kind::Info, h)
        .and_then(|slot| info::table().get(slot).cloned())
        .ok_or_else(|| err(Class::Info, format!("invalid info {h:#x}")))
}

/// A new info object holding `entries`; its handle.
fn new_info(entries: &[(&str, String)]) -> MPI_Info {
    let mut i = Info::default();
    for (k, v) in entries {
        i.set(k, v);
    }
    abi::direct_handle(Kind::Info, info::table().insert(i))
}

/// A C string argument.
///
/// # Safety
/// `s` is null or a NUL-terminated string (MPI contract).
unsafe fn c_str<'a>(s: *const c_char, what: &str) -> MpiResult<&'a str> {
    if s.is_null() {
        return Err(err(Class::Arg, format!("null {what}")));
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| err(Class::Arg, format!("{what} is not UTF-8")))
}

/// A handler a session may have: predefined, or made for sessions.
fn session_errhandler(h: MPI_Errhandler) -> MpiResult<Errhandler> {
    match errhandler_in(h) {
        Some(e) if e.is_predefined() => Ok(e),
        Some(Errhandler::Session(s)) if errh::session_handler(s).is_some() => {
            Ok(Errhandler::Session(s))
        }
        _ => Err(err(
            Class::Arg,
            format!("invalid session error handler {h:#x}"),
        )),
    }
}

// ---------------------------------------------------------------------
// Calling into the runtime.

/// Whose error handler an error of the call goes to.
#[derive(Clone, Copy)]
enum Target {
    /// The session's (the default handler if the handle is invalid).
    Session(MPI_Session),
    /// This handler, if it is a valid one (else the default handler).
    Handler(MPI_Errhandler),
}

/// How a session function enters the library.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// `MPI_Session_init`: any thread, any time; starts the runtime if
    /// there is none yet.
    Start,
    /// Any thread, any time (`core::threads::Caller::AnyTime`).
    AnyTime,
    /// The application's calls (`core::threads::Caller::Serial`).
    Serial,
}

/// Run `f` on the runtime (entering as `entry` says) and raise its error
/// on `target`'s handler.
fn run(
    name: &str,
    target: Target,
    entry: Entry,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    let outcome = if entry == Entry::Start && core::callback_runtime().is_none() {
        let mut state = core::state_any_time();
        match super::env::start(&mut state) {
            Ok(rt) => core::in_call(rt, |rt| settle(rt, name, target, f)),
            Err(e) => {
                // No runtime: nothing to abort through but the process.
                core::report(&format!("{name}: {e}"));
                if matches!(target, Target::Handler(abi::MPI_ERRORS_RETURN)) {
                    return super::codes::code_out(e.code);
                }
                std::process::exit(1);
            }
        }
    } else if entry == Entry::Serial {
        super::gate(name, |rt| settle(rt, name, target, f))
    } else {
        super::gate_any_time(name, |rt| settle(rt, name, target, f))
    };
    // The library lock is released: an application's handler may call MPI.
    match outcome {
        Ok(()) => abi::MPI_SUCCESS,
        Err(h) => h.finish(),
    }
}

/// Run `f` and decide what its error calls for: `target`'s handler.
fn settle(
    rt: &mut Runtime,
    name: &str,
    target: Target,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> Result<(), Handled> {
    let e = match f(rt) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let (handler, session) = match target {
        Target::Session(s) => match session_slot(s).and_then(|slot| rt.session(slot)) {
            Ok(sess) => (sess.errhandler, s),
            Err(_) => (rt.default_errhandler(), abi::MPI_SESSION_NULL),
        },
        Target::Handler(h) => match session_errhandler(h) {
            Ok(h) => (h, abi::MPI_SESSION_NULL),
            Err(_) => (rt.default_errhandler(), abi::MPI_SESSION_NULL),
        },
    };
    // A session's own handler gets the session; a predefined one, or
    // the default, stands for the communicator-less call.
    let object = match handler {
        Errhandler::Session(_) => session,
        _ => abi::MPI_COMM_NULL,
    };
    Err(raise_on(rt, name, handler, object, e))
}

/// Run `f` for a function on session `session`: its errors go to the
/// session's error handler.
pub(super) fn in_session(
    name: &str,
    session: MPI_Session,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    run(name, Target::Session(session), Entry::Serial, f)
}

/// The session slot of `h`, valid in `rt`.
pub(super) fn session_of(rt: &Runtime, h: MPI_Session) -> MpiResult<usize> {
    let slot = session_slot(h)?;
    rt.session(slot)?;
    Ok(slot)
}

/// The thread level an info asks for with `thread_level` (MPI-4.0
/// §11.3.1), limited to what the library provides.
fn thread_level(info: &Info) -> ThreadLevel {
    let asked = info
        .get("thread_level")
        .map_or(ThreadLevel::Single, ThreadLevel::from_name);
    ThreadLevel::provided(asked)
}

// ---------------------------------------------------------------------
// Sessions.

/// Open a session; the first one (or `MPI_Init`) starts the engine.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    run(
        "MPI_Session_init",
        Target::Handler(errhandler),
        Entry::Start,
        |rt| {
            let errhandler = session_errhandler(errhandler)?;
            if session.is_null() {
                return Err(err(Class::Arg, "null session pointer"));
            }
            let level = thread_level(&read_info(info)?);
            let slot = rt.session_open(Session {
                errhandler,
                thread_level: level,
                hidden: false,
                bsend: None,
            });
            // SAFETY: non-null output argument.
            unsafe { out(session, session_handle(slot)) }
        },
    )
}

/// Close a session; local (MPI-4.0 §11.3.1 allows it to synchronize, but
/// the objects derived from the session are freed by their own calls).
/// The engine stays for later sessions.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let h = if session.is_null() {
        abi::MPI_SESSION_NULL
    } else {
        // SAFETY: non-null pointer to the caller's handle.
        unsafe { *session }
    };
    run(
        "MPI_Session_finalize",
        Target::Session(h),
        Entry::Serial,
        |rt| {
            rt.session_close(session_of(rt, h)?)?;
            // SAFETY: non-null (else `h` would be invalid above).
            unsafe { out(session, abi::MPI_SESSION_NULL) }
        },
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    session: MPI_Session,
    info: MPI_Info,
    npset_names: *mut c_int,
) -> c_int {
    run(
        "MPI_Session_get_num_psets",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            read_info(info)?;
            rt.refresh_psets()?;
            // SAFETY: output argument.
            unsafe { out(npset_names, rt.psets.len() as c_int) }
        },
    )
}

/// The name of set `n`. MPI-4.0 §11.3.2: with `*pset_len` 0 only the
/// length (NUL included) is returned; otherwise at most `*pset_len`
/// bytes are written, NUL-terminated, and `*pset_len` is set to the full
/// length so that a truncation shows.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    run(
        "MPI_Session_get_nth_pset",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            read_info(info)?;
            rt.refresh_psets()?;
            let name = usize::try_from(n)
                .ok()
                .and_then(|i| rt.psets.get(i))
                .map(|p| p.name.as_str())
                .ok_or_else(|| {
                    err(
                        Class::Arg,
                        format!("no process set {n}: there are {}", rt.psets.len()),
                    )
                })?;
            if pset_len.is_null() {
                return Err(err(Class::Arg, "null pset_len"));
            }
            // SAFETY: non-null in-out argument.
            let cap = unsafe { *pset_len };
            let full = name.len() as c_int + 1;
            if cap < 0 {
                return Err(err(Class::Arg, format!("negative pset_len {cap}")));
            }
            if cap > 0 {
                let mut written = 0;
                // SAFETY: the caller's buffer holds `cap` bytes.
                unsafe { write_cstr(pset_name, cap as usize, name, &mut written)? };
            }
            // SAFETY: non-null in-out argument.
            unsafe { out(pset_len, full) }
        },
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: MPI_Session,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> c_int {
    run(
        "MPI_Session_get_pset_info",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            // SAFETY: a C string argument.
            let name = unsafe { c_str(pset_name, "process set name")? };
            rt.refresh_psets()?;
            let size = rt.pset(name)?.members.len();
            if info.is_null() {
                return Err(err(Class::Arg, "null info pointer"));
            }
            // SAFETY: non-null output argument.
            unsafe { out(info, new_info(&[("mpi_size", size.to_string())])) }
        },
    )
}

/// The session's info: its `thread_level`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_get_info(
    session: MPI_Session,
    info_used: *mut MPI_Info,
) -> c_int {
    run(
        "MPI_Session_get_info",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            let level = rt.session(session_of(rt, session)?)?.thread_level;
            if info_used.is_null() {
                return Err(err(Class::Arg, "null info pointer"));
            }
            // A process a resource change added also gets the info the
            // accepting process gave.
            let extra = rt.dynres_info();
            let mut entries = vec![("thread_level", level.name().to_owned())];
            entries.extend(extra.iter().map(|(k, v)| (k.as_str(), v.clone())));
            // SAFETY: non-null output argument.
            unsafe { out(info_used, new_info(&entries)) }
        },
    )
}

/// A group of the process set's members, in its order (MPI-4.0 §11.3.3).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> c_int {
    run(
        "MPI_Group_from_session_pset",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            let s = session_of(rt, session)?;
            // SAFETY: a C string argument.
            let name = unsafe { c_str(pset_name, "process set name")? };
            rt.refresh_psets()?;
            rt.pset(name)?;
            if newgroup.is_null() {
                return Err(err(Class::Arg, "null group pointer"));
            }
            let slot = rt.group_from_pset(s, name)?;
            // SAFETY: non-null output argument.
            unsafe { out(newgroup, group_handle(slot)) }
        },
    )
}

/// `MPIX_Pset_create_op` (the seed's `MPIDYNRES_pset_create_op`): a new
/// process set, `op` (`MPIX_PSET_UNION`, `_DIFFERENCE`, `_INTERSECTION`)
/// of sets `pset1` and `pset2`, named `mpix://OP/N` (unique and never
/// reused), which every process of the launcher's jobs sees in its
/// sessions. The caller must be in one of the two sets. `pset_result`
/// holds `MPI_MAX_PSET_NAME_LEN` bytes.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Pset_create_op(
    session: MPI_Session,
    hints: MPI_Info,
    pset1: *const c_char,
    pset2: *const c_char,
    op: c_int,
    pset_result: *mut c_char,
) -> c_int {
    run(
        "MPIX_Pset_create_op",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            read_info(hints)?;
            // SAFETY: C string arguments.
            let (a, b) = unsafe {
                (
                    c_str(pset1, "process set name")?,
                    c_str(pset2, "process set name")?,
                )
            };
            let op = match op {
                abi::MPIX_PSET_UNION => PsetOp::Union,
                abi::MPIX_PSET_DIFFERENCE => PsetOp::Difference,
                abi::MPIX_PSET_INTERSECTION => PsetOp::Intersection,
                _ => {
                    return Err(err(
                        Class::Arg,
                        format!("unknown process set operation {op}"),
                    ));
                }
            };
            nonnull(pset_result, "pset_result")?;
            let name = rt.pset_create_op(a, b, op)?;
            // SAFETY: MPI_MAX_PSET_NAME_LEN bytes (the contract above).
            unsafe { copy_cstr(pset_result, abi::MPI_MAX_PSET_NAME_LEN as usize, &name) }
                .map(|_| ())
        },
    )
}

/// `MPIX_Session_get_psets` (the seed's `MPI_Session_get_psets`): a new
/// info object with the name of every process set the caller is in as a
/// key and the set's size, in decimal, as the value: a snapshot of the
/// sets as they are now. As in the seed, a process a resource change
/// added is not in `mpi://WORLD` (the processes started with the job).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Session_get_psets(
    session: MPI_Session,
    info: MPI_Info,
    psets: *mut MPI_Info,
) -> c_int {
    run(
        "MPIX_Session_get_psets",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            read_info(info)?;
            nonnull(psets, "psets")?;
            rt.refresh_psets()?;
            let (me, added) = (rt.ep.rank(), rt.added_by_change());
            let entries: Vec<(&str, String)> = rt
                .psets
                .iter()
                .filter(|p| p.members.contains(&me))
                .filter(|p| !(added && p.name == crate::core::session::WORLD_PSET))
                .map(|p| (p.name.as_str(), p.members.len().to_string()))
                .collect();
            // SAFETY: non-null output argument.
            unsafe { out(psets, new_info(&entries)) }
        },
    )
}

/// `MPIX_Dynres_get` (the seed's `MPIDYNRES_RC_get`): the resource change
/// `mpiexec --dynres` proposes now. `*rc_type` is `MPIX_DYNRES_NONE` (then
/// nothing else is written), `MPIX_DYNRES_ADD` or `MPIX_DYNRES_SUB`;
/// `delta_pset` (`MPI_MAX_PSET_NAME_LEN` bytes) names the processes added
/// or removed, `*tag` the change; `*info` is a new info object with the
/// change's `mpix_procs` (or `MPI_INFO_NULL` when `info` is null). Asking
/// again before accepting gives the same change.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Dynres_get(
    session: MPI_Session,
    rc_type: *mut c_int,
    delta_pset: *mut c_char,
    tag: *mut c_int,
    info: *mut MPI_Info,
) -> c_int {
    run(
        "MPIX_Dynres_get",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            nonnull(rc_type, "rc_type")?;
            let Some(c) = rt.dynres_get()? else {
                // SAFETY: non-null output argument.
                return unsafe { out(rc_type, abi::MPIX_DYNRES_NONE) };
            };
            nonnull(delta_pset, "delta_pset")?;
            nonnull(tag, "tag")?;
            // SAFETY: output arguments; MPI_MAX_PSET_NAME_LEN bytes at
            // `delta_pset` (the contract above).
            unsafe {
                copy_cstr(delta_pset, abi::MPI_MAX_PSET_NAME_LEN as usize, &c.delta)?;
                out(tag, c.tag as c_int)?;
                if !info.is_null() {
                    out(info, new_info(&[("mpix_procs", c.procs.to_string())]))?;
                }
                let kind = if c.add {
                    abi::MPIX_DYNRES_ADD
                } else {
                    abi::MPIX_DYNRES_SUB
                };
                out(rc_type, kind)
            }
        },
    )
}

/// `MPIX_Dynres_accept` (the seed's `MPIDYNRES_RC_accept`): accept change
/// `tag`. Processes it adds start now and find `info`'s entries in
/// `MPI_Session_get_info`; processes it removes leave when the
/// application lets them. A tag that is not pending (never proposed, or
/// accepted already) is `MPI_ERR_ARG`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPIX_Dynres_accept(
    session: MPI_Session,
    tag: c_int,
    info: MPI_Info,
) -> c_int {
    run(
        "MPIX_Dynres_accept",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            session_of(rt, session)?;
            let entries = read_info(info)?.entries;
            let tag =
                u32::try_from(tag).map_err(|_| err(Class::Arg, format!("invalid tag {tag}")))?;
            rt.dynres_accept(tag, entries)
        },
    )
}

/// Where the errors of a call that makes a communicator from groups go:
/// to `errhandler` when it is predefined.
fn from_group_target(errhandler: MPI_Errhandler) -> Target {
    if is_predefined_errhandler(errhandler) {
        Target::Handler(errhandler)
    } else {
        Target::Handler(abi::MPI_ERRHANDLER_NULL)
    }
}

/// The checked error handler, string tag and info of a call that makes a
/// communicator from groups.
///
/// # Safety
/// `stringtag` is null or a C string.
unsafe fn from_group_args<'a>(
    errhandler: MPI_Errhandler,
    stringtag: *const c_char,
    info: MPI_Info,
) -> MpiResult<(Errhandler, &'a str)> {
    if !is_predefined_errhandler(errhandler) {
        return Err(err(
            Class::Arg,
            format!("invalid communicator error handler {errhandler:#x}"),
        ));
    }
    // SAFETY: a C string argument.
    let tag = unsafe { c_str(stringtag, "string tag")? };
    if tag.len() >= abi::MPI_MAX_STRINGTAG_LEN as usize {
        return Err(err(
            Class::Arg,
            format!(
                "string tag of {} bytes (at most {})",
                tag.len(),
                abi::MPI_MAX_STRINGTAG_LEN - 1
            ),
        ));
    }
    read_info(info)?;
    Ok((checked_errhandler(errhandler)?, tag))
}

/// A communicator over `group`, collective over its members only (MPI-4.0
/// §7.4.2; the context-id agreement is in [`crate::core::session`]).
/// Errors go to `errhandler` when it is predefined, which is also the
/// new communicator's handler.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let target = from_group_target(errhandler);
    run("MPI_Comm_create_from_group", target, Entry::Serial, |rt| {
        let g = group_slot(rt, group)?;
        // SAFETY: forwarded from the caller.
        let (handler, tag) = unsafe { from_group_args(errhandler, stringtag, info)? };
        nonnull(newcomm, "newcomm")?;
        let group = rt.groups.get(g).expect("checked").clone();
        let slot = rt.comm_from_group(&group, tag, handler)?;
        let h = slot.map_or(abi::MPI_COMM_NULL, comm_handle);
        // SAFETY: non-null output argument.
        unsafe { out(newcomm, h) }
    })
}

/// An intercommunicator of two disjoint groups, collective over both
/// (MPI-4.1 §7.6.2; the context-id agreement is in
/// [`crate::core::intercomm`]). Errors go as for
/// `MPI_Comm_create_from_group`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    let target = from_group_target(errhandler);
    run(
        "MPI_Intercomm_create_from_groups",
        target,
        Entry::Serial,
        |rt| {
            let (l, r) = (group_slot(rt, local_group)?, group_slot(rt, remote_group)?);
            // SAFETY: forwarded from the caller.
            let (handler, tag) = unsafe { from_group_args(errhandler, stringtag, info)? };
            nonnull(newintercomm, "newintercomm")?;
            let local = rt.groups.get(l).expect("checked").clone();
            let remote = rt.groups.get(r).expect("checked").clone();
            let slot = rt.intercomm_from_groups(
                &local,
                local_leader,
                &remote,
                remote_leader,
                tag,
                handler,
            )?;
            // SAFETY: non-null output argument.
            unsafe { out(newintercomm, comm_handle(slot)) }
        },
    )
}

// ---------------------------------------------------------------------
// Session error handlers.

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Session_set_errhandler(
    session: MPI_Session,
    errhandler: MPI_Errhandler,
) -> c_int {
    run(
        "MPI_Session_set_errhandler",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            let slot = session_of(rt, session)?;
            rt.session_mut(slot)?.errhandler = session_errhandler(errhandler)?;
            Ok(())
        },
    )
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_get_errhandler(
    session: MPI_Session,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    run(
        "MPI_Session_get_errhandler",
        Target::Session(session),
        Entry::Serial,
        |rt| {
            let h = rt.session(session_of(rt, session)?)?.errhandler;
            if errhandler.is_null() {
                return Err(err(Class::Arg, "null output argument"));
            }
            // The application frees what a get returns (MPI-4.1 §9.3.1);
            // a session has a predefined handler or one made for sessions.
            if let Errhandler::Session(s) = h {
                errh::count_session_handler(s, 1);
            }
            // SAFETY: output argument.
            unsafe { out(errhandler, errhandler_out(h)) }
        },
    )
}

/// A handler for sessions; callable before initialization (MPI-4.0
/// §11.4.1), so errors are returned, not raised.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    session_errhandler_fn: Option<ErrhFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let Some(f) = session_errhandler_fn else {
        return abi::MPI_ERR_ARG;
    };
    if errhandler.is_null() {
        return abi::MPI_ERR_ARG;
    }
    let h = errhandler_out(Errhandler::Session(errh::create_session_handler(
        core::AppFn::new(f as usize),
    )));
    // SAFETY: non-null output argument.
    unsafe { out(errhandler, h) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

/// Invoke the session's handler with `errorcode`; `MPI_SUCCESS` when the
/// handler returns.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> c_int {
    let valid = super::gate_any_time("MPI_Session_call_errhandler", |rt| {
        session_of(rt, session).is_ok()
    });
    let rc = run(
        "MPI_Session_call_errhandler",
        Target::Session(session),
        Entry::AnyTime,
        |rt| {
            session_of(rt, session)?;
            Err(MpiError::new(
                super::codes::code_in(errorcode),
                "error raised by the application",
            ))
        },
    );
    if valid { abi::MPI_SUCCESS } else { rc }
}
