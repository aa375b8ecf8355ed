//! Start-up, shutdown, the environment.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

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
    "double MPI_Wtime(void)",
    "double MPI_Wtick(void)",
];

// ---------------------------------------------------------------------
// Start-up, shutdown, environment.

fn init(name: &str, required: c_int) -> c_int {
    let mut state = core::state();
    match &*state {
        Phase::Before => {}
        _ => {
            eprintln!("Tessel MPI: {name}: MPI was already initialized");
            std::process::exit(1);
        }
    }
    // One call at a time under the library lock: SERIALIZED is the most
    // this library supports.
    let level = required.clamp(abi::MPI_THREAD_SINGLE, abi::MPI_THREAD_SERIALIZED);
    match Runtime::new(level) {
        Ok(rt) => {
            *state = Phase::Running(Box::new(rt));
            abi::MPI_SUCCESS
        }
        Err(e) => {
            eprintln!("Tessel MPI: {name}: {e}");
            std::process::exit(1);
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init("MPI_Init", abi::MPI_THREAD_SINGLE)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let rc = init("MPI_Init_thread", required);
    call("MPI_Init_thread", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: `provided` is an output argument.
        unsafe { out(provided, rt.thread_level) }
    });
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    let v = !matches!(*core::state(), Phase::Before);
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    let v = matches!(*core::state(), Phase::After);
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Finalize() -> c_int {
    // MPI-4.0 §11.2.2: first the attributes of MPI_COMM_SELF are deleted,
    // as if it were freed, so libraries can clean up.
    let rc = call_unlocked("MPI_Finalize", abi::MPI_COMM_SELF, || {
        super::attr::delete_comm_attrs("MPI_Finalize", core::SELF)
    });
    if rc != abi::MPI_SUCCESS {
        return rc;
    }
    let rc = call("MPI_Finalize", abi::MPI_COMM_WORLD, |rt| {
        crate::coll::barrier(rt, core::WORLD)
    });
    if rc != abi::MPI_SUCCESS {
        return rc;
    }
    let mut state = core::state();
    let Phase::Running(rt) = std::mem::replace(&mut *state, Phase::After) else {
        unreachable!("call() checked the phase");
    };
    match rt.ep.finalize() {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => {
            eprintln!("Tessel MPI: MPI_Finalize: {e}");
            abi::MPI_ERR_OTHER
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    call("MPI_Query_thread", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: output argument.
        unsafe { out(provided, rt.thread_level) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    call("MPI_Is_thread_main", abi::MPI_COMM_WORLD, |rt| {
        let main = std::thread::current().id() == rt.main_thread;
        // SAFETY: output argument.
        unsafe { out(flag, main as c_int) }
    })
}

#[unsafe(no_mangle)]
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    // Callable at any time, even before MPI_Init.
    // SAFETY: output arguments.
    let r = unsafe {
        out(version, abi::MPI_VERSION).and_then(|()| out(subversion, abi::MPI_SUBVERSION))
    };
    r.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let text = concat!(
        "Tessel MPI ",
        env!("CARGO_PKG_VERSION"),
        " (MPICH ABI, libmpi.so.12; shared-memory engine)"
    );
    let cap = abi::MPI_MAX_LIBRARY_VERSION_STRING as usize;
    // SAFETY: MPI_MAX_LIBRARY_VERSION_STRING bytes at `version`.
    unsafe { write_cstr(version, cap, text, resultlen) }
        .map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
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

fn monotonic() -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtime() -> c_double {
    let ts = monotonic();
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtick() -> c_double {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
