//! The few system calls the launcher needs that std does not offer, each
//! behind a safe function.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// The last of SIGINT/SIGTERM/SIGHUP received and not yet taken, or 0.
static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    // Storing to an atomic is async-signal-safe.
    PENDING_SIGNAL.store(signal, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM and SIGHUP so they can be forwarded to the job;
/// see [`take_signal`]. Children get the default dispositions back when
/// they exec.
pub(crate) fn catch_termination_signals() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no
        // flags) that is then filled in; `record_signal` only stores to an
        // atomic, which is async-signal-safe; the pointers passed to
        // sigemptyset and sigaction point to that live local.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The termination signal received since the last call, if any.
pub(crate) fn take_signal() -> Option<i32> {
    match PENDING_SIGNAL.swap(0, Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Send `signal` to every process of process group `pgid`. Returns false
/// when the group no longer exists (ESRCH) or the call failed.
pub(crate) fn kill_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        // Never signal "every process" (-1) or our own group (0).
        return false;
    }
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Make this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER), so that processes a rank leaves behind are
/// reparented to us and reaped by [`wait_any`] rather than lingering as
/// zombies in the rank's process group.
pub(crate) fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag of the
    // calling process; it has no memory-safety preconditions.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reap one exited child, if any: `(pid, wait status)`; `None` when no
/// child has exited (or there are no children).
pub(crate) fn wait_any() -> Option<(i32, i32)> {
    loop {
        let mut status = 0;
        // SAFETY: the pointer is to a live local that waitpid writes the
        // status into.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            return Some((pid, status));
        }
        if pid < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

/// Whether process group `pgid` still has members.
pub(crate) fn group_exists(pgid: i32) -> bool {
    kill_group(pgid, 0)
}

/// Wait up to `timeout_ms` for events on `fds` (poll(2)); an interrupted
/// wait is not an error and reports no events.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<()> {
    let count = libc::nfds_t::try_from(fds.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many descriptors"))?;
    // SAFETY: the pointer and length describe `fds`, a live, exclusively
    // borrowed slice of pollfd that poll only writes `revents` of.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), count, timeout_ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        for fd in fds.iter_mut() {
            fd.revents = 0;
        }
    }
    Ok(())
}

/// Clear FD_CLOEXEC on `fd` so that it survives exec.
///
/// Only async-signal-safe calls: usable between fork and exec.
pub(crate) fn clear_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl with F_GETFD/F_SETFD only reads and writes descriptor
    // flags; it has no memory-safety preconditions.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ask the kernel to SIGKILL the calling process when the thread that
/// forked it ends (PR_SET_PDEATHSIG), and kill it at once if that already
/// happened: its parent is no longer `parent`. A rank whose launcher dies,
/// even by SIGKILL, then dies with it instead of running on as an orphan.
///
/// Only async-signal-safe calls: usable between fork and exec.
pub(crate) fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG, SIGKILL) only sets an attribute of
    // the calling process; it has no memory-safety preconditions.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // The parent may have died between fork and the prctl, in which case
    // no signal comes: we were reparented already.
    // SAFETY: getppid has no memory-safety preconditions.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: raise has no memory-safety preconditions.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    Ok(())
}

/// A set of CPUs for [`set_affinity`].
#[derive(Clone, Copy)]
pub(crate) struct CpuSet(libc::cpu_set_t);

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.cpus()).finish()
    }
}

impl CpuSet {
    fn empty() -> Self {
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty
        // set.
        Self(unsafe { std::mem::zeroed() })
    }

    /// The set of `cpus` (each below `CPU_SETSIZE`).
    pub(crate) fn of(cpus: &[usize]) -> Self {
        let mut set = Self::empty();
        for &cpu in cpus {
            assert!(cpu < libc::CPU_SETSIZE as usize, "CPU {cpu} out of range");
            // SAFETY: `cpu` is below CPU_SETSIZE, so the bit is inside the set.
            unsafe { libc::CPU_SET(cpu, &mut set.0) };
        }
        set
    }

    /// The CPUs in the set, in increasing order.
    pub(crate) fn cpus(&self) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: every index is below CPU_SETSIZE, inside the set.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &self.0) })
            .collect()
    }

    /// The CPUs this process may run on.
    pub(crate) fn available() -> io::Result<Self> {
        let mut set = Self::empty();
        // SAFETY: the pointer and size describe `set.0`, a live cpu_set_t
        // the kernel writes the current mask into.
        let rc = unsafe {
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set.0)
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(set)
    }
}

/// Restrict the calling process to `set`.
///
/// Only async-signal-safe calls: usable between fork and exec.
pub(crate) fn set_affinity(set: &CpuSet) -> io::Result<()> {
    // SAFETY: the pointer and size describe `set.0`, a live cpu_set_t the
    // kernel only reads.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set.0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Write `message` to stderr with a single write(2): async-signal-safe,
/// for reporting from between fork and exec.
pub(crate) fn write_stderr_raw(message: &[u8]) {
    // SAFETY: the pointer and length describe `message`, which write only
    // reads. A short or failed write is acceptable for a diagnostic.
    unsafe {
        libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len());
    }
}

/// The conventional name of `signal` ("SIGKILL"), if it has one.
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    };
    Some(name)
}

/// "signal 9 (SIGKILL)", or "signal 40" for a signal without a name.
pub(crate) fn describe_signal(signal: i32) -> String {
    match signal_name(signal) {
        Some(name) => format!("signal {signal} ({name})"),
        None => format!("signal {signal}"),
    }
}

/// The uid of the process at the other end of a unix socket.
pub(crate) fn peer_uid(sock: &std::os::unix::net::UnixStream) -> io::Result<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: all-zero is a valid ucred.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live out-parameters of the size given.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_descriptions() {
        assert_eq!(describe_signal(9), "signal 9 (SIGKILL)");
        assert_eq!(describe_signal(15), "signal 15 (SIGTERM)");
        assert_eq!(describe_signal(40), "signal 40");
    }

    #[test]
    fn cpu_sets() {
        assert_eq!(CpuSet::of(&[3]).cpus(), [3]);
        let available = CpuSet::available().unwrap().cpus();
        assert!(!available.is_empty());
    }

    #[test]
    fn no_signal_is_sent_to_special_groups() {
        assert!(!kill_group(0, 0));
        assert!(!kill_group(1, 0));
        assert!(!kill_group(-5, 0));
    }
}
