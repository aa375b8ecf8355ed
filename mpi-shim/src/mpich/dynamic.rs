//! Dynamic processes (MPI-4.1 §11.8): spawning, ports, names and join
//! ([`crate::core::dynamic`] does the work).

use std::ffi::{c_char, c_int};

use super::info::info_hints;
use super::*;
use crate::core::dynamic::Command;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])",
    "int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[], const int array_of_maxprocs[], const MPI_Info array_of_info[], int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])",
    "int MPI_Comm_get_parent(MPI_Comm *parent)",
    "int MPI_Open_port(MPI_Info info, char *port_name)",
    "int MPI_Close_port(const char *port_name)",
    "int MPI_Comm_accept(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm)",
    "int MPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm)",
    "int MPI_Comm_join(int fd, MPI_Comm *intercomm)",
    "int MPI_Publish_name(const char *service_name, MPI_Info info, const char *port_name)",
    "int MPI_Unpublish_name(const char *service_name, MPI_Info info, const char *port_name)",
    "int MPI_Lookup_name(const char *service_name, MPI_Info info, char *port_name)",
];

/// The strings of a NULL-terminated `argv` (`MPI_ARGV_NULL`: none).
///
/// # Safety
/// `argv` is null or a NULL-terminated array of C strings.
unsafe fn read_argv(argv: *const *mut c_char) -> MpiResult<Vec<String>> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0.. {
        // SAFETY: NULL-terminated (the caller's promise): we stop at NULL.
        let a = unsafe { *argv.add(i) };
        if a.is_null() {
            break;
        }
        // SAFETY: a C string of the array.
        args.push(unsafe { read_cstr(a, Class::Arg, "argument") }?);
    }
    Ok(args)
}

/// One command of a spawn, read at the root.
///
/// # Safety
/// As for [`read_cstr`] and [`read_argv`].
unsafe fn command(
    cmd: *const c_char,
    argv: *const *mut c_char,
    procs: c_int,
    info: MPI_Info,
) -> MpiResult<Command> {
    Ok(Command {
        // SAFETY: forwarded from the caller.
        command: unsafe { read_cstr(cmd, Class::Arg, "command") }?,
        // SAFETY: forwarded from the caller.
        args: unsafe { read_argv(argv) }?,
        procs,
        info: info_hints(info)?.entries,
    })
}

/// Write `n` codes `code` to `errcodes`, unless `MPI_ERRCODES_IGNORE`.
///
/// # Safety
/// A non-null `errcodes` addresses `n` writable ints (MPI contract).
unsafe fn errcodes_out(errcodes: *mut c_int, n: usize, code: c_int) {
    if !errcodes.is_null() {
        for i in 0..n {
            // SAFETY: the caller's promise.
            unsafe { *errcodes.add(i) = code };
        }
    }
}

/// The spawn both entries make: `cmds` is read at the root only, and
/// `root_procs` is what the root asked for (the length of its error codes).
///
/// # Safety
/// `intercomm` and `errcodes` as the MPI contract says.
unsafe fn spawn(
    name: &str,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
    cmds: impl FnOnce() -> MpiResult<(Vec<Command>, usize)>,
) -> c_int {
    let mut asked = 0;
    let rc = call(name, comm, |rt| {
        let slot = comm_slot(comm)?;
        nonnull(intercomm, "intercomm")?;
        let at_root = rt.intra(slot)?.rank == root;
        let cmds = if at_root {
            let (cmds, n) = cmds()?;
            asked = n;
            Some(cmds)
        } else {
            None
        };
        let inter = rt.spawn(slot, root, cmds)?;
        let n = rt.comm(inter)?.peer_size() as usize;
        // SAFETY: one code per process started (MPI contract).
        unsafe { errcodes_out(errcodes, n, abi::MPI_SUCCESS) };
        // SAFETY: output argument.
        unsafe { out(intercomm, comm_handle(inter)) }
    });
    if rc != abi::MPI_SUCCESS {
        // All or nothing: every process the root asked for failed.
        // SAFETY: as above; `asked` is 0 away from the root.
        unsafe { errcodes_out(errcodes, asked, rc) };
    }
    rc
}

/// `MPI_Comm_spawn` (MPI-4.1 §11.8.2): the launcher starts `maxprocs`
/// processes of `command`, which join this job's node; all or none.
/// Info keys `wdir` and `path` are honoured, others ignored.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let cmds = || {
        // SAFETY: the root's arguments (MPI contract).
        let c = unsafe { self::command(command, argv, maxprocs, info) }?;
        Ok((vec![c], usize::try_from(maxprocs).unwrap_or(0)))
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        spawn(
            "MPI_Comm_spawn",
            root,
            comm,
            intercomm,
            array_of_errcodes,
            cmds,
        )
    }
}

/// `MPI_Comm_spawn_multiple`: one new job of every command's processes,
/// in order; `MPI_APPNUM` is each one's command index.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let cmds = || {
        let n = usize::try_from(count)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| err(Class::Arg, format!("count {count} is not positive")))?;
        if array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
            return Err(err(Class::Arg, "null array argument"));
        }
        let mut cmds = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `count` entries in each array (MPI contract); the
            // argv array is MPI_ARGVS_NULL or has `count` entries.
            let c = unsafe {
                let argv = if array_of_argv.is_null() {
                    std::ptr::null()
                } else {
                    *array_of_argv.add(i)
                };
                command(
                    *array_of_commands.add(i),
                    argv,
                    *array_of_maxprocs.add(i),
                    *array_of_info.add(i),
                )
            }?;
            cmds.push(c);
        }
        let asked = cmds
            .iter()
            .map(|c| usize::try_from(c.procs).unwrap_or(0))
            .sum();
        Ok((cmds, asked))
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        spawn(
            "MPI_Comm_spawn_multiple",
            root,
            comm,
            intercomm,
            array_of_errcodes,
            cmds,
        )
    }
}

/// The intercommunicator with the group that spawned this job, until it
/// is freed or disconnected; `MPI_COMM_NULL` otherwise (MPI-4.1 §11.8.2).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_get_parent", abi::MPI_COMM_WORLD, |rt| {
        let h = rt.parent().map_or(abi::MPI_COMM_NULL, comm_handle);
        // SAFETY: output argument.
        unsafe { out(parent, h) }
    })
}

/// A port name of this process: `tessel:UNIVERSE:ID:N`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Open_port(info: MPI_Info, port_name: *mut c_char) -> c_int {
    call("MPI_Open_port", abi::MPI_COMM_WORLD, |rt| {
        info_hints(info)?;
        nonnull(port_name, "port_name")?;
        let name = rt.open_port()?;
        // SAFETY: MPI_MAX_PORT_NAME bytes (MPI contract).
        unsafe { copy_cstr(port_name, abi::MPI_MAX_PORT_NAME as usize, &name) }.map(|_| ())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    call("MPI_Close_port", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: a C string (MPI contract).
        let name = unsafe { read_cstr(port_name, Class::Port, "port name") }?;
        rt.close_port(&name)
    })
}

/// Accept and connect: `port_name` is read at the root only.
///
/// # Safety
/// As the MPI contract says of the arguments.
unsafe fn meet(
    name: &str,
    port_name: *const c_char,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    accept: bool,
) -> c_int {
    call(name, comm, |rt| {
        let slot = comm_slot(comm)?;
        nonnull(newcomm, "newcomm")?;
        let port = if rt.intra(slot)?.rank == root {
            // SAFETY: a C string at the root (MPI contract).
            Some(unsafe { read_cstr(port_name, Class::Port, "port name") }?)
        } else {
            None
        };
        let inter = if accept {
            rt.accept(port.as_deref(), root, slot)?
        } else {
            rt.connect(port.as_deref(), root, slot)?
        };
        // SAFETY: output argument.
        unsafe { out(newcomm, comm_handle(inter)) }
    })
}

/// Collective over `comm`: the root takes the first connection waiting on
/// its port `port_name` (MPI-4.1 §11.8.4).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let _ = info;
    // SAFETY: forwarded from the caller.
    unsafe { meet("MPI_Comm_accept", port_name, root, comm, newcomm, true) }
}

/// Collective over `comm`: connect to a port of a process of this
/// launcher's jobs.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let _ = info;
    // SAFETY: forwarded from the caller.
    unsafe { meet("MPI_Comm_connect", port_name, root, comm, newcomm, false) }
}

/// MPI-4.1 §11.8.6: the two processes trade their ids over the socket
/// `fd` (left open), which must join two processes of this launcher's
/// jobs.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_join", abi::MPI_COMM_WORLD, |rt| {
        nonnull(intercomm, "intercomm")?;
        // SAFETY: F_DUPFD_CLOEXEC reads no memory; any integer is allowed
        // (an invalid one fails with EBADF).
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(err(
                Class::Arg,
                format!("fd {fd}: {}", std::io::Error::last_os_error()),
            ));
        }
        // SAFETY: `dup` is a descriptor we just created and own alone.
        let mut socket = std::fs::File::from(unsafe {
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(dup)
        });
        let inter = rt.join(&mut socket)?;
        // SAFETY: output argument.
        unsafe { out(intercomm, comm_handle(inter)) }
    })
}

/// Publish `port_name` as `service_name` for every job of the launcher.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Publish_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *const c_char,
) -> c_int {
    call("MPI_Publish_name", abi::MPI_COMM_WORLD, |rt| {
        info_hints(info)?;
        // SAFETY: C strings (MPI contract).
        let (service, port) = unsafe {
            (
                read_cstr(service_name, Class::Service, "service name")?,
                read_cstr(port_name, Class::Port, "port name")?,
            )
        };
        rt.publish_name(&service, &port)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Unpublish_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *const c_char,
) -> c_int {
    let _ = port_name;
    call("MPI_Unpublish_name", abi::MPI_COMM_WORLD, |rt| {
        info_hints(info)?;
        // SAFETY: a C string (MPI contract).
        let service = unsafe { read_cstr(service_name, Class::Service, "service name") }?;
        rt.unpublish_name(&service)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Lookup_name(
    service_name: *const c_char,
    info: MPI_Info,
    port_name: *mut c_char,
) -> c_int {
    call("MPI_Lookup_name", abi::MPI_COMM_WORLD, |rt| {
        info_hints(info)?;
        nonnull(port_name, "port_name")?;
        // SAFETY: a C string (MPI contract).
        let service = unsafe { read_cstr(service_name, Class::Name, "service name") }?;
        let port = rt.lookup_name(&service)?;
        // SAFETY: MPI_MAX_PORT_NAME bytes (MPI contract).
        unsafe { copy_cstr(port_name, abi::MPI_MAX_PORT_NAME as usize, &port) }.map(|_| ())
    })
}
