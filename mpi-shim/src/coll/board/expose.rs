//! Large data copied once, straight from its owner's memory. Instead of
//! copying its data into its data buffers, a piece at a time, for every
//! reader to copy out again, a member *exposes* it: it posts the data's
//! address and length in its flag line, and each reader copies what it
//! needs from there with cross-memory attach (`process_vm_readv`), one
//! system call per block. Every byte crosses once, the readers copy in
//! parallel, and there is one step to wait for instead of one per piece.
//!
//! The owner leaves the memory unchanged, and its collective does not
//! end, until every reader is done copying: the readers of a bcast or a
//! scatter post the exposure's step only after their copy (their
//! acknowledgement), and the root waits for every post of it; allgather
//! and alltoall take one more step, which each member posts after its
//! copies and waits for at all; a reduction exposes its vector at one
//! step and its reduced slice at the next, which each member posts after
//! its copies of the first, and takes a third step, posted after its
//! copies of the second; a gather's or gatherv's root posts a second
//! step once its copies are done.
//!
//! Allgather(v), alltoall, bcast, scatter(v), reduce and allreduce take
//! this way for blocks from a size that every member of the board knows
//! alike ([`allgather`], [`alltoall`], [`bcast`], [`scatter`],
//! [`scatterv`], [`reduce`]), gather for blocks from a size up to a data
//! buffer's ([`gather`]), and gatherv for blocks larger than a data
//! buffer, in their schedules ([`super::algo`]) and their direct calls ([`super::direct`]),
//! which take the same steps. Boards exist only where cross-memory attach
//! works: a process takes part in boards only if its start-up probe
//! could read another process of the node with it (and its peers'
//! descriptors can be taken). A copy that still fails makes the
//! collective fail with the reason, after its steps ran, so that no member
//! waits for it in vain.

use shm_engine::board::Board;
use shm_engine::iov;

use super::algo::share;
use super::{DATA, PLACED, Ran, Team, mismatch, read};
use crate::core::{Class, MpiError};

/// Bytes of a block from which allgather and alltoall expose it rather
/// than copy it through the board's data buffers, where the members have
/// a CPU each. At 2 processes, 32 KiB blocks took 0.89 of the time the
/// data buffers' way took, 16 KiB 1.25 (the kernel pins the pages of
/// every copy).
pub const EXPOSE: usize = 32 << 10;

/// Bytes from which a bcast exposes its buffer, where the members have a
/// CPU each. Below, its pieces do as well (the root places one while the
/// readers copy the previous one out). At 2 processes, medians of 5 and
/// of 7 alternating runs, on a host whose cores hand a cache line over
/// in about 95 ns: with the root writing its buffer before each call, as
/// applications do, exposed took 0.93-1.08 of the pieces' time at 32 KiB,
/// 0.86-0.97 at 48 KiB, 0.80-0.90 at 64 KiB and 0.77-0.79 at 96 KiB; on
/// a buffer nobody writes between calls (what the common benchmarks
/// time: the reader finds the root's lines in its own caches from the
/// last call), 0.32-0.53 from 32 to 96 KiB. When this was 128 KiB, the host in
/// another state (88 ns a line) had 1.9 at 32 KiB and 1.2 at 64 KiB on
/// rewritten buffers, 0.4-0.7 on unwritten ones: from 64 KiB exposure
/// lost little in one state and won in the other.
pub const EXPOSE_BCAST: usize = 64 << 10;

/// Bytes of a vector from which reduce and allreduce expose it, where the
/// members have a CPU each. At 2 processes, medians of 6 alternating runs:
/// 1 MiB took 0.72 of the time of the pieces' way (169 against 235 us),
/// 256 KiB 0.88 (53 against 60 us); at 64 KiB the two were within noise
/// of each other. Where members outnumber CPUs, reductions keep the data
/// buffers: exposed, 1 MiB took 1.1-1.4 of their time at 4 and at 8
/// processes on 2 CPUs, 256 KiB 1.4-2.
pub const EXPOSE_REDUCE: usize = 256 << 10;

// Where members outnumber CPUs, a step costs process switches, and an
// exposure takes two (the exposure, and the step that releases the
// memory) where the data buffers' way takes one step per piece: it
// exposes only data of more than one piece. At 8 processes on 2 CPUs, an
// allgather of 128 KiB blocks (one piece) took 1.1-1.2 of the pieces'
// time exposed, of 1 MiB blocks 0.89; an alltoall of 32 KiB blocks (two
// pieces) 0.5-0.65.

/// Whether an allgather of blocks of `blk` bytes (the longest, for
/// allgatherv) exposes them.
pub fn allgather(team: &Team, blk: usize) -> bool {
    if team.crowded() {
        blk > DATA
    } else {
        blk >= EXPOSE
    }
}

/// Bytes of a block from which a gather exposes it for its root to copy,
/// where the members have a CPU each, up to one data buffer's worth
/// ([`gather`]). A block of one piece is otherwise copied in and then
/// out, one after the other; exposed, it is copied once. At 2 processes
/// (medians of 5 and of 9 alternating runs), exposed took 0.47-0.62 of
/// the pieces' time from 32 to 256 KiB on buffers nobody writes between
/// calls; on buffers rewritten before each call, 0.98-1.42 at 32 KiB,
/// 0.92-1.11 at 64 KiB and 0.85-0.97 at 128 KiB. Longer blocks keep the
/// pieces, which pipeline (the root copies one out while the member
/// writes the next): exposed, 256 KiB took 1.08 of their time rewritten
/// (in one run), and 1 MiB 1.2-1.5.
pub const EXPOSE_GATHER: usize = 64 << 10;

/// Whether a gather of blocks of `blk` bytes exposes them: from
/// [`EXPOSE_GATHER`] bytes to one data buffer's worth. The members then
/// take the two steps of a gatherv (`algo::gather_released`), the
/// second of which releases the exposed blocks once the root copied
/// them. Where members outnumber CPUs, that extra step costs process
/// switches, and blocks keep the pieces.
pub fn gather(team: &Team, blk: usize) -> bool {
    !team.crowded() && (EXPOSE_GATHER..=DATA).contains(&blk)
}

/// Whether an alltoall of blocks of `blk` bytes exposes its send buffers.
pub fn alltoall(team: &Team, blk: usize) -> bool {
    if team.crowded() {
        blk > share(team.size())
    } else {
        blk >= EXPOSE
    }
}

/// Bytes of a block from which a scatter's root exposes its send blocks,
/// where the members have a CPU each. At 2 processes each reader copies
/// its block once instead of the root placing it and the reader copying
/// it out, one step per share: 16 KiB took 0.6 of that way's time, 32 KiB
/// to 1 MiB 0.5-0.7; 4 KiB 1.2.
pub const EXPOSE_SCATTER: usize = 16 << 10;

/// Whether a scatter of blocks of `blk` bytes exposes the root's send
/// blocks. Where members outnumber CPUs, as for [`alltoall`]: at 4 and 8
/// processes on 2 CPUs, 128 KiB blocks took 0.45-0.5 of the pieces' time
/// exposed, 32 KiB 1.0-1.3.
pub fn scatter(team: &Team, blk: usize) -> bool {
    if team.crowded() {
        blk > share(team.size())
    } else {
        blk >= EXPOSE_SCATTER
    }
}

/// Whether a scatterv's root exposes a block of `len` bytes rather than
/// place it in the member's share of its data buffer: as [`scatter`]
/// does, and always where the block does not fit in the share after its
/// [`record`] (a scatterv takes one step). Only the root decides.
pub fn scatterv(team: &Team, len: usize) -> bool {
    scatter(team, len) || len + LEN > share(team.size())
}

/// Whether a reduce or allreduce of a vector of `len` bytes exposes the
/// vectors, and then the reduced slices: from [`EXPOSE_REDUCE`] bytes,
/// where the members have a CPU each.
pub fn reduce(team: &Team, len: usize) -> bool {
    !team.crowded() && len >= EXPOSE_REDUCE
}

/// Whether a bcast of `len` bytes exposes the root's buffer.
pub fn bcast(team: &Team, len: usize) -> bool {
    if team.crowded() {
        len > team.bcast_piece()
    } else {
        len >= EXPOSE_BCAST
    }
}

/// Bytes an exposure takes in a flag line: the address, then the length.
pub const LEN: usize = 16;

/// The line's bytes that expose `len` bytes at `ptr` of this process.
pub fn encode(ptr: *const u8, len: usize) -> [u8; LEN] {
    let mut line = [0; LEN];
    line[..8].copy_from_slice(&(ptr as u64).to_ne_bytes());
    line[8..].copy_from_slice(&(len as u64).to_ne_bytes());
    line
}

/// The address and the length that `line` holds ([`encode`]).
fn decode(line: &[u8; LEN]) -> (u64, usize) {
    let word = |a: usize| u64::from_ne_bytes(line[a..a + 8].try_into().expect("8 bytes"));
    (word(0), word(8) as usize)
}

/// Copy bytes `off..off + dst.len()` of what member `m` (process `pid`)
/// exposed at step `t` into `dst`; this member expects it to have exposed
/// `expect` bytes. As with `super::read`, a member that exposed another
/// length (type signatures that differ, an erroneous program) gives what
/// it has and the answer is a truncation error; a copy the kernel refused
/// is an error too. The caller saw `m` post `t` and has not posted `t + 1`.
pub(super) fn pull(
    b: &Board<'_>,
    m: usize,
    pid: u32,
    t: u64,
    expect: usize,
    off: usize,
    dst: &mut [u8],
) -> Ran {
    debug_assert!(b.posted(m, t));
    let mut line = [0; LEN];
    if b.read(m, t, &mut line) as usize != LEN {
        return Ran::Failed(MpiError::new(
            Class::Intern,
            "a process posted data where this one expects an exposed buffer",
        ));
    }
    copy(pid, decode(&line), expect, off, dst)
}

/// The record a scatterv's root writes at the head of a member's share
/// of its data buffer: the block's length, and its address where the
/// block is exposed (`Some`) or null where its bytes follow the record.
/// Only the root decides which; the member reads the record
/// (`take_placed`), so lengths that differ are found either way.
pub fn record(exposed: Option<*const u8>, len: usize) -> [u8; LEN] {
    encode(exposed.unwrap_or(std::ptr::null()), len)
}

/// Copy into `dst` the block that member `m` (process `pid`) placed for
/// this member at offset `at` of its data buffer of step `t`: after a
/// [`record`] there, or exposed at the address the record gives.
/// `dst.len()` bytes expected; errors as for [`pull`]. The caller saw `m`
/// post `t` and has not posted `t + 1`.
pub(super) fn take_placed(
    b: &Board<'_>,
    m: usize,
    pid: u32,
    t: u64,
    at: usize,
    dst: &mut [u8],
) -> Ran {
    let mut line = [0; LEN];
    let _ = read(b, m, t, PLACED, at, LEN, |x| line.copy_from_slice(x));
    let (addr, len) = decode(&line);
    if addr != 0 {
        return copy(pid, (addr, len), dst.len(), 0, dst);
    }
    let have = dst.len().min(len);
    // `read` keeps within the data buffer, whatever the record says.
    let _ = read(b, m, t, PLACED, at + LEN, have, |x| {
        shm_engine::copy::slice(&mut dst[..x.len()], x)
    });
    if len == dst.len() {
        Ran::Done
    } else {
        Ran::Failed(mismatch(len, dst.len()))
    }
}

/// Copy bytes `off..off + dst.len()` of the `len` bytes at `addr` in the
/// memory of process `pid` (an exposure, [`decode`]d), `expect` bytes of
/// them expected ([`pull`]).
fn copy(pid: u32, (addr, len): (u64, usize), expect: usize, off: usize, dst: &mut [u8]) -> Ran {
    let have = dst.len().min(len.saturating_sub(off));
    // An address past the end of memory (from an erroneous exposure) is
    // refused like any the kernel will not copy.
    let from = addr.saturating_add(off as u64);
    if let Err(e) = iov::read_remote(pid, from, &mut dst[..have]) {
        return Ran::Failed(MpiError::new(
            Class::Other,
            format!(
                "could not copy {have} bytes from process {pid} of this node \
                 (cross-memory attach): {e}"
            ),
        ));
    }
    if len == expect {
        Ran::Done
    } else {
        Ran::Failed(mismatch(len, expect))
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{Layout, alloc_zeroed, dealloc};

    use shm_engine::board::{Area, area_len};

    use super::*;
    use crate::core::Code;

    /// A member's whole area, flag lines and data buffers, zeroed (nothing
    /// posted), as a board's lives in the shared heap.
    struct Whole(*mut u8);

    impl Whole {
        fn layout() -> Layout {
            Layout::from_size_align(area_len(DATA), 64).expect("an area's layout")
        }

        fn new() -> Self {
            // SAFETY: the layout is not empty.
            let p = unsafe { alloc_zeroed(Self::layout()) };
            assert!(!p.is_null(), "out of memory");
            Self(p)
        }

        fn area(&self) -> &Area {
            // SAFETY: aligned and zeroed, which is a valid `Area` (its
            // lines' words and bytes); the data buffers follow it.
            unsafe { &*self.0.cast::<Area>() }
        }
    }

    impl Drop for Whole {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.0, Self::layout()) }
        }
    }

    /// The class of a failed pull.
    fn failed(r: Ran) -> Code {
        match r {
            Ran::Failed(e) => e.code,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    /// Member 1 exposes memory of this process, and member 0 pulls from
    /// it with cross-memory attach (on this process itself).
    #[test]
    fn a_pull_copies_what_was_exposed_and_checks_its_length() {
        let areas = [Area::after(0), Area::after(0)];
        let refs: Vec<&Area> = areas.iter().collect();
        let (owner, reader) = (Board::new(&refs, 1), Board::new(&refs, 0));
        let pid = std::process::id();
        let data: Vec<u8> = (0..100).collect();
        owner.post(1, LEN as u64, &encode(data.as_ptr(), data.len()));
        let mut out = [0u8; 10];
        assert!(matches!(
            pull(&reader, 1, pid, 1, 100, 20, &mut out),
            Ran::Done
        ));
        assert_eq!(out[..], data[20..30]);

        // Another length than expected (type signatures that differ):
        // what there is, and a truncation error.
        let mut out = [0u8; 10];
        let code = failed(pull(&reader, 1, pid, 1, 120, 95, &mut out));
        assert_eq!(code, Code::Class(Class::Truncate));
        assert_eq!(out[..5], data[95..]);
        assert_eq!(out[5..], [0; 5]);

        // Memory the kernel does not let the reader copy: an error, not
        // a fault.
        owner.post(2, LEN as u64, &encode(std::ptr::null(), 64));
        let code = failed(pull(&reader, 1, pid, 2, 64, 0, &mut [0u8; 64]));
        assert_eq!(code, Code::Class(Class::Other));

        // A member that posted data where an exposure belongs.
        owner.post(3, 4, &[1, 2, 3, 4]);
        let code = failed(pull(&reader, 1, pid, 3, 4, 0, &mut [0u8; 4]));
        assert_eq!(code, Code::Class(Class::Intern));
    }

    /// A reader of data placed in a data buffer finds bytes posted in
    /// the line instead (a poster that chose the line from another block
    /// length): a truncation error, whatever the buffer holds.
    #[test]
    fn placed_data_posted_in_the_line_is_a_truncation() {
        let wholes = [Whole::new(), Whole::new()];
        let refs: Vec<&Area> = wholes.iter().map(Whole::area).collect();
        let (poster, reader) = (Board::new(&refs, 1), Board::new(&refs, 0));
        poster.post(1, 8, &[1; 8]);
        let code = failed(read(&reader, 1, 1, PLACED, 0, 8, |_| ()));
        assert_eq!(code, Code::Class(Class::Truncate));
        poster.post(2, 0, &[]);
        assert!(matches!(
            read(&reader, 1, 2, PLACED, 0, 8, |_| ()),
            Ran::Done
        ));
    }

    /// Member 1, a scatterv's root, writes a record and a block at offset
    /// `at` of its data buffer of each step, or a record of an exposure
    /// of this process's memory; member 0 takes its block.
    #[test]
    fn a_placed_block_is_taken_from_the_buffer_or_pulled_where_its_record_says() {
        let wholes = [Whole::new(), Whole::new()];
        let refs: Vec<&Area> = wholes.iter().map(Whole::area).collect();
        let (root, reader) = (Board::new(&refs, 1), Board::new(&refs, 0));
        let pid = std::process::id();
        let block: Vec<u8> = (0..200u8).collect();
        let at = 4096;
        let place = |t: u64, rec: [u8; LEN], bytes: &[u8]| {
            // SAFETY: the root's own data buffer of step `t`, which the
            // reader reads only after the post.
            unsafe {
                let dst = root.data(1, t, DATA).add(at);
                std::ptr::copy_nonoverlapping(rec.as_ptr(), dst, LEN);
                shm_engine::copy::bytes(bytes.as_ptr(), dst.add(LEN), bytes.len());
            }
            root.post(t, 0, &[]);
        };

        // The bytes follow the record.
        place(1, record(None, 100), &block[..100]);
        let mut out = [0u8; 100];
        assert!(matches!(
            take_placed(&reader, 1, pid, 1, at, &mut out),
            Ran::Done
        ));
        assert_eq!(out[..], block[..100]);

        // Lengths that differ (type signatures that differ), both ways:
        // what fits, and a truncation error.
        place(2, record(None, 120), &block[..120]);
        let mut out = [0u8; 100];
        let code = failed(take_placed(&reader, 1, pid, 2, at, &mut out));
        assert_eq!(code, Code::Class(Class::Truncate));
        assert_eq!(out[..], block[..100]);
        place(3, record(None, 50), &block[50..100]);
        let mut out = [7u8; 100];
        let code = failed(take_placed(&reader, 1, pid, 3, at, &mut out));
        assert_eq!(code, Code::Class(Class::Truncate));
        assert_eq!(out[..50], block[50..100]);
        assert_eq!(out[50..], [7; 50]);

        // The record gives the block's address: pulled from there, with
        // cross-memory attach (on this process itself), whatever follows
        // the record in the buffer.
        place(4, record(Some(block.as_ptr()), 200), &[0xee; 16]);
        let mut out = [0u8; 200];
        assert!(matches!(
            take_placed(&reader, 1, pid, 4, at, &mut out),
            Ran::Done
        ));
        assert_eq!(out[..], block[..]);
        place(5, record(Some(block.as_ptr()), 200), &[]);
        let mut out = [0u8; 150];
        let code = failed(take_placed(&reader, 1, pid, 5, at, &mut out));
        assert_eq!(code, Code::Class(Class::Truncate));
        assert_eq!(out[..], block[..150]);

        // An address the kernel does not let the reader copy: an error,
        // not a fault.
        place(6, record(Some(8 as *const u8), 64), &[]);
        let code = failed(take_placed(&reader, 1, pid, 6, at, &mut [0u8; 64]));
        assert_eq!(code, Code::Class(Class::Other));
    }
}
