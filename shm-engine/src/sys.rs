//! Thin safe wrappers over the Linux calls the engine needs: futex, cross
//! memory attach, fd passing, peer credentials, memory files, pidfds,
//! mappings. Every `unsafe`
//! FFI call of the engine outside `segment` lives here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::iov::{Cursor, Piece};
use crate::sync::AtomicU32;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Sleep while `*word == expected`, at most `timeout`. Spurious returns are
/// allowed; callers re-check their condition. Works across processes
/// (not `FUTEX_PRIVATE`), for words in shared mappings.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call;
    // FUTEX_WAIT only reads it; `ts` outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const AtomicU32,
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wake every waiter on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE takes the address only as a key; it is valid.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const AtomicU32,
            libc::FUTEX_WAKE,
            i32::MAX,
        );
    }
}

/// CPUs the kernel has online (at least 1), whatever this process's
/// affinity.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf reads a system setting.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Bytes of one core's level-2 cache as the C library reports it (what
/// glibc bounds its use of `rep movsb` by on AMD processors), `None`
/// where it does not know.
pub fn l2_cache_bytes() -> Option<usize> {
    // SAFETY: sysconf reads a system setting.
    let n = unsafe { libc::sysconf(libc::_SC_LEVEL2_CACHE_SIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// `membarrier(2)` commands (`linux/membarrier.h`). (The loom models
/// stand a full fence in for the system call.)
#[cfg(not(tessel_loom))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
#[cfg(not(tessel_loom))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Register this process for [`membarrier`]: `false` where the kernel
/// lacks it (before Linux 4.14) or a sandbox refuses the system call.
#[cfg(not(tessel_loom))]
pub fn membarrier_register() -> bool {
    // SAFETY: no pointers; an unknown command fails with EINVAL.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
            0,
        ) == 0
    }
}

/// Make every running thread of this process execute a full memory
/// barrier before this returns: the heavy side of an asymmetric fence,
/// whose light side is a compiler fence (`crate::sync::light_fence`).
/// The process registered first ([`membarrier_register`] said `true`).
#[cfg(not(tessel_loom))]
pub fn membarrier() -> io::Result<()> {
    // SAFETY: no pointers.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Give the CPU to another runnable thread.
pub fn yield_now() {
    // SAFETY: no arguments, no memory.
    unsafe {
        libc::sched_yield();
    }
}

/// The CPUs this process may run on (its affinity mask), increasing.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, a live local cpu_set_t
    // the kernel writes.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE, inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The CPU the calling thread runs on right now, if the kernel says.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments, no memory.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// This process's pid.
pub fn pid() -> u32 {
    std::process::id()
}

/// Copy `len` bytes at `remote` in process `pid` into `local`, with
/// `process_vm_readv`, looping over partial reads.
///
/// # Safety
/// `local` is valid for writes of `len` bytes and not otherwise accessed
/// during the call.
pub unsafe fn cma_read(pid: u32, remote: u64, local: *mut u8, len: usize) -> io::Result<()> {
    let l = [Piece::new(local, len)];
    let r = [Piece::new(remote as usize as *mut u8, len)];
    // SAFETY: forwarded from the caller.
    let n = unsafe { cma_readv(pid, &l, &r)? };
    if n < len {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    Ok(())
}

/// Copy `len` bytes at `local` into `remote` in process `pid`, with
/// `process_vm_writev`, looping over partial writes.
///
/// # Safety
/// `local` is valid for reads of `len` bytes during the call; the caller
/// owns the right to write `remote..remote+len` in `pid` (a protocol gave
/// it that range).
pub unsafe fn cma_write(pid: u32, remote: u64, local: *const u8, len: usize) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let l = libc::iovec {
            // SAFETY: within the caller's `len` readable bytes.
            iov_base: unsafe { local.add(done) }.cast_mut().cast(),
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: one readable local entry (caller); the remote side is
        // checked by the kernel (EFAULT), not dereferenced here.
        let n = check(
            unsafe { libc::process_vm_writev(pid as libc::pid_t, &l, 1, &r, 1, 0) } as libc::c_long,
        )? as usize;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::WriteZero));
        }
        done += n;
    }
    Ok(())
}

/// Most entries `process_vm_readv` takes on either side (`IOV_MAX`).
pub const IOV_MAX: usize = 1024;

/// Copy the pieces `remote` of process `pid` into the pieces `local`, in
/// order, until either list ends; the two lists may be split differently.
/// Batches of at most [`IOV_MAX`] entries per side; a cursor on each list
/// carries over partial reads. Returns the bytes copied: the smaller of
/// the two totals (a read that stops short is an error).
///
/// # Safety
/// Every piece of `local` is valid for writes and not otherwise accessed
/// during the call.
pub unsafe fn cma_readv(pid: u32, local: &[Piece], remote: &[Piece]) -> io::Result<usize> {
    let (mut lc, mut rc) = (Cursor::start(local), Cursor::start(remote));
    let (mut lb, mut rb) = (Vec::new(), Vec::new());
    let mut done = 0usize;
    while !lc.at_end(local) && !rc.at_end(remote) {
        lb.clear();
        rb.clear();
        // The kernel pins the remote pages of a batch (up to 4 MiB at a
        // time) whether or not the local side has room for them: ask for
        // no more remote bytes than the local batch takes.
        let room = lc.fill(local, &mut lb, IOV_MAX, usize::MAX);
        rc.fill(remote, &mut rb, IOV_MAX, room);
        // SAFETY: `Piece` has the layout of `iovec` (checked in `iov`); the
        // local entries are the caller's writable memory; the remote side
        // is checked by the kernel (EFAULT), not dereferenced here.
        let n = check(unsafe {
            libc::process_vm_readv(
                pid as libc::pid_t,
                lb.as_ptr().cast(),
                lb.len() as libc::c_ulong,
                rb.as_ptr().cast(),
                rb.len() as libc::c_ulong,
                0,
            )
        } as libc::c_long)? as usize;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        lc.advance(local, n);
        rc.advance(remote, n);
        done += n;
    }
    Ok(done)
}

/// Send `fd` over a unix stream socket (SCM_RIGHTS) with one data byte.
pub fn send_fd(sock: &UnixStream, fd: RawFd) -> io::Result<()> {
    let mut byte = [0x54u8];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut cbuf = [0u64; 4];
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize;
    assert!(space <= size_of_val(&cbuf));
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg_control points to `space` writable, aligned bytes, so the
    // first header exists; we fill it within CMSG_LEN bounds.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as usize;
        libc::CMSG_DATA(cmsg).cast::<RawFd>().write_unaligned(fd);
    }
    // SAFETY: msg and everything it points to live across the call.
    check(unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } as libc::c_long)?;
    Ok(())
}

/// Receive one fd sent by [`send_fd`].
pub fn recv_fd(sock: &UnixStream) -> io::Result<OwnedFd> {
    let mut byte = [0u8];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = [0u64; 4];
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&cbuf);
    // SAFETY: msg points to live buffers; MSG_CMSG_CLOEXEC marks the fd.
    let n = check(
        unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) }
            as libc::c_long,
    )?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "segment owner closed the socket",
        ));
    }
    // SAFETY: the kernel filled msg_control/msg_controllen; CMSG_FIRSTHDR
    // returns null when there is no header, which we check.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no descriptor in message",
            ));
        }
        let fd = libc::CMSG_DATA(cmsg).cast::<RawFd>().read_unaligned();
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// The uid of the process at the other end of a unix socket.
pub fn peer_uid(sock: &UnixStream) -> io::Result<u32> {
    // SAFETY: all-zero is a valid ucred.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred/len are valid out-parameters of the advertised size.
    check(unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    } as libc::c_long)?;
    Ok(cred.uid)
}

/// This process's effective uid.
pub fn euid() -> u32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::geteuid() }
}

/// A new anonymous memory file (`memfd_create`, close-on-exec, no name in
/// any file system) of `len` zero bytes, sealed against shrinking and
/// growing so that no process holding it can pull pages from under
/// another's mapping. `name` shows only in `/proc/PID/fd` links.
pub fn memfd_sized(name: &std::ffi::CStr, len: u64) -> io::Result<OwnedFd> {
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::FileTooLarge))?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd = check(unsafe {
        libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
    } as libc::c_long)?;
    // SAFETY: memfd_create just returned this descriptor; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    // SAFETY: plain call on a descriptor we own.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), len) } as libc::c_long)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: plain call on a descriptor we own.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } as libc::c_long)?;
    Ok(fd)
}

/// The size in bytes of the file behind `fd` (`fstat`).
pub fn file_size(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: all-zero is a valid stat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live local the kernel fills.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as libc::c_long)?;
    Ok(st.st_size as u64)
}

/// A descriptor naming process `pid` (`pidfd_open`, close-on-exec).
/// ESRCH when no such process exists.
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: no memory is passed; flags 0.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A duplicate, in this process, of descriptor `fd` of the process behind
/// `pidfd` (`pidfd_getfd`, close-on-exec). The kernel asks for the same
/// permission as `ptrace` attach: EPERM when the policy refuses, EBADF
/// when the process has no such descriptor, ESRCH when it has exited.
pub fn pidfd_getfd(pidfd: &OwnedFd, fd: u32) -> io::Result<OwnedFd> {
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: no memory is passed; flags 0.
    let got = check(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) })?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
}

/// A descriptor, in this process, for the file behind descriptor `fd` of
/// process `pid`: a duplicate taken with `pidfd_open` + `pidfd_getfd`
/// (Linux 5.6 and later), or, where those answer ENOSYS (older kernels;
/// valgrind, which does not know them), the file opened afresh, read and
/// write, through `/proc/PID/fd/FD`. The kernel asks for `ptrace`
/// permission on the process: to attach for `pidfd_getfd`, to read for
/// `/proc` (the engine maps peers' heaps only where cross-memory attach,
/// which asks to attach, works too). The second way reaches files (a
/// memfd), not anonymous inodes (an eventfd: ENXIO). Allocates nothing,
/// so a child forked from a multi-threaded process may call it.
pub fn peer_fd(pid: u32, fd: u32) -> io::Result<OwnedFd> {
    match pidfd_open(pid).and_then(|pidfd| pidfd_getfd(&pidfd, fd)) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => open_proc_fd(pid, fd),
        got => got,
    }
}

/// Open `/proc/PID/fd/FD` read and write, close-on-exec, with the path
/// built on the stack.
fn open_proc_fd(pid: u32, fd: u32) -> io::Result<OwnedFd> {
    // "/proc/" + 10 digits + "/fd/" + 10 digits, and a NUL: 31 bytes.
    let mut path = [0u8; 32];
    let mut at = put(&mut path, 0, b"/proc/");
    at = put_decimal(&mut path, at, pid);
    at = put(&mut path, at, b"/fd/");
    put_decimal(&mut path, at, fd);
    // SAFETY: `path` ends in NUL (its last byte is never written) and
    // lives across the call.
    let raw = check(
        unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) } as libc::c_long,
    )?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

/// Write `bytes` at `at` of `buf`; the position after them.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

/// Write `n` in decimal at `at` of `buf`; the position after it.
fn put_decimal(buf: &mut [u8], at: usize, n: u32) -> usize {
    let mut digits = [0u8; 10];
    let (mut i, mut n) = (digits.len(), n);
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    put(buf, at, &digits[i..])
}

/// Whether this process can reach files behind another process's
/// descriptors ([`peer_fd`]): tried on a memory file of its own.
pub fn takes_descriptors() -> bool {
    memfd_sized(c"tessel-probe", 0).is_ok_and(|f| peer_fd(pid(), f.as_raw_fd() as u32).is_ok())
}

/// A shared read-write mapping of a whole file, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; concurrent access to its contents is
// governed by the shared-memory protocols, not by this handle.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`: the handle itself is two immutable words; what
// threads do with the memory is governed by the protocols that use it.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes of `fd` shared.
    pub fn map_shared(fd: &OwnedFd, len: usize) -> io::Result<Self> {
        // SAFETY: a fresh mapping at an address the kernel picks; no
        // existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: p.cast(),
            len,
        })
    }

    /// First byte of the mapping.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keep the mapping for the rest of the process's life; returns its
    /// first byte.
    pub fn leak(self) -> *mut u8 {
        let base = self.base;
        std::mem::forget(self);
        base
    }

    /// Fault in, as reads, the pages of bytes `off..off + len` of the
    /// mapping (`MADV_POPULATE_READ`, Linux 5.14): for a shared memory
    /// file this allocates the missing pages, on the caller's NUMA node
    /// under the default memory policy, without touching their contents.
    pub fn populate_read(&self, off: usize, len: usize) -> io::Result<()> {
        assert!(off.is_multiple_of(4096) && off + len <= self.len);
        // SAFETY: the range lies inside our live mapping (checked above) and
        // starts on a page; the advice changes no byte of it.
        let rc = unsafe { libc::madvise(self.base.add(off).cast(), len, libc::MADV_POPULATE_READ) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len came from a successful mmap and are unmapped once.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// The file of the loaded object (executable or shared library) that holds
/// `addr`, as the dynamic linker knows it.
pub fn object_path_of(addr: *const libc::c_void) -> Option<std::path::PathBuf> {
    // SAFETY: `Dl_info` is plain data; zeroed is a valid "nothing found".
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and writes `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set a NUL-terminated name owned by the linker, valid
    // while the object stays loaded (it holds this code: it does).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    path.is_absolute()
        .then(|| path.to_path_buf())
        .or_else(|| std::fs::canonicalize(path).ok())
}

/// A fresh eventfd (nonblocking, close-on-exec), counter 0.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no memory is passed.
    let fd =
        check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) } as libc::c_long)?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Add one to eventfd `fd`'s counter: whoever polls it wakes. A full
/// counter (EAGAIN) is already readable; other errors only lose a wake-up
/// that the sleeper's timeout bounds.
pub fn eventfd_signal(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a live local array.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}

/// Reset eventfd `fd`'s counter to 0 (nonblocking).
pub fn eventfd_clear(fd: &OwnedFd) {
    let mut v = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a live local array.
    unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), v.len()) };
}

/// Wait until one of `fds` (at most two) is readable or `timeout`
/// passes. Returns a mask: bit `i` set when `fds[i]` is readable.
pub fn poll_readable(fds: &[RawFd], timeout: Duration) -> u32 {
    debug_assert!(fds.len() <= 2);
    let mut p = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 2];
    let n = fds.len().min(p.len());
    for (slot, &fd) in p.iter_mut().zip(fds) {
        slot.fd = fd;
    }
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `n` valid pollfds.
    if unsafe { libc::poll(p.as_mut_ptr(), n as libc::nfds_t, ms) } <= 0 {
        return 0;
    }
    p[..n]
        .iter()
        .enumerate()
        .filter(|(_, q)| q.revents != 0)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// Whether the other end of connected socket `fd` has closed (or shut
/// down its writing side): a non-blocking poll for `POLLRDHUP`/`POLLHUP`.
pub fn peer_hung_up(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a live local.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP) != 0
}

/// End the process at once with `code` (`_exit`) after flushing the C
/// streams: no at-exit handler runs, so none can call back into a library
/// whose lock this thread holds.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: fflush(NULL) flushes every C stream and _exit ends the
    // process; neither has memory-safety preconditions.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_reopened_through_proc_reaches_the_same_file() {
        let f = memfd_sized(c"tessel-test", 4096).expect("memfd");
        let again = open_proc_fd(pid(), f.as_raw_fd() as u32).expect("reopen through /proc");
        assert_eq!(file_size(&again).expect("fstat"), 4096);
        let (a, b) = (
            Mapping::map_shared(&f, 4096).expect("map"),
            Mapping::map_shared(&again, 4096).expect("map"),
        );
        // SAFETY: both mappings are 4096 bytes long and live to the end.
        unsafe {
            a.base().add(100).write_volatile(42);
            assert_eq!(b.base().add(100).read_volatile(), 42);
        }
        let err = open_proc_fd(pid(), u32::MAX).expect_err("no such descriptor");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert!(takes_descriptors());
    }

    #[test]
    fn decimals_are_written_in_full() {
        let mut buf = [0u8; 16];
        let at = put(&mut buf, 0, b"x");
        let at = put_decimal(&mut buf, at, 4_294_967_295);
        assert_eq!(&buf[..at], b"x4294967295");
        assert_eq!(put_decimal(&mut buf, 0, 0), 1);
        assert_eq!(buf[0], b'0');
    }
}
