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

use std::sync::OnceLock;

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
    *LIMIT.get_or_init(|| crate::sys::l2_cache_bytes().unwrap_or(DEFAULT_LIMIT))
}

/// Whether a copy of `n` bytes from `src` to `dst` goes in chunks.
#[inline]
fn chunked(src: *const u8, dst: *const u8, n: usize) -> bool {
    n > CHUNK
        && (1..SHORT).contains(&((dst as usize).wrapping_sub(src as usize) % PAGE))
        && n < limit()
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
