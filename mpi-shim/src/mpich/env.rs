//! Start-up, shutdown, the environment.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;
use crate::core::session::ThreadLevel;

const THREAD_LEVELS: [(c_int, ThreadLevel); 4] = [
    (abi::MPI_THREAD_SINGLE, ThreadLevel::Single),
    (abi::MPI_THREAD_FUNNELED, ThreadLevel::Funneled),
    (abi::MPI_THREAD_SERIALIZED, ThreadLevel::Serialized),
    (abi::MPI_THREAD_MULTIPLE, ThreadLevel::Multiple),
];

/// A required thread level; a value beyond the ends counts as the end.
fn thread_level_in(v: c_int) -> ThreadLevel {
    THREAD_LEVELS
        .iter()
        .rev()
        .find(|(c, _)| v >= *c)
        .map_or(ThreadLevel::Single, |&(_, l)| l)
}

fn thread_level_out(level: ThreadLevel) -> c_int {
    THREAD_LEVELS
        .iter()
        .find(|(_, l)| *l == level)
        .map(|&(c, _)| c)
        .expect("every level has its value")
}

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Init(int *argc, char ***argv)",
    "int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)",
    "int MPI_Initialized(int *flag)",
    "int MPI_Finalized(int *flag)",
    "int MPI_Finalize(void)",
    "int MPI_Query_thread(int *provided)",
    "int MPI_Is_thread_main(int *flag)",
    "int MPI_Abort(MPI_Comm comm, int errorcode)",
    "int MPI_Get_version(int *version, int *subversion)",
    "int MPI_Get_library_version(char *version, int *resultlen)",
    "int MPI_Get_processor_name(char *name, int *resultlen)",
    "int MPI_Get_hw_resource_info(MPI_Info *hw_info)",
    "double MPI_Wtime(void)",
    "double MPI_Wtick(void)",
];

// ---------------------------------------------------------------------
// Start-up, shutdown, environment (MPI-4.0 §11.2: the world model).

/// The runtime, started now if this is the process's first initialization
/// (world model or session). Starting it registers [`leave_job`] to run at
/// exit.
pub(crate) fn start(state: &mut Library) -> MpiResult<&mut Runtime> {
    match state {
        Library::Running(_) => {}
        Library::Before => {
            let rt = Runtime::new()?;
            // SAFETY: `leave_job` is an `extern "C"` function of this
            // library, which stays loaded until exit (it is linked, and
            // the runtime it finalizes lives in a static).
            if unsafe { on_exit(leave_job, std::ptr::null_mut()) } != 0 {
                core::report("cannot register the exit handler");
            }
            *state = Library::Running(Box::new(rt));
        }
        Library::Exited => {
            return Err(err(
                Class::Other,
                "the library already left the job (the process is exiting)",
            ));
        }
    }
    match state {
        Library::Running(rt) => Ok(rt),
        _ => unreachable!("started above"),
    }
}

unsafe extern "C" {
    /// glibc's `on_exit(3)`: like `atexit`, with the exit status.
    fn on_exit(function: extern "C" fn(status: c_int, arg: *mut c_void), arg: *mut c_void)
    -> c_int;
}

/// At exit with status 0: leave the job (the engine's fence and PMI
/// `finalize`), which the library does once per process, whatever
/// sessions and world model came and went (see [`crate::core`]). Skipped
/// when the process fails (non-zero status: the launcher ends the job) and
/// when it exits from inside an MPI call (an abort holds the library lock).
///
/// A process that exits with status 0 while the world model or a session
/// is still open (it returned from `main` without `MPI_Finalize`) must not
/// fence: its peers may be waiting for it and never come. It says so and
/// ends at once with status 1, without PMI `finalize`: its launcher (ours,
/// or Hydra, which may otherwise report the job's status as 0) sees a
/// failed rank and ends the job. At-exit handlers registered before the
/// library started do not run; C streams are flushed.
extern "C" fn leave_job(status: c_int, _arg: *mut c_void) {
    if status != 0 {
        return;
    }
    let Some(mut state) = core::try_state() else {
        return;
    };
    let Library::Running(rt) = std::mem::replace(&mut *state, Library::Exited) else {
        return;
    };
    core::publish_world(Phase::After);
    if let Some(missing) = unfinished(&rt) {
        core::report(&format!(
            "rank {} (pid {}) is exiting without calling {missing}: its peers may wait for it \
             forever; it exits with status 1, and the launcher ends the job",
            rt.ep.rank(),
            std::process::id()
        ));
        // Nothing of the runtime is released: the process is ending, and
        // tearing down an engine whose peers still run could block.
        std::mem::forget(rt);
        drop(state);
        // SAFETY: fflush(NULL) flushes every C stream and _exit ends the
        // process; neither has memory-safety preconditions.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(1);
        }
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.ep.finalize()));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => core::report(&format!("leaving the job at exit: {e}")),
        Err(_) => core::report("leaving the job at exit panicked"),
    }
}

/// What the process should have called before exiting: `MPI_Finalize`
/// while the world model runs, `MPI_Session_finalize` while a session of
/// its own is open; `None` when it finished.
fn unfinished(rt: &Runtime) -> Option<&'static str> {
    match rt.world {
        Phase::Running { .. } => Some("MPI_Finalize"),
        _ if rt.sessions.iter().next().is_some() => Some("MPI_Session_finalize"),
        _ => None,
    }
}

/// `MPI_Init` / `MPI_Init_thread`: the world model, built on a hidden
/// session. A second call is an error of class `MPI_ERR_OTHER`, raised on
/// `MPI_COMM_WORLD` (so `MPI_ERRORS_RETURN` returns it); a call after
/// `MPI_Finalize` ends the process with a message (no error handler
/// exists any more).
fn init(name: &str, required: c_int) -> c_int {
    if core::callback_runtime().is_some() {
        // The call running the callback holds the library: initializing
        // inside it cannot be right (nor wait for it).
        return call(name, abi::MPI_COMM_WORLD, |_| {
            Err(err(
                Class::Other,
                "MPI_Init called from an application callback inside an MPI call",
            ))
        });
    }
    let mut state = core::state_any_time();
    let fail = |why: String| -> ! {
        core::report(&format!("{name}: {why}"));
        std::process::exit(1);
    };
    match state.world() {
        Phase::Before => {}
        Phase::Running { .. } => {
            drop(state);
            return call(name, abi::MPI_COMM_WORLD, |_| {
                Err(err(
                    Class::Other,
                    "MPI was already initialized (MPI_Init and MPI_Init_thread may be called \
                     once, MPI-4.0 §11.2.1)",
                ))
            });
        }
        Phase::After => fail("MPI_Init after MPI_Finalize is erroneous (MPI-4.0 §11.2.2)".into()),
    }
    let rt = start(&mut state).unwrap_or_else(|e| fail(e.to_string()));
    let level = ThreadLevel::provided(thread_level_in(required));
    match rt.world_init(level) {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => raise_on(rt, name, Errhandler::Fatal, abi::MPI_COMM_WORLD, e).finish(),
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init("MPI_Init", abi::MPI_THREAD_SINGLE)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let rc = init("MPI_Init_thread", required);
    if rc != abi::MPI_SUCCESS {
        return rc;
    }
    call("MPI_Init_thread", abi::MPI_COMM_WORLD, |_| {
        // SAFETY: `provided` is an output argument.
        unsafe { out(provided, thread_level_out(core::world_threads().0)) }
    })
}

/// Whether `MPI_Init` has been called (sessions do not count, MPI-4.0
/// §11.2.5).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    let v = core::world_initialized();
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

/// Whether `MPI_Finalize` has completed (sessions do not count).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    let v = core::world_finalized();
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

/// Ends the world model: collective over `MPI_COMM_WORLD`. Open sessions
/// and the engine stay (the engine leaves the job at process exit).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Finalize() -> c_int {
    // MPI-4.0 §11.2.2: first the attributes of MPI_COMM_SELF are deleted,
    // as if it were freed, so that libraries can clean up.
    let rc = call_unlocked("MPI_Finalize", abi::MPI_COMM_SELF, || {
        super::attr::delete_comm_attrs("MPI_Finalize", core::SELF)
    });
    if rc != abi::MPI_SUCCESS {
        return rc;
    }
    call("MPI_Finalize", abi::MPI_COMM_WORLD, Runtime::world_finalize)
}

/// Any thread may call it at any time: it reads the published level
/// (`core::world_threads`) without the library lock, as
/// `MPI_Initialized` reads the phase.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    let (level, _) = core::world_threads();
    // SAFETY: `provided` is an output argument.
    unsafe { out(provided, thread_level_out(level)) }
        .map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

/// Without the library lock, as `MPI_Query_thread`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    let main = core::world_threads().1 == core::threads::number();
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, main as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    call("MPI_Abort", comm, |rt| {
        let who = rt.ep.rank();
        rt.ep.bootstrap().abort(
            errorcode,
            &format!("MPI_Abort(comm {comm:#x}, {errorcode}) called by rank {who}"),
        );
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    // Callable at any time, even before MPI_Init.
    // SAFETY: output arguments.
    let r = unsafe {
        out(version, abi::MPI_VERSION).and_then(|()| out(subversion, abi::MPI_SUBVERSION))
    };
    r.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    #[cfg(not(tessel_std_abi))]
    const ABI: &str = "MPICH ABI, libmpi.so.12";
    #[cfg(tessel_std_abi)]
    const ABI: &str = "MPI-5 standard ABI, libmpi_abi.so.1";
    let text = format!(
        "Tessel MPI {} ({ABI}; shared-memory engine)",
        env!("CARGO_PKG_VERSION")
    );
    let cap = abi::MPI_MAX_LIBRARY_VERSION_STRING as usize;
    // SAFETY: MPI_MAX_LIBRARY_VERSION_STRING bytes at `version`.
    unsafe { write_cstr(version, cap, &text, resultlen) }
        .map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Get_processor_name", abi::MPI_COMM_WORLD, |_| {
        let mut host = [0u8; 256];
        // SAFETY: gethostname writes at most `host.len()` bytes.
        let rc = unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) };
        let host = if rc == 0 {
            let end = host.iter().position(|&b| b == 0).unwrap_or(host.len());
            String::from_utf8_lossy(&host[..end]).into_owned()
        } else {
            "localhost".into()
        };
        let cap = abi::MPI_MAX_PROCESSOR_NAME as usize;
        // SAFETY: MPI_MAX_PROCESSOR_NAME bytes at `name`.
        unsafe { write_cstr(name, cap, &host, resultlen) }
    })
}

/// A new info object saying, for each hardware resource type this
/// machine has, whether the process is restricted to one instance of it
/// at this moment (MPI-4.1, "Inquire Hardware Resource Information";
/// [`core::hwsplit::resource_info`]). Needs no initialization, like the
/// info functions.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Get_hw_resource_info(hw_info: *mut MPI_Info) -> c_int {
    call_unlocked("MPI_Get_hw_resource_info", abi::MPI_COMM_WORLD, || {
        nonnull(hw_info, "hw_info")?;
        let info = super::info::new_info(core::hwsplit::my_resource_info());
        // SAFETY: output argument, checked non-null.
        unsafe { out(hw_info, info) }
    })
}

fn monotonic() -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Wtime() -> c_double {
    let ts = monotonic();
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Wtick() -> c_double {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_are_mpichs_values_and_clamp_beyond_the_ends() {
        for (v, level) in THREAD_LEVELS {
            assert_eq!((thread_level_in(v), thread_level_out(level)), (level, v));
        }
        assert_eq!(thread_level_in(-1), ThreadLevel::Single);
        assert_eq!(
            thread_level_in(abi::MPI_THREAD_MULTIPLE + 9),
            ThreadLevel::Multiple
        );
    }
}
