//! Byte buffers kept for reuse: the packed copies of non-contiguous
//! messages and the scratch buffers of collective schedules.
//!
//! Such a buffer lives for one call, and one of more than 128 KiB is a
//! fresh `mmap` for the C allocator: every call would fault in, zero and
//! unmap its pages again (a 3-D stencil's halo faces, a collective's
//! pieces). Here a process keeps up to [`KEEP`] freed buffers of at least
//! [`MIN`] bytes, [`KEEP_BYTES`] in all, and hands out the smallest that
//! fits. A buffer taken has `len` bytes of unspecified content: every
//! user writes it before reading it.

use std::sync::{Mutex, PoisonError};

/// Buffers smaller than this go to and come from the C allocator, which
/// recycles them well.
pub const MIN: usize = 16 << 10;
/// Most buffers kept.
pub const KEEP: usize = 16;
/// Most bytes kept in all.
pub const KEEP_BYTES: usize = 64 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A buffer of `len` bytes, contents unspecified (initialized, but left
/// from an earlier use).
pub fn take(len: usize) -> Vec<u8> {
    if len >= MIN {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        // The one that needs the fewest bytes zeroed (its length is what
        // is initialized), then the smallest.
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= len)
            .min_by_key(|(_, v)| (len.saturating_sub(v.len()), v.capacity()))
            .map(|(i, _)| i);
        if let Some(i) = best {
            let mut v = pool.swap_remove(i);
            drop(pool);
            if v.len() >= len {
                v.truncate(len);
            } else {
                v.resize(len, 0);
            }
            return v;
        }
    }
    vec![0; len]
}

/// Give a buffer back for reuse.
pub fn give(v: Vec<u8>) {
    let cap = v.capacity();
    if cap < MIN {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let held: usize = pool.iter().map(Vec::capacity).sum();
    if pool.len() < KEEP && held + cap <= KEEP_BYTES {
        pool.push(v);
    } else if let Some(i) = (0..pool.len()).min_by_key(|&i| pool[i].capacity())
        && pool[i].capacity() < cap
        && held - pool[i].capacity() + cap <= KEEP_BYTES
    {
        // Keep the larger one.
        pool[i] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_with_their_length() {
        let mut v = take(MIN * 2);
        assert_eq!(v.len(), MIN * 2);
        v[0] = 7;
        let p = v.as_ptr();
        give(v);
        let w = take(MIN + 1);
        assert_eq!(w.len(), MIN + 1);
        // The same memory, when no other test took it meanwhile.
        if w.as_ptr() == p {
            assert_eq!(w[0], 7);
        }
        let small = take(10);
        assert_eq!(small, vec![0; 10]);
        give(w);
    }
}
