//! The collectives as board steps appended to a schedule whose builder
//! has the communicator's board ([`super`]).

use std::sync::Arc;

use super::super::sched::{Builder, Span};
use super::expose;
use super::{Await, BoardStep, DATA, INLINE, PLACED, REF_LEN, SMALL, Team, Tiers};

/// The first collective of a board: trade the areas' references, map
/// them, and trade whether that worked ([`Team::settle`]). A member
/// without an area sends zeros, which no member can map.
pub fn setup(b: &mut Builder, team: &Team) {
    let own = team.own_ref();
    let n = b.size;
    let all = b.buf(n * REF_LEN);
    let parts = all.split(std::iter::repeat_n(REF_LEN, n));
    let mine = b.input(own.to_vec());
    b.copy(mine, parts[b.rank]);
    super::super::algo::allgatherv_p2p(b, &parts);
    let oks = b.buf(n);
    let each = oks.split(std::iter::repeat_n(1, n));
    b.board(BoardStep::Attach {
        refs: all,
        ok: each[b.rank],
    });
    super::super::algo::allgatherv_p2p(b, &each);
    b.board(BoardStep::Settle { oks });
}

fn team(b: &Builder) -> Arc<Team> {
    b.team().expect("a board algorithm without a board").clone()
}

/// `len` bytes in pieces (offset, bytes) of `step` bytes, the last one
/// shorter (one empty piece for `len == 0`).
pub(super) fn split(len: usize, step: usize) -> impl Iterator<Item = (usize, usize)> {
    let n = len.div_ceil(step).max(1);
    (0..n).map(move |i| (i * step, step.min(len - (i * step).min(len))))
}

/// `len` bytes in pieces of at most [`DATA`] bytes, whole units of
/// `unit` bytes each.
pub(super) fn pieces(len: usize, unit: usize) -> impl Iterator<Item = (usize, usize)> {
    split(len, (DATA / unit.max(1)).max(1) * unit.max(1))
}

/// Bytes a step of a bcast carries when the board's members are no more
/// than the CPUs they may run on: the root places a piece in one data
/// buffer while the readers copy the previous one out of the other, and
/// pieces this small stay in the caches nearest the cores. At 2
/// processes, 8 KiB pieces took a 1 MiB bcast 0.80 and a 64 KiB one 0.65
/// of the time of 128 KiB pieces; 4 KiB was no better, 16 and 32 KiB
/// little better than 128. That was on a host whose cores handed a cache
/// line over in 28 ns. Where they take 88 ns, the opposite holds: 32 KiB
/// pieces took 0.68-0.77 of the time of 8 KiB ones from 32 to 96 KiB.
/// Nothing a process reads here tells the two apart (hwloc shows one L3
/// shared by both CPUs either way), so pieces stay 8 KiB; a choice by L3
/// sharing, or by a hand-off time measured at set-up, would follow the
/// host. Where members outnumber the CPUs, each hand-off
/// may wait for a reader to get a core back, and pieces stay [`DATA`]
/// bytes. (The CPUs counted are those the members' affinity masks allow
/// them, so `taskset` and a batch system's cpuset count; a container's
/// CPU quota does not.)
const BCAST_PIECE: usize = 8 << 10;

/// Bytes per step of a bcast among `n` members that may run on `cpus`
/// CPUs between them ([`shm_engine::Endpoint::cpus_of`]: every member
/// counts the same, so every member takes the same steps).
pub(super) fn bcast_piece(n: usize, cpus: usize) -> usize {
    if n <= cpus { BCAST_PIECE } else { DATA }
}

/// Bytes of each member's block a step of scatter or all-to-all carries
/// (of scatterv: its record and block): one data buffer holds a share
/// for each of the `n` members.
pub(super) fn share(n: usize) -> usize {
    (DATA / n).max(1)
}

/// `MPI_Barrier`: one step, each member waiting for the posts
/// `Team::barrier_plan` names before and after its own, as the direct
/// call does.
pub fn barrier(b: &mut Builder) {
    let team = team(b);
    let t = team.step();
    let (before, after) = team.barrier_plan();
    wait_for(b, &team, before, t);
    b.board(BoardStep::Post {
        t,
        src: None,
        ahead: false,
    });
    wait_for(b, &team, after, t);
}

/// Wait until every member `a` names posted step `t`.
fn wait_for(b: &mut Builder, team: &Team, a: Await, t: u64) {
    match a {
        Await::Nobody => {}
        Await::Everyone => b.board(BoardStep::Wait { t, who: None }),
        Await::Leaders => b.board(BoardStep::WaitLeaders { t }),
        _ => {
            for m in team.awaited(a) {
                b.board(BoardStep::Wait { t, who: Some(m) });
            }
        }
    }
}

/// The last step of a collective whose members exposed memory: each
/// posts once its copies are done, and waits until all did before its
/// memory may change (the direct calls' `Run::release`).
pub fn release(b: &mut Builder) {
    let t = team(b).step();
    b.board(BoardStep::Post {
        t,
        src: None,
        ahead: false,
    });
    b.board(BoardStep::Wait { t, who: None });
}

/// `MPI_Bcast` of `data` from `root`: exposed by the root
/// ([`expose::bcast`]), else in pieces of [`Team::bcast_piece`] bytes.
pub fn bcast(b: &mut Builder, data: Span, root: usize) {
    let team = team(b);
    if expose::bcast(&team, data.len) {
        // The readers acknowledge once they copied; the root's data stays
        // put until all did.
        let t = team.step();
        if b.rank == root {
            b.board(BoardStep::Expose {
                t,
                src: data,
                ahead: true,
            });
            b.board(BoardStep::Wait { t, who: None });
        } else {
            b.board(BoardStep::Wait { t, who: Some(root) });
            pull(b, root, t, data.len, 0, data);
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: true,
            });
        }
        return;
    }
    for (off, len) in split(data.len, team.bcast_piece()) {
        let t = team.step();
        let piece = data.sub(off, len);
        // Neither the root nor a reader waits for everyone's post: both
        // may run ahead (`BoardStep::Post`).
        if b.rank == root {
            b.board(BoardStep::Post {
                t,
                src: Some(piece),
                ahead: true,
            });
        } else {
            // Acknowledge, then copy (as `direct::bcast` does).
            b.board(BoardStep::Wait { t, who: Some(root) });
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: true,
            });
            fetch(b, root, t, len, 0, piece);
        }
    }
}

fn pull(b: &mut Builder, m: usize, t: u64, expect: usize, off: usize, dst: Span) {
    if dst.len > 0 {
        b.board(BoardStep::Pull {
            m,
            t,
            expect,
            off,
            dst,
        });
    }
}

/// Expose `src` at a new step, and wait until every member exposed its
/// own: the step's number.
fn expose_all(b: &mut Builder, team: &Team, src: Span) -> u64 {
    let t = team.step();
    b.board(BoardStep::Expose {
        t,
        src,
        ahead: false,
    });
    b.board(BoardStep::Wait { t, who: None });
    t
}

fn fetch(b: &mut Builder, m: usize, t: u64, posted: usize, off: usize, dst: Span) {
    if dst.len > 0 {
        b.board(BoardStep::Fetch {
            m,
            t,
            posted,
            off,
            dst,
        });
    }
}

/// Reduce, in rank order, what members `from` (increasing) posted at
/// step `t` (each `posted` bytes), bytes `off..off + dst.len`, into
/// `dst`; this member's own part is `own`.
fn reduce_posted(
    b: &mut Builder,
    t: u64,
    from: impl DoubleEndedIterator<Item = usize>,
    posted: usize,
    off: usize,
    own: Span,
    dst: Span,
) {
    let me = b.rank;
    let mut from = from.rev();
    let Some(last) = from.next() else {
        return;
    };
    if last == me {
        b.copy(own, dst);
    } else {
        fetch(b, last, t, posted, off, dst);
    }
    for j in from {
        // dst = x_j op dst: the rank order holds for any operation.
        if j == me {
            b.reduce(own, dst, true);
        } else if dst.len > 0 {
            b.board(BoardStep::Reduce {
                m: j,
                t,
                posted,
                off,
                dst,
            });
        }
    }
}

/// Slice `j` of `len` bytes shared among `n` members, in whole elements
/// of `elem` bytes split as evenly as they go: (offset, bytes).
pub(super) fn slice(len: usize, elem: usize, n: usize, j: usize) -> (usize, usize) {
    let elems = len / elem;
    let (lo, hi) = (elems * j / n * elem, elems * (j + 1) / n * elem);
    (lo, hi - lo)
}

/// Where member `me` of `n` starts folding its slice of the exposed
/// vectors, `x_0 op (x_1 op (... op x_{n-1}))` built from the inside
/// out: the member whose vector goes straight into the result, and
/// whether the member's own is folded in next. That is x_{n-1}, except
/// at member n-1 for an operation that `commutes`: it takes x_{n-2} op
/// x_{n-1} as x_{n-1} op x_{n-2}, so it pulls x_{n-2} into the result and
/// folds its own in, rather than copy its own first (at 2 members, a copy
/// of half the vector that the other member does not make). The rest
/// follow from the one before `first` down to 0.
pub(super) fn innermost(n: usize, me: usize, commutes: bool) -> (usize, bool) {
    let swap = me == n - 1 && n > 1 && commutes;
    (if swap { n - 2 } else { n - 1 }, swap)
}

/// `MPI_Allreduce` (`root: None`) or `MPI_Reduce` to `root` of `acc`
/// (elements of `elem` bytes); the result replaces `acc` (at the root).
pub fn reduce(b: &mut Builder, acc: Span, elem: usize, root: Option<usize>) {
    let team = team(b);
    let (n, me) = (b.size, b.rank);
    let reads = root.is_none_or(|r| r == me);
    if acc.len * n <= SMALL
        && let Some(tiers) = team.tiers_for(b.op())
    {
        return reduce_tiered(b, &team, tiers, acc, reads);
    }
    if acc.len * n <= SMALL {
        let t = team.step();
        b.board(BoardStep::Post {
            t,
            src: Some(acc),
            ahead: !reads,
        });
        if reads {
            b.board(BoardStep::Wait { t, who: None });
            let res = b.buf(acc.len);
            reduce_posted(b, t, 0..n, acc.len, 0, acc, res);
            b.copy(res, acc);
        }
        return;
    }
    if expose::reduce(&team, acc.len) {
        return reduce_exposed(b, &team, acc, elem, reads);
    }
    for (off, len) in pieces(acc.len, elem) {
        let piece = acc.sub(off, len);
        let slice = |j: usize| slice(len, elem, n, j);
        let t1 = team.step();
        b.board(BoardStep::Post {
            t: t1,
            src: Some(piece),
            ahead: false,
        });
        b.board(BoardStep::Wait { t: t1, who: None });
        let (lo, sl) = slice(me);
        let mine = piece.sub(lo, sl);
        let res = b.buf(sl);
        if sl > 0 {
            reduce_posted(b, t1, 0..n, len, lo, mine, res);
        }
        let t2 = team.step();
        b.board(BoardStep::Post {
            t: t2,
            src: Some(res),
            ahead: false,
        });
        if reads {
            b.board(BoardStep::Wait { t: t2, who: None });
            for j in 0..n {
                let (lo, sl) = slice(j);
                if j == me {
                    b.copy(res, mine);
                } else {
                    fetch(b, j, t2, sl, 0, piece.sub(lo, sl));
                }
            }
        }
    }
}

/// A small [`reduce`] on a tiered board (`shm_engine::tiers`), the steps
/// of the direct call (`direct::reduce`): a leader waits for its group's
/// posts and posts their fold, in rank order, instead of its own vector;
/// the members that read the result (`reads`) wait for every leader's
/// post and fold the partials in group order.
fn reduce_tiered(b: &mut Builder, team: &Team, tiers: &Tiers, acc: Span, reads: bool) {
    let me = b.rank;
    let t = team.step();
    let mut mine = acc;
    if tiers.leads(me) {
        wait_for(b, team, Await::Group, t);
        mine = b.buf(acc.len);
        let group = tiers.group(me).iter().copied();
        reduce_posted(b, t, group, acc.len, 0, acc, mine);
    }
    b.board(BoardStep::Post {
        t,
        src: Some(mine),
        ahead: !reads,
    });
    if reads {
        b.board(BoardStep::WaitLeaders { t });
        let res = b.buf(acc.len);
        reduce_posted(b, t, tiers.leaders(), acc.len, 0, mine, res);
        b.copy(res, acc);
    }
}

/// [`reduce`] with the vectors exposed ([`expose::reduce`]): each member
/// folds its slice of every member's vector, copied straight from the
/// owners, in rank order, and exposes the reduced slice; the members that
/// `reads` copy every slice into `acc`; a last step releases the memory.
fn reduce_exposed(b: &mut Builder, team: &Team, acc: Span, elem: usize, reads: bool) {
    let (n, me) = (b.size, b.rank);
    let t1 = expose_all(b, team, acc);
    let (lo, sl) = slice(acc.len, elem, n, me);
    let mine = acc.sub(lo, sl);
    let res = b.buf(sl);
    // res = x_0 op (x_1 op (... op x_{n-1})), as `reduce_posted` folds,
    // the innermost operand straight in `res` ([`innermost`]).
    let (first, swap) = innermost(n, me, b.op().is_none_or(|o| o.commutative()));
    if first == me {
        b.copy(mine, res);
    } else {
        pull(b, first, t1, acc.len, lo, res);
    }
    if swap {
        b.reduce(mine, res, true);
    }
    let operand = b.buf(if (0..first).any(|j| j != me) { sl } else { 0 });
    for j in (0..first).rev() {
        if j == me {
            b.reduce(mine, res, true);
        } else {
            pull(b, j, t1, acc.len, lo, operand);
            b.reduce(operand, res, true);
        }
    }
    let t2 = team.step();
    b.board(BoardStep::Expose {
        t: t2,
        src: res,
        ahead: false,
    });
    if reads {
        b.board(BoardStep::Wait { t: t2, who: None });
        for j in 0..n {
            let (lo, sl) = slice(acc.len, elem, n, j);
            if j == me {
                b.copy(res, acc.sub(lo, sl));
            } else {
                pull(b, j, t2, sl, 0, acc.sub(lo, sl));
            }
        }
    }
    release(b);
}

/// `MPI_Allgatherv` (`root: None`) or `MPI_Gather` to `root`: `blocks[j]`
/// is member `j`'s block; this member's holds its data. An allgather
/// exposes the blocks where [`expose::allgather`] says so, a gather where
/// [`expose::gather`] does (in the two steps of a gatherv).
pub fn gather(b: &mut Builder, blocks: &[Span], root: Option<usize>) {
    let team = team(b);
    let me = b.rank;
    let reads = root.is_none_or(|r| r == me);
    let longest = blocks.iter().map(|s| s.len).max().unwrap_or(0);
    match root {
        None if expose::allgather(&team, longest) => {
            let t = expose_all(b, &team, blocks[me]);
            for (j, &s) in blocks.iter().enumerate().filter(|&(j, _)| j != me) {
                pull(b, j, t, s.len, 0, s);
            }
            return release(b);
        }
        // Every block is as long as the others (one type signature).
        Some(r) if expose::gather(&team, longest) => {
            return gather_released(b, r, blocks[me], blocks, |_| true);
        }
        _ => {}
    }
    for (off, len) in pieces(longest, 1) {
        let t = team.step();
        let part = |s: Span| {
            let lo = off.min(s.len);
            s.sub(lo, len.min(s.len - lo))
        };
        // A gather's root posts nothing: nobody reads its post, which
        // says it may read this step's pieces until it posts the next.
        let gather_root = root == Some(me);
        b.board(BoardStep::Post {
            t,
            src: (!gather_root).then(|| part(blocks[me])),
            ahead: !reads,
        });
        if reads {
            b.board(BoardStep::Wait { t, who: None });
            for (j, &s) in blocks.iter().enumerate() {
                if j != me {
                    let p = part(s);
                    fetch(b, j, t, p.len, 0, p);
                }
            }
        }
    }
}

/// `MPI_Gatherv` to `root`, whose blocks only the root knows (`parts`,
/// at the root; `own` is this member's data): every member takes two
/// steps whatever the lengths (`gather_released`, blocks exposed where
/// `gatherv_exposes` says so).
pub fn gatherv(b: &mut Builder, root: usize, own: Span, parts: &[Span]) {
    gather_released(b, root, own, parts, gatherv_exposes);
}

/// A gather to `root` in two steps (`parts`, at the root; `own` is this
/// member's data). At the first, each member posts its block (through
/// its data buffer, or exposed where `exposes` says so of its length,
/// which the root and the member must decide alike), and the root copies
/// every block; at the second, the root posts once its copies are done,
/// and a member that exposed its block waits for that.
fn gather_released(
    b: &mut Builder,
    root: usize,
    own: Span,
    parts: &[Span],
    exposes: impl Fn(usize) -> bool,
) {
    let team = team(b);
    let me = b.rank;
    let (t, release) = (team.step(), team.step());
    if me == root {
        b.board(BoardStep::Post {
            t,
            src: None,
            ahead: false,
        });
        b.board(BoardStep::Wait { t, who: None });
        for (j, &part) in parts.iter().enumerate().filter(|&(j, _)| j != me) {
            if exposes(part.len) {
                pull(b, j, t, part.len, 0, part);
            } else {
                fetch(b, j, t, part.len, 0, part);
            }
        }
        b.board(BoardStep::Post {
            t: release,
            src: None,
            ahead: false,
        });
        return;
    }
    let exposed = exposes(own.len);
    b.board(if exposed {
        BoardStep::Expose {
            t,
            src: own,
            ahead: true,
        }
    } else {
        BoardStep::Post {
            t,
            src: Some(own),
            ahead: true,
        }
    });
    b.board(BoardStep::Post {
        t: release,
        src: None,
        ahead: true,
    });
    if exposed {
        b.board(BoardStep::Wait {
            t: release,
            who: Some(root),
        });
    }
}

/// Whether a gatherv's member exposes its block of `len` bytes rather
/// than post it through its data buffer: only a block larger than the
/// buffer, which the member and the root decide alike from the length.
pub(super) fn gatherv_exposes(len: usize) -> bool {
    len > DATA
}

/// `MPI_Scatterv` from `root`, whose blocks only the root knows (`parts`,
/// at the root; `own` receives this member's), in one step: at the head
/// of each member's share of its data buffer the root writes a record of
/// the block's length, then the block, or, where [`expose::scatterv`]
/// says so, the block's address in the record; and posts. Each member
/// takes its block (copies it, or pulls it) and acknowledges; a root that
/// exposed a block waits for the acknowledgements.
pub fn scatterv(b: &mut Builder, root: usize, own: Span, parts: &[Span]) {
    let team = team(b);
    let me = b.rank;
    let per = share(b.size);
    let t = team.step();
    if me == root {
        let mut any = false;
        for (j, &src) in parts.iter().enumerate().filter(|&(j, _)| j != me) {
            let exposed = expose::scatterv(&team, src.len);
            any |= exposed;
            let at = j * per;
            b.board(BoardStep::PlaceBlock {
                t,
                src,
                at,
                exposed,
            });
        }
        b.board(BoardStep::Post {
            t,
            src: None,
            ahead: false,
        });
        if any {
            b.board(BoardStep::Wait { t, who: None });
        }
        return;
    }
    b.board(BoardStep::Wait { t, who: Some(root) });
    b.board(BoardStep::Take {
        m: root,
        t,
        at: me * per,
        dst: own,
    });
    b.board(BoardStep::Post {
        t,
        src: None,
        ahead: false,
    });
}

/// Whether a scatter or an alltoall of `n` blocks of `blk` bytes carries
/// a member's blocks all in its flag line, as a bcast or an allgather of
/// up to [`INLINE`] bytes does: each reader then reads one line of each
/// member it reads from (the data buffer would be a second), and a
/// scatter's root posts without waiting for the readers' previous step.
/// Every member decides alike from its own block length; one whose
/// length differs (type signatures that differ) and decides otherwise
/// learns of it from the length the other posted.
pub(super) fn in_line(n: usize, blk: usize) -> bool {
    blk > 0 && n.saturating_mul(blk) <= INLINE
}

/// The span of `blocks`, which lie end to end (a member's send blocks).
fn end_to_end(blocks: &[Span]) -> Span {
    debug_assert!(blocks.windows(2).all(|w| w[0].off + w[0].len == w[1].off));
    Span {
        len: blocks.iter().map(|s| s.len).sum(),
        ..blocks[0]
    }
}

/// `MPI_Scatter` from `root` of blocks of `blk` bytes: at the root
/// `blocks[j]` holds member `j`'s, end to end; `own` receives this
/// member's. Where [`expose::scatter`] says so, the root exposes the
/// blocks and each member copies its own, then acknowledges.
pub fn scatter(b: &mut Builder, root: usize, blocks: &[Span], own: Span, blk: usize) {
    let team = team(b);
    let n = b.size;
    let me = b.rank;
    if in_line(n, blk) {
        // As a bcast of the blocks, each member copying its own.
        let t = team.step();
        if me == root {
            let all = end_to_end(blocks);
            b.board(BoardStep::Post {
                t,
                src: Some(all),
                ahead: true,
            });
            let len = own.len.min(blocks[me].len);
            b.copy(blocks[me].sub(0, len), own.sub(0, len));
        } else {
            b.board(BoardStep::Wait { t, who: Some(root) });
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: true,
            });
            fetch(b, root, t, n * blk, me * blk, own);
        }
        return;
    }
    if expose::scatter(&team, blk) {
        let t = team.step();
        if me == root {
            let all = end_to_end(blocks);
            b.board(BoardStep::Expose {
                t,
                src: all,
                ahead: true,
            });
            let len = own.len.min(blocks[me].len);
            b.copy(blocks[me].sub(0, len), own.sub(0, len));
            b.board(BoardStep::Wait { t, who: None });
        } else {
            b.board(BoardStep::Wait { t, who: Some(root) });
            pull(b, root, t, n * blk, me * blk, own);
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: true,
            });
        }
        return;
    }
    // A step carries `per` bytes of each block, piece j at j * per.
    let per = share(n);
    for (off, len) in split(blk, per) {
        let t = team.step();
        if me == root {
            for (j, &s) in blocks.iter().enumerate() {
                if j != me && len > 0 {
                    b.board(BoardStep::Place {
                        t,
                        src: s.sub(off, len),
                        at: j * per,
                    });
                }
            }
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: false,
            });
            // (With MPI_IN_PLACE `own` is not unpacked.)
            if len > 0 && blocks[me].len >= off + len {
                b.copy(blocks[me].sub(off, len), own.sub(off, len));
            }
        } else {
            b.board(BoardStep::Wait { t, who: Some(root) });
            // Acknowledge before copying: BP2 lets a member read step `t`
            // until it posts `t + 1`, so the root may place the next
            // pieces in its other buffer meanwhile.
            b.board(BoardStep::Post {
                t,
                src: None,
                ahead: false,
            });
            fetch(b, root, t, PLACED, me * per, own.sub(off, len));
        }
    }
}

/// `MPI_Alltoall` of blocks of `blk` bytes: `sends[j]` goes to member `j`,
/// `recvs[j]` comes from it; the send blocks lie end to end. Where
/// [`expose::alltoall`] says so, every member exposes its send blocks.
pub fn alltoall(b: &mut Builder, sends: &[Span], recvs: &[Span], blk: usize) {
    let team = team(b);
    let n = b.size;
    let me = b.rank;
    if expose::alltoall(&team, blk) {
        let all = end_to_end(sends);
        let t = expose_all(b, &team, all);
        for (j, &r) in recvs.iter().enumerate() {
            if j == me {
                let len = r.len.min(sends[me].len);
                b.copy(sends[me].sub(0, len), r.sub(0, len));
            } else {
                pull(b, j, t, n * blk, me * blk, r);
            }
        }
        return release(b);
    }
    if in_line(n, blk) {
        // As an allgather, each member copying its own block from every
        // line.
        let t = team.step();
        let all = end_to_end(sends);
        b.board(BoardStep::Post {
            t,
            src: Some(all),
            ahead: false,
        });
        b.board(BoardStep::Wait { t, who: None });
        for (j, &r) in recvs.iter().enumerate() {
            if j == me {
                let len = r.len.min(sends[me].len);
                b.copy(sends[me].sub(0, len), r.sub(0, len));
            } else {
                fetch(b, j, t, n * blk, me * blk, r);
            }
        }
        return;
    }
    let per = share(n);
    for (off, len) in split(blk, per) {
        let t = team.step();
        // A send block shorter than the receive blocks (type signatures
        // that differ: erroneous) sends what it has.
        let part = |s: Span| s.sub(off.min(s.len), len.min(s.len - off.min(s.len)));
        for (j, &s) in sends.iter().enumerate() {
            if j != me && part(s).len > 0 {
                b.board(BoardStep::Place {
                    t,
                    src: part(s),
                    at: j * per,
                });
            }
        }
        b.board(BoardStep::Post {
            t,
            src: None,
            ahead: false,
        });
        b.board(BoardStep::Wait { t, who: None });
        for (j, &r) in recvs.iter().enumerate() {
            if len == 0 {
                break;
            }
            if j == me {
                b.copy(part(sends[me]), r.sub(off, len));
            } else {
                fetch(b, j, t, PLACED, me * per, r.sub(off, len));
            }
        }
    }
}

/// `MPI_Reduce_scatter(_block)`: `acc` holds block `j` (`counts[j]` bytes)
/// for member `j`, elements of `elem` bytes; returns where this member's
/// reduced block ends up.
pub fn reduce_scatter(b: &mut Builder, acc: Span, counts: &[usize], elem: usize) -> Span {
    let team = team(b);
    let n = b.size;
    let me = b.rank;
    let parts = acc.split(counts.iter().copied());
    let mine = parts[me];
    let res = b.buf(mine.len);
    for (off, len) in pieces(acc.len, elem) {
        let t = team.step();
        b.board(BoardStep::Post {
            t,
            src: Some(acc.sub(off, len)),
            ahead: false,
        });
        // The part of this member's block inside the piece.
        let lo = mine.off - acc.off;
        let (a, z) = (lo.max(off), (lo + mine.len).min(off + len));
        if a < z {
            b.board(BoardStep::Wait { t, who: None });
            let own = acc.sub(a, z - a);
            reduce_posted(b, t, 0..n, len, a - off, own, res.sub(a - lo, z - a));
        }
    }
    res
}

/// `MPI_Scan` (inclusive: members `0..=me`) or `MPI_Exscan` (`0..me`) of
/// `partial` into `result`, elements of `elem` bytes.
pub fn scan(b: &mut Builder, partial: Span, result: Span, exclusive: bool, elem: usize) {
    let team = team(b);
    let me = b.rank;
    let upto = if exclusive { me } else { me + 1 };
    for (off, len) in pieces(partial.len, elem) {
        let t = team.step();
        b.board(BoardStep::Post {
            t,
            src: Some(partial.sub(off, len)),
            ahead: false,
        });
        if upto > 0 {
            for m in 0..upto {
                b.board(BoardStep::Wait { t, who: Some(m) });
            }
            let own = partial.sub(off, len);
            reduce_posted(b, t, 0..upto, len, 0, own, result.sub(off, len));
        }
    }
}
