//! How the engine and the MPI layer copy bytes between buffers: the C
//! library's `memcpy`, kept out of its one slow case.
//!
//! For copies from about 2 KiB up to the size of a core's level-2 cache,
//! glibc's x86-64 `memcpy` uses `rep movsb` on AMD processors (on others,
//! up to a larger bound). On some processors that instruction is many
//! times slower when the destination lies 1 to 63 bytes past the source,
//! counted within a 4 KiB page: on an AMD EPYC host (glibc 2.36), 128 KiB
//! copied from a page-aligned buffer to one 16 bytes past a page boundary
//! ran at 1.9 GB/s, against 27-41 GB/s at any other distance, and 512 KiB
//! or more (its level-2 cache) at 24-33 GB/s at every distance. That
//! case is common here: a piece on the shared board or in a cell starts
//! on a page or a cache line, and `malloc`'s large buffers start 16 bytes
//! past one. Later glibc releases avoid it on some processors; the
//! systems this runs on may not. (`cargo bench -p benches --bench copy`
//! shows whether a host has it.)
//!
//! [`bytes`] copies such a case in chunks of [`CHUNK`] bytes, which
//! `memcpy` moves with vector loads and stores instead (33 GB/s on that
//! host); every other copy is one `memcpy`, as before. Past the level-2
//! cache, chunks would only cost calls (26 GB/s against 33 on that host
//! at 1 MiB), so copies that long are one `memcpy` too.
//!
//! The kernel copies with `rep movsb` too, so cross-memory attach
//! (`process_vm_readv`, `process_vm_writev`) is as slow at those
//! distances, at every length: on that host 64 KiB read into a buffer 16
//! bytes further into its page than the source took 36 us against 8.4 us
//! at the same offset, and 1 MiB 621 us against 123 us. [`from_remote`] and [`to_remote`] move such a transfer of one
//! piece each side in [`BOUNCE`]-byte steps through a buffer of this
//! thread placed at distance 0 from the peer's bytes, and copy between
//! that buffer and the local one as [`bytes`] does (1 MiB in 200 us).

use std::cell::RefCell;
use std::io;
use std::sync::OnceLock;

use crate::iov::Piece;
use crate::sys;

/// Bytes per chunk where a copy would be slow in one piece: below every
/// glibc's `rep movsb` threshold on x86-64 (2 KiB at the least; 2112
/// bytes on that host), and long enough that one call per chunk costs
/// little.
pub const CHUNK: usize = 2048;

/// Distances (destination minus source, within a page) at which `rep
/// movsb` is slow: 1 to 63 bytes.
const SHORT: usize = 64;

/// Size of the page the distance is counted in.
const PAGE: usize = 4096;

/// Longest copy that goes in chunks: where the C library does not say
/// how large a core's level-2 cache is, 1 MiB.
const DEFAULT_LIMIT: usize = 1 << 20;

/// Longest copy that goes in chunks: a core's level-2 cache, past which
/// glibc's `memcpy` stops using `rep movsb` on AMD processors.
#[inline]
fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| sys::l2_cache_bytes().unwrap_or(DEFAULT_LIMIT))
}

/// Whether `dst` lies 1 to 63 bytes past `src` within a page.
#[inline]
fn short_distance(src: usize, dst: usize) -> bool {
    (1..SHORT).contains(&(dst.wrapping_sub(src) % PAGE))
}

/// Whether a copy of `n` bytes from `src` to `dst` goes in chunks.
#[inline]
fn chunked(src: *const u8, dst: *const u8, n: usize) -> bool {
    n > CHUNK && short_distance(src as usize, dst as usize) && n < limit()
}

/// Copy `n` bytes from `src` to `dst`, as `std::ptr::copy_nonoverlapping`
/// does, in chunks where one `memcpy` would be slow (see the module).
///
/// # Safety
/// As for `std::ptr::copy_nonoverlapping`: `src` is readable and `dst`
/// writable for `n` bytes, and the two ranges do not overlap.
#[inline]
pub unsafe fn bytes(src: *const u8, dst: *mut u8, n: usize) {
    if !chunked(src, dst, n) {
        // SAFETY: the caller's promise.
        return unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
    }
    // SAFETY: the caller's promise, for each chunk within the `n` bytes.
    unsafe { in_chunks(src, dst, n) }
}

/// [`bytes`] in chunks of [`CHUNK`] bytes.
///
/// # Safety
/// As for [`bytes`].
#[cold]
#[inline(never)]
unsafe fn in_chunks(src: *const u8, dst: *mut u8, n: usize) {
    let mut done = 0;
    while done < n {
        let step = CHUNK.min(n - done);
        // SAFETY: `done + step <= n`: within both ranges (the caller's
        // promise).
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), step) };
        done += step;
    }
}

/// Copy `src` into `dst`, as `dst.copy_from_slice(src)` does (the two
/// must be as long), in chunks where one `memcpy` would be slow.
///
/// # Panics
/// If the two slices differ in length, as `copy_from_slice` does.
#[inline]
pub fn slice(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy::slice of slices of different lengths"
    );
    // SAFETY: two slices of one length; `dst` is borrowed exclusively, so
    // they do not overlap.
    unsafe { bytes(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// Bytes a transfer with another process moves per step through the
/// bounce buffer (fits a level-2 cache with the bytes it copies to).
pub const BOUNCE: usize = 128 << 10;

thread_local! {
    /// This thread's bounce buffer: [`BOUNCE`] bytes from any offset
    /// within a page (allocated at the first slow transfer).
    static BOUNCE_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with `n <= BOUNCE` writable bytes of this thread's bounce
/// buffer that start at `at`'s offset within a page.
fn with_bounce<T>(at: usize, n: usize, f: impl FnOnce(*mut u8) -> T) -> T {
    debug_assert!(n <= BOUNCE);
    BOUNCE_BUF.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_empty() {
            b.resize(BOUNCE + 2 * PAGE, 0);
        }
        let page = b.as_ptr().align_offset(PAGE);
        // In bounds: `page < PAGE` and `at % PAGE + n <= PAGE + BOUNCE`.
        f(b[page + at % PAGE..][..n].as_mut_ptr())
    })
}

/// Copy the pieces `remote` of process `pid` into the pieces `local`, as
/// `process_vm_readv` does (see `sys::cma_readv`), through the bounce
/// buffer where one piece each side lie at a slow distance (see the
/// module). Returns the bytes copied.
///
/// # Safety
/// Every piece of `local` is valid for writes and not otherwise accessed
/// during the call.
pub unsafe fn from_remote(pid: u32, local: &[Piece], remote: &[Piece]) -> io::Result<usize> {
    if let ([l], [r]) = (local, remote) {
        let n = l.len.min(r.len);
        if n > CHUNK && short_distance(r.ptr as usize, l.ptr as usize) {
            let mut done = 0;
            while done < n {
                let step = BOUNCE.min(n - done);
                let from = r.ptr as usize + done;
                with_bounce(from, step, |b| {
                    // SAFETY: `b` is `step` writable bytes of this thread's
                    // bounce buffer; then `l.ptr + done` is within the
                    // caller's writable piece, apart from the buffer.
                    unsafe {
                        sys::cma_read(pid, from as u64, b, step)?;
                        bytes(b, l.ptr.add(done), step);
                    }
                    io::Result::Ok(())
                })?;
                done += step;
            }
            return Ok(n);
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { sys::cma_readv(pid, local, remote) }
}

/// Copy `len` bytes at `local` into `remote` in process `pid`, as
/// `process_vm_writev` does (see `sys::cma_write`), through the bounce
/// buffer where the two lie at a slow distance (see the module).
///
/// # Safety
/// As for `sys::cma_write`: `local` is readable for `len` bytes, and the
/// caller owns the right to write `remote..remote + len` in `pid`.
pub unsafe fn to_remote(pid: u32, remote: u64, local: *const u8, len: usize) -> io::Result<()> {
    if len <= CHUNK || !short_distance(local as usize, remote as usize) {
        // SAFETY: forwarded from the caller.
        return unsafe { sys::cma_write(pid, remote, local, len) };
    }
    let mut done = 0;
    while done < len {
        let step = BOUNCE.min(len - done);
        let to = remote + done as u64;
        with_bounce(to as usize, step, |b| {
            // SAFETY: `local + done` is within the caller's readable bytes,
            // apart from the bounce buffer's `step` writable bytes `b`.
            unsafe {
                bytes(local.add(done), b, step);
                sys::cma_write(pid, to, b, step)
            }
        })?;
        done += step;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distance from 0 to past a cache line, at lengths around the
    /// chunk's, lands every byte where it belongs and no other.
    #[test]
    fn copies_every_byte_at_every_distance() {
        let src: Vec<u8> = (0..3 * PAGE).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut dst = vec![0u8; 3 * PAGE + SHORT + 8];
        for distance in 0..SHORT + 8 {
            for n in [
                0,
                1,
                CHUNK - 1,
                CHUNK,
                CHUNK + 1,
                2 * CHUNK + 17,
                2 * PAGE + 5,
            ] {
                dst.fill(0xEE);
                // Where the destination starts `distance` bytes past the
                // source within a page, wherever the two vectors are.
                let base = (src.as_ptr() as usize).wrapping_sub(dst.as_ptr() as usize) % PAGE;
                let at = (base + distance) % PAGE;
                assert_eq!(
                    chunked(src.as_ptr(), dst[at..].as_ptr(), n),
                    n > CHUNK && (1..SHORT).contains(&distance) && n < limit()
                );
                slice(&mut dst[at..at + n], &src[..n]);
                assert_eq!(
                    &dst[at..at + n],
                    &src[..n],
                    "distance {distance}, {n} bytes"
                );
                assert!(
                    dst[..at].iter().all(|&b| b == 0xEE),
                    "before, distance {distance}"
                );
                assert!(
                    dst[at + n..].iter().all(|&b| b == 0xEE),
                    "after, distance {distance}"
                );
            }
        }
    }

    /// Transfers with a process (here this one, which cross-memory attach
    /// allows) land every byte at every distance, through the bounce
    /// buffer (several steps of it) or not.
    #[test]
    fn remote_copies_land_every_byte() {
        let pid = crate::sys::pid();
        let n = 2 * BOUNCE + 3 * PAGE + 5;
        let src: Vec<u8> = (0..n + PAGE).map(|i| (i * 13 + i / 509) as u8).collect();
        let mut dst = vec![0u8; n + 2 * PAGE];
        for distance in [0, 1, 16, 63, 64, 2048] {
            for len in [CHUNK, CHUNK + 1, BOUNCE + 7, n] {
                let base = (src.as_ptr() as usize).wrapping_sub(dst.as_ptr() as usize) % PAGE;
                let at = (base + distance) % PAGE;
                let (from, to) = (src.as_ptr() as usize, dst[at..].as_mut_ptr() as usize);
                assert_eq!(short_distance(from, to), (1..SHORT).contains(&distance));

                dst.fill(0xEE);
                let local = [Piece::new(dst[at..].as_mut_ptr(), len)];
                let remote = [Piece::new(src.as_ptr().cast_mut(), len)];
                // SAFETY: `len` writable bytes of `dst`, apart from `src`.
                let got = unsafe { from_remote(pid, &local, &remote) }.expect("read");
                assert_eq!(got, len);
                assert_eq!(&dst[at..at + len], &src[..len], "read, distance {distance}");
                assert!(dst[..at].iter().chain(&dst[at + len..]).all(|&b| b == 0xEE));

                // Written the other way: from `src` to `dst`, `dst` as the
                // remote side.
                dst.fill(0xEE);
                // SAFETY: `len` readable bytes of `src`; `dst` is ours.
                unsafe { to_remote(pid, to as u64, src.as_ptr(), len) }.expect("write");
                assert_eq!(
                    &dst[at..at + len],
                    &src[..len],
                    "write, distance {distance}"
                );
                assert!(dst[..at].iter().chain(&dst[at + len..]).all(|&b| b == 0xEE));
            }
        }
    }

    /// The slow distances, and only those, go in chunks.
    #[test]
    fn chunks_only_short_distances() {
        let p = 0x10_0000usize as *const u8;
        let at = |d: usize| p.wrapping_add(d);
        assert!(chunked(p, at(16), CHUNK + 1));
        assert!(chunked(p, at(63), limit() - 1));
        assert!(chunked(p, at(PAGE + 1), limit() - 1));
        assert!(!chunked(p, at(16), limit()), "past the level-2 cache");
        assert!(!chunked(p, at(16), CHUNK), "short copies are one memcpy");
        assert!(!chunked(p, at(0), 1 << 20));
        assert!(!chunked(p, at(64), 1 << 20));
        assert!(!chunked(p, at(PAGE), 1 << 20));
        assert!(
            !chunked(at(16), p, 1 << 20),
            "destination before the source"
        );
    }
}
