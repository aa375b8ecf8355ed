//! Collectives over a communicator's collective context.
//!
//! All members call collectives in the same order and the engine keeps
//! messages of one sender and tag in order, so each algorithm needs only
//! its own tag. Reductions assume commutative operations (every
//! predefined operation is), and every member combines the same values in
//! the same grouping, so floating-point results agree bit for bit.

use shm_engine::Source;

use crate::core::{Comm, MpiResult, Runtime};
use crate::ops::{self, Elem};

const BARRIER: i32 = 1;
const BCAST: i32 = 2;
const REDUCE: i32 = 3;
const ALLREDUCE: i32 = 4;

/// The members, my rank, and the collective context of communicator `slot`.
fn group(rt: &Runtime, slot: usize) -> MpiResult<(Vec<u32>, usize, u32)> {
    let c = rt.comm(slot)?;
    Ok((c.members.clone(), c.rank as usize, c.ctx + 1))
}

fn send(rt: &mut Runtime, to: u32, ctx: u32, tag: i32, data: &[u8]) -> MpiResult<()> {
    Ok(rt.ep.send(to, Comm::tag(ctx, tag), data)?)
}

fn recv(rt: &mut Runtime, from: u32, ctx: u32, tag: i32, buf: &mut [u8]) -> MpiResult<()> {
    rt.ep
        .recv(Source::Rank(from), Comm::tag_match(ctx, tag), buf)?;
    Ok(())
}

/// Send `out` to `to` while receiving from `from` into `inb`.
fn exchange(
    rt: &mut Runtime,
    to: u32,
    from: u32,
    ctx: u32,
    tag: i32,
    out: &[u8],
    inb: &mut [u8],
) -> MpiResult<()> {
    // SAFETY: `inb` outlives the request, which is waited for below.
    let r = unsafe {
        rt.ep.irecv_raw(
            Source::Rank(from),
            Comm::tag_match(ctx, tag),
            inb.as_mut_ptr(),
            inb.len(),
        )?
    };
    rt.ep.send(to, Comm::tag(ctx, tag), out)?;
    rt.ep.wait(r)?;
    Ok(())
}

/// Dissemination barrier: ceil(log2 n) rounds of zero-byte messages.
pub fn barrier(rt: &mut Runtime, slot: usize) -> MpiResult<()> {
    let (m, me, ctx) = group(rt, slot)?;
    let n = m.len();
    let mut k = 1;
    while k < n {
        exchange(
            rt,
            m[(me + k) % n],
            m[(me + n - k) % n],
            ctx,
            BARRIER,
            &[],
            &mut [],
        )?;
        k *= 2;
    }
    Ok(())
}

/// Binomial-tree broadcast from `root`.
pub fn bcast(rt: &mut Runtime, slot: usize, buf: &mut [u8], root: usize) -> MpiResult<()> {
    let (m, me, ctx) = group(rt, slot)?;
    let n = m.len();
    let vr = (me + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            recv(rt, m[(vr - mask + root) % n], ctx, BCAST, buf)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            send(rt, m[(vr + mask + root) % n], ctx, BCAST, buf)?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Binomial-tree reduction of `acc` to `root`, where the result is left
/// in `acc` (elsewhere `acc` is scratch).
pub fn reduce(
    rt: &mut Runtime,
    slot: usize,
    acc: &mut [u8],
    op: i32,
    elem: Elem,
    root: usize,
) -> MpiResult<()> {
    let (m, me, ctx) = group(rt, slot)?;
    let n = m.len();
    let vr = (me + n - root) % n;
    let mut tmp = vec![0u8; acc.len()];
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < n {
                recv(rt, m[(src + root) % n], ctx, REDUCE, &mut tmp)?;
                ops::apply(op, elem, &tmp, acc)?;
            }
        } else {
            send(rt, m[((vr & !mask) + root) % n], ctx, REDUCE, acc)?;
            break;
        }
        mask <<= 1;
    }
    Ok(())
}

/// Recursive-doubling allreduce of `acc` in place. With n not a power of
/// two, the first `2 * (n - p)` ranks pair up first so that `p` (the
/// largest power of two below n) ranks run the doubling.
pub fn allreduce(
    rt: &mut Runtime,
    slot: usize,
    acc: &mut [u8],
    op: i32,
    elem: Elem,
) -> MpiResult<()> {
    let (m, me, ctx) = group(rt, slot)?;
    let n = m.len();
    let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
    let rem = n - p;
    let mut tmp = vec![0u8; acc.len()];
    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            send(rt, m[me + 1], ctx, ALLREDUCE, acc)?;
            None
        } else {
            recv(rt, m[me - 1], ctx, ALLREDUCE, &mut tmp)?;
            ops::apply(op, elem, &tmp, acc)?;
            Some(me / 2)
        }
    } else {
        Some(me - rem)
    };
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < p {
            let peer = nr ^ mask;
            let peer = if peer < rem { peer * 2 + 1 } else { peer + rem };
            exchange(rt, m[peer], m[peer], ctx, ALLREDUCE, acc, &mut tmp)?;
            ops::apply(op, elem, &tmp, acc)?;
            mask <<= 1;
        }
    }
    if me < 2 * rem {
        if me % 2 == 0 {
            recv(rt, m[me + 1], ctx, ALLREDUCE, acc)?;
        } else {
            send(rt, m[me - 1], ctx, ALLREDUCE, acc)?;
        }
    }
    Ok(())
}

/// Allreduce with `MPI_MAX` of one `u32` (context-id agreement).
pub fn allreduce_max_u32(rt: &mut Runtime, slot: usize, v: &mut [u8; 4]) -> MpiResult<()> {
    allreduce(rt, slot, v, crate::abi::MPI_MAX, Elem::U32)
}
