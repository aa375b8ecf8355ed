//! The collective algorithms, each compiled into a [`Builder`] for the
//! calling process. They move packed bytes in the schedule's buffers; the
//! entry layer packs the application's data in and unpacks results out.
//!
//! Source of the algorithms (unless a doc comment names another):
//! R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective
//! communication operations in MPICH", International Journal of High
//! Performance Computing Applications 19(1), 2005 (cited below as
//! "TRG05"), with the index arithmetic of MPICH's implementations.
//!
//! Ranks: `vr` is a rank relative to the root (`(rank - root) mod n`);
//! `real(vr)` maps it back. Reductions keep MPI's order (the result is
//! `x_0 op x_1 op ... op x_{n-1}`) whenever the operation is not
//! commutative: every step combines a contiguous range of ranks with the
//! range just above or below it, the lower range on the left.

use super::sched::{Builder, Span};
use super::{TUNING, board, hier};

// Phases (see `sched`): one per sub-algorithm of a collective.
const BARRIER: u16 = 1;
const BCAST: u16 = 2;
const BCAST_RING: u16 = 3;
const REDUCE: u16 = 4;
const REDUCE_TO_ROOT: u16 = 5;
const ALLREDUCE: u16 = 6;
const ALLREDUCE_FOLD: u16 = 7;
const ALLREDUCE_GATHER: u16 = 8;
const GATHER: u16 = 9;
const SCATTER: u16 = 10;
const ALLGATHER: u16 = 11;
const ALLTOALL: u16 = 12;
const SCAN: u16 = 13;
const REDUCE_SCATTER: u16 = 14;
const GATHER_EMPTY: u16 = 15;
/// Neighbourhood collectives: this phase plus the edge's channel.
const NEIGHBOR: u16 = 16;
/// Channels above this share phases (messages still pair up in order).
const NEIGHBOR_CHANNELS: u16 = 4000;

/// The largest power of two not above `n` (n >= 1).
pub fn pof2_floor(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Dissemination barrier (Hensgen, Finkel and Manber 1988; MPICH's
/// barrier): in round `k` send to `rank + 2^k` and receive from `rank - 2^k`;
/// ceil(log2 n) rounds of empty messages.
pub fn barrier(b: &mut Builder) {
    if b.team().is_some() {
        return board::algo::barrier(b);
    }
    if hier::barrier(b) {
        return;
    }
    b.phase(BARRIER);
    let (n, me) = (b.size, b.rank);
    let empty = b.buf(0);
    let mut k = 1;
    while k < n {
        b.send((me + k) % n, empty);
        b.recv((me + n - k) % n, empty);
        b.end_round();
        k *= 2;
    }
}

/// Every rank but `root` sends `empty` (no bytes) to `root`, which
/// receives them all in one round: the fan-in of a two-level barrier. On
/// a board: everyone posts, and only `root` waits for the others' posts.
pub fn gather_empty(b: &mut Builder, root: usize, empty: Span) {
    if b.team().is_some() {
        return board::algo::gather(b, &vec![empty; b.size], Some(root));
    }
    b.phase(GATHER_EMPTY);
    if b.rank == root {
        for r in (0..b.size).filter(|&r| r != root) {
            b.recv(r, empty);
        }
    } else {
        b.send(root, empty);
    }
    b.end_round();
}

/// Broadcast `data` (full at the root) from `root`: a binomial tree for
/// short messages, scatter then ring allgather (van de Geijn, TRG05)
/// for long ones.
pub fn bcast(b: &mut Builder, data: Span, root: usize) {
    if b.team().is_some() {
        return board::algo::bcast(b, data, root);
    }
    if b.size == 1 || hier::bcast(b, data, root) {
        return;
    }
    if data.len < TUNING.bcast_large {
        bcast_binomial(b, data, root);
    } else {
        bcast_scatter_ring(b, data, root);
    }
}

/// The parent of relative rank `vr` in a binomial tree (clear its lowest
/// set bit) and that bit; `None` at the root.
fn binomial_parent(vr: usize, n: usize) -> Option<(usize, usize)> {
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            return Some((vr - mask, mask));
        }
        mask <<= 1;
    }
    None
}

/// The children of `vr` in the binomial tree, largest subtree first, with
/// the size bound (mask) of each child's subtree.
fn binomial_children(vr: usize, n: usize) -> impl Iterator<Item = (usize, usize)> {
    let top = binomial_parent(vr, n).map_or(pof2_floor(n.max(1)) << 1, |(_, m)| m);
    std::iter::successors(Some(top >> 1), |m| Some(m >> 1))
        .take_while(|&m| m > 0)
        .filter(move |&m| vr + m < n)
        .map(move |m| (vr + m, m))
}

/// Binomial-tree broadcast (TRG05): receive from the parent, then
/// send to each child.
fn bcast_binomial(b: &mut Builder, data: Span, root: usize) {
    b.phase(BCAST);
    let n = b.size;
    let vr = (b.rank + n - root) % n;
    let real = |v: usize| (v + root) % n;
    if let Some((parent, _)) = binomial_parent(vr, n) {
        b.recv(real(parent), data);
        b.end_round();
    }
    for (child, _) in binomial_children(vr, n) {
        b.send(real(child), data);
    }
    b.end_round();
}

/// Van de Geijn broadcast (TRG05): a binomial scatter leaves chunk
/// `vr` (of `ceil(len / n)` bytes) at relative rank `vr`, then a ring
/// allgather circulates the chunks.
fn bcast_scatter_ring(b: &mut Builder, data: Span, root: usize) {
    b.phase(BCAST);
    let n = b.size;
    let vr = (b.rank + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let c = data.len.div_ceil(n);
    // Chunks `from..to`, clipped to the data.
    let chunks = |from: usize, to: usize| {
        let lo = (from * c).min(data.len);
        let hi = (to * c).min(data.len);
        data.sub(lo, hi - lo)
    };
    // A subtree rooted at `v` with bound `m` covers relative ranks v..v+m.
    if let Some((parent, m)) = binomial_parent(vr, n) {
        b.recv(real(parent), chunks(vr, vr + m));
        b.end_round();
    }
    for (child, m) in binomial_children(vr, n) {
        b.send(real(child), chunks(child, child + m));
    }
    b.end_round();
    b.phase(BCAST_RING);
    let (left, right) = (real((vr + n - 1) % n), real((vr + 1) % n));
    for i in 0..n - 1 {
        let out = (vr + n - i) % n;
        let inb = (vr + 2 * n - i - 1) % n;
        b.send(right, chunks(out, out + 1));
        b.recv(left, chunks(inb, inb + 1));
        b.end_round();
    }
}

/// Whether a reduction of elements of `elem` bytes runs on the
/// communicator's board. Its pieces hold whole elements, so an element
/// larger than a data buffer (a derived datatype of more than 128 KiB,
/// with an application's operation) goes by messages, at every member
/// alike (the datatype is the same at all).
fn board_reduces(b: &Builder, elem: usize) -> bool {
    b.team().is_some() && elem <= board::DATA
}

/// Binomial-tree reduction of every process's `acc` (TRG05); the
/// result is left in `acc` at `root` (elsewhere `acc` is scratch). With a
/// non-commutative operation the tree is rooted at rank 0, whose ranges
/// are in rank order, and rank 0 forwards the result to `root`.
pub fn reduce(b: &mut Builder, acc: Span, root: usize) {
    // Without the element size the vector is reduced whole.
    let elem = b.elem().unwrap_or(acc.len.max(1));
    if board_reduces(b, elem) {
        return board::algo::reduce(b, acc, elem, Some(root));
    }
    let n = b.size;
    if n == 1 || hier::reduce(b, acc, root) {
        return;
    }
    b.phase(REDUCE);
    let commutative = b.op().is_none_or(|o| o.commutative());
    let tree_root = if commutative { root } else { 0 };
    let vr = (b.rank + n - tree_root) % n;
    let real = |v: usize| (v + tree_root) % n;
    let tmp = b.buf(acc.len);
    // acc holds the reduction of relative ranks vr..vr+mask; a child's
    // range lies just above it.
    let mut children: Vec<_> = binomial_children(vr, n).collect();
    children.reverse();
    for (child, _) in children {
        b.recv(real(child), tmp);
        b.end_round();
        b.reduce(tmp, acc, false);
    }
    if let Some((parent, _)) = binomial_parent(vr, n) {
        b.send(real(parent), acc);
        b.end_round();
    }
    if tree_root != root {
        b.phase(REDUCE_TO_ROOT);
        if b.rank == tree_root {
            b.send(root, acc);
        } else if b.rank == root {
            b.recv(tree_root, acc);
        }
        b.end_round();
    }
}

/// Allreduce of `acc` in place (elements of `elem` bytes): recursive
/// doubling for short data or non-commutative operations, Rabenseifner's
/// reduce-scatter (recursive halving) + allgather (recursive doubling)
/// for long data (TRG05). A non-power-of-two `n` first folds the
/// first `2 * (n - p)` ranks pairwise onto their odd members, so that `p`
/// (the largest power of two below `n`) ranks run the algorithm, and
/// unfolds at the end.
pub fn allreduce(b: &mut Builder, acc: Span, elem: usize) {
    if board_reduces(b, elem.max(1)) {
        return board::algo::reduce(b, acc, elem.max(1), None);
    }
    let n = b.size;
    if n == 1 || hier::allreduce(b, acc, elem) {
        return;
    }
    let p = pof2_floor(n);
    let count = acc.len.checked_div(elem).unwrap_or(0);
    let commutative = b.op().is_none_or(|o| o.commutative());
    let tmp = b.buf(acc.len);
    let fold = Fold::new(b.rank, n);
    b.phase(ALLREDUCE_FOLD);
    if fold.rank < 2 * fold.rem {
        if fold.rank.is_multiple_of(2) {
            b.send(fold.rank + 1, acc);
            b.end_round();
        } else {
            b.recv(fold.rank - 1, tmp);
            b.end_round();
            b.reduce(tmp, acc, true);
        }
    }
    if let Some(nr) = fold.newrank {
        b.phase(ALLREDUCE);
        if commutative && acc.len >= TUNING.allreduce_large && count >= p {
            rabenseifner(b, acc, tmp, elem, count, p, nr, &fold);
        } else {
            let mut mask = 1;
            while mask < p {
                let peer = nr ^ mask;
                b.exchange(fold.real(peer), acc, tmp);
                b.reduce(tmp, acc, peer < nr);
                mask <<= 1;
            }
        }
    }
    b.phase(ALLREDUCE_FOLD);
    if fold.rank < 2 * fold.rem {
        if fold.rank.is_multiple_of(2) {
            b.recv(fold.rank + 1, acc);
        } else {
            b.send(fold.rank - 1, acc);
        }
        b.end_round();
    }
}

/// How `n` ranks fold onto a power of two `p`: ranks below `2 * rem` pair
/// up (the odd one carries on as `rank / 2`), the rest become
/// `rank - rem`.
struct Fold {
    rank: usize,
    rem: usize,
    newrank: Option<usize>,
}

impl Fold {
    fn new(rank: usize, n: usize) -> Self {
        let rem = n - pof2_floor(n);
        let newrank = if rank < 2 * rem {
            (rank % 2 == 1).then_some(rank / 2)
        } else {
            Some(rank - rem)
        };
        Self { rank, rem, newrank }
    }

    /// The rank of new rank `nr`.
    fn real(&self, nr: usize) -> usize {
        if nr < self.rem {
            nr * 2 + 1
        } else {
            nr + self.rem
        }
    }
}

/// Rabenseifner's allreduce among the `p` new ranks (TRG05, MPICH's
/// `MPIR_Allreduce_intra_reduce_scatter_allgather`): the elements are cut
/// into `p` blocks; recursive halving leaves block `nr` reduced at new
/// rank `nr`, recursive doubling gathers the blocks back.
#[allow(clippy::too_many_arguments)]
fn rabenseifner(
    b: &mut Builder,
    acc: Span,
    tmp: Span,
    elem: usize,
    count: usize,
    p: usize,
    nr: usize,
    fold: &Fold,
) {
    let cnts: Vec<usize> = (0..p)
        .map(|i| count / p + usize::from(i < count % p))
        .collect();
    let mut disps = vec![0; p + 1];
    for i in 0..p {
        disps[i + 1] = disps[i] + cnts[i];
    }
    // Bytes of blocks lo..hi.
    let blocks =
        |s: Span, lo: usize, hi: usize| s.sub(disps[lo] * elem, (disps[hi] - disps[lo]) * elem);
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, p);
    let mut mask = 1;
    while mask < p {
        let peer = nr ^ mask;
        let half = p / (mask * 2);
        let (out, inb);
        if nr < peer {
            send_idx = recv_idx + half;
            out = (send_idx, last_idx);
            inb = (recv_idx, send_idx);
        } else {
            recv_idx = send_idx + half;
            out = (send_idx, recv_idx);
            inb = (recv_idx, last_idx);
        }
        let got = blocks(tmp, inb.0, inb.1);
        b.exchange(fold.real(peer), blocks(acc, out.0, out.1), got);
        b.reduce(got, blocks(acc, inb.0, inb.1), peer < nr);
        send_idx = recv_idx;
        mask <<= 1;
        if mask < p {
            last_idx = recv_idx + p / mask;
        }
    }
    b.phase(ALLREDUCE_GATHER);
    mask >>= 1;
    while mask > 0 {
        let peer = nr ^ mask;
        let half = p / (mask * 2);
        let (out, inb);
        if nr < peer {
            if mask != p / 2 {
                last_idx += half;
            }
            recv_idx = send_idx + half;
            out = (send_idx, recv_idx);
            inb = (recv_idx, last_idx);
        } else {
            recv_idx = send_idx - half;
            out = (send_idx, last_idx);
            inb = (recv_idx, send_idx);
        }
        b.exchange(
            fold.real(peer),
            blocks(acc, out.0, out.1),
            blocks(acc, inb.0, inb.1),
        );
        if nr > peer {
            send_idx = recv_idx;
        }
        mask >>= 1;
    }
}

/// The number of relative ranks in the binomial subtree of `vr`.
fn subtree(vr: usize, n: usize) -> usize {
    binomial_parent(vr, n).map_or(n, |(_, m)| m.min(n - vr))
}

/// Binomial-tree gather of `blk`-byte blocks (TRG05): each process
/// collects its subtree's blocks, in relative-rank order, and sends them
/// to its parent in one message. Returns, at the root, where rank `r`'s
/// block ends up, for every `r` (`own` may be empty at the root).
pub fn gather(b: &mut Builder, root: usize, own: Span, blk: usize) -> Vec<Span> {
    if b.team().is_some() {
        let n = b.size;
        let all = b.buf(n * blk);
        let blocks = all.split(std::iter::repeat_n(blk, n));
        b.copy(own, blocks[b.rank]);
        board::algo::gather(b, &blocks, Some(root));
        return if b.rank == root { blocks } else { Vec::new() };
    }
    let n = b.size;
    let vr = (b.rank + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let tmp = b.buf(subtree(vr, n) * blk);
    b.copy(own, tmp.sub(0, blk));
    b.phase(GATHER);
    for (child, m) in binomial_children(vr, n) {
        let k = m.min(n - child);
        b.recv(real(child), tmp.sub((child - vr) * blk, k * blk));
    }
    b.end_round();
    match binomial_parent(vr, n) {
        Some((parent, _)) => {
            b.send(real(parent), tmp);
            b.end_round();
            Vec::new()
        }
        None => (0..n)
            .map(|r| tmp.sub((r + n - root) % n * blk, blk))
            .collect(),
    }
}

/// Binomial-tree scatter of `blk`-byte blocks, the mirror of [`gather`]:
/// the root's `parts` (by rank) travel down the tree, each process
/// keeping its own block and forwarding its children's subtrees. Returns
/// where this process's block ends up.
pub fn scatter(b: &mut Builder, root: usize, parts: &[Span], blk: usize) -> Span {
    if b.team().is_some() {
        let own = b.buf(blk);
        board::algo::scatter(b, root, parts, own, blk);
        return own;
    }
    let n = b.size;
    let vr = (b.rank + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let tmp = b.buf(subtree(vr, n) * blk);
    if vr == 0 {
        for (r, &part) in parts.iter().enumerate() {
            b.copy(part, tmp.sub((r + n - root) % n * blk, blk));
        }
    }
    b.phase(SCATTER);
    if let Some((parent, _)) = binomial_parent(vr, n) {
        b.recv(real(parent), tmp);
        b.end_round();
    }
    for (child, m) in binomial_children(vr, n) {
        let k = m.min(n - child);
        b.send(real(child), tmp.sub((child - vr) * blk, k * blk));
    }
    b.end_round();
    tmp.sub(0, blk)
}

/// Linear gather, for blocks of different sizes (`MPI_Gatherv`; on a
/// board, `board::algo::gatherv`): every rank sends `own` to `root`,
/// which receives rank `r`'s part into `parts[r]` (`parts` matters at the
/// root only; its own part is not received). On shared memory the root's
/// receives run concurrently.
pub fn gatherv(b: &mut Builder, root: usize, own: Span, parts: &[Span]) {
    if b.team().is_some() {
        return board::algo::gatherv(b, root, own, parts);
    }
    b.phase(GATHER);
    if b.rank == root {
        for (r, &part) in parts.iter().enumerate() {
            if r != root {
                b.recv(r, part);
            }
        }
    } else {
        b.send(root, own);
    }
    b.end_round();
}

/// Linear scatter (`MPI_Scatterv`; on a board, `board::algo::scatterv`),
/// the mirror of [`gatherv`]: the root sends `parts[r]` to rank `r`,
/// which receives it into `own`.
pub fn scatterv(b: &mut Builder, root: usize, own: Span, parts: &[Span]) {
    if b.team().is_some() {
        return board::algo::scatterv(b, root, own, parts);
    }
    b.phase(SCATTER);
    if b.rank == root {
        for (r, &part) in parts.iter().enumerate() {
            if r != root {
                b.send(r, part);
            }
        }
    } else {
        b.recv(root, own);
    }
    b.end_round();
}

/// Allgather of `blocks` (block `r` from rank `r`; the blocks lie end to
/// end in one buffer, rank order; this rank's is filled): node-aware
/// across nodes ([`hier::allgatherv`]); else recursive doubling when `n`
/// is a power of two and the total is short, the ring otherwise (TRG05).
pub fn allgatherv(b: &mut Builder, blocks: &[Span]) {
    if b.size > 1 && b.team().is_some() {
        return board::algo::gather(b, blocks, None);
    }
    allgatherv_p2p(b, blocks);
}

/// [`allgatherv`] with messages, also on a board's communicator (its
/// setup).
pub fn allgatherv_p2p(b: &mut Builder, blocks: &[Span]) {
    let n = b.size;
    if n == 1 || hier::allgatherv(b, blocks) {
        return;
    }
    b.phase(ALLGATHER);
    let me = b.rank;
    let total: usize = blocks.iter().map(|s| s.len).sum();
    if n.is_power_of_two() && total < TUNING.allgather_large {
        // Blocks first..first+k as one span.
        let group = |first: usize, k: usize| {
            let a = blocks[first];
            let z = blocks[first + k - 1];
            Span {
                buf: a.buf,
                off: a.off,
                len: z.off + z.len - a.off,
            }
        };
        let mut mask = 1;
        while mask < n {
            let peer = me ^ mask;
            let base = |r: usize| r & !(mask - 1);
            b.exchange(peer, group(base(me), mask), group(base(peer), mask));
            mask <<= 1;
        }
    } else {
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        for i in 0..n - 1 {
            b.send(right, blocks[(me + n - i) % n]);
            b.recv(left, blocks[(me + 2 * n - i - 1) % n]);
            b.end_round();
        }
    }
}

/// Pairwise-exchange all-to-all (TRG05): in step `i` send to
/// `rank + i` and receive from `rank - i`; this rank's own block is
/// copied.
pub fn alltoallv(b: &mut Builder, sends: &[Span], recvs: &[Span]) {
    let (n, me) = (b.size, b.rank);
    b.phase(ALLTOALL);
    if sends[me].len > 0 {
        b.copy(sends[me], recvs[me]);
    }
    for i in 1..n {
        let (to, from) = ((me + i) % n, (me + n - i) % n);
        b.send(to, sends[to]);
        b.recv(from, recvs[from]);
        b.end_round();
    }
}

/// Reduce-scatter of `acc` (block `r`, `counts[r]` bytes, for rank
/// `r`); returns where this rank's reduced block ends up. A commutative
/// operation uses pairwise exchange (TRG05): in step `i` send block
/// `rank + i` to its owner, receive this rank's block from `rank - i` and
/// fold it in. A non-commutative one reduces the whole vector to rank 0
/// (binomial, order-preserving), which scatters the blocks.
pub fn reduce_scatter(b: &mut Builder, acc: Span, counts: &[usize]) -> Span {
    if let Some(elem) = b.elem().filter(|&e| board_reduces(b, e)) {
        return board::algo::reduce_scatter(b, acc, counts, elem);
    }
    let (n, me) = (b.size, b.rank);
    let parts = acc.split(counts.iter().copied());
    if b.op().is_none_or(|o| o.commutative()) {
        b.phase(REDUCE_SCATTER);
        let got = b.buf(counts[me]);
        for i in 1..n {
            let (to, from) = ((me + i) % n, (me + n - i) % n);
            b.send(to, parts[to]);
            b.recv(from, got);
            b.end_round();
            b.reduce(got, parts[me], true);
        }
    } else {
        reduce(b, acc, 0);
        scatterv(b, 0, parts[me], &parts);
    }
    parts[me]
}

/// Inclusive (`result` = this rank's prefix) or exclusive (`result` = the
/// prefix of the ranks below; untouched at rank 0) scan by recursive
/// doubling (MPICH's `MPIR_Scan_intra_recursive_doubling`): `partial`
/// holds the reduction of a range of ranks around this one that doubles
/// each step.
pub fn scan(b: &mut Builder, partial: Span, result: Span, exclusive: bool) {
    if let Some(elem) = b.elem().filter(|&e| board_reduces(b, e)) {
        return board::algo::scan(b, partial, result, exclusive, elem);
    }
    let (n, me) = (b.size, b.rank);
    if !exclusive {
        b.copy(partial, result);
    }
    b.phase(SCAN);
    let tmp = b.buf(partial.len);
    let mut have = !exclusive;
    let mut mask = 1;
    while mask < n {
        let peer = me ^ mask;
        if peer < n {
            b.exchange(peer, partial, tmp);
            if me > peer {
                // `tmp` covers ranks just below this rank's range.
                if have {
                    b.reduce(tmp, result, true);
                } else {
                    b.copy(tmp, result);
                    have = true;
                }
                b.reduce(tmp, partial, true);
            } else {
                b.reduce(tmp, partial, false);
            }
        }
        mask <<= 1;
    }
}

/// One edge of a neighbourhood collective: the peer's rank (`None` for
/// `MPI_PROC_NULL`), the edge's channel and this process's block.
pub type Edge = (Option<usize>, u16, Span);

/// Neighbourhood exchange (MPI-4.0 §8.6): one round sending each
/// out-edge's block and receiving each in-edge's, a message on channel
/// `c` pairing with the in-edge of channel `c` at the receiver. Edges to
/// this process itself are copied locally after the round.
pub fn neighbor_exchange(b: &mut Builder, sends: &[Edge], recvs: &[Edge]) {
    let me = b.rank;
    let phase = |c: u16| NEIGHBOR + c % NEIGHBOR_CHANNELS;
    b.phase(NEIGHBOR);
    for &(peer, c, span) in sends {
        if let Some(p) = peer.filter(|&p| p != me) {
            b.send_on(p, span, phase(c));
        }
    }
    for &(peer, c, span) in recvs {
        if let Some(p) = peer.filter(|&p| p != me) {
            b.recv_on(p, span, phase(c));
        }
    }
    b.end_round();
    for &(_, c, dst) in recvs.iter().filter(|e| e.0 == Some(me)) {
        if let Some(&(_, _, src)) = sends.iter().find(|e| e.0 == Some(me) && e.1 == c) {
            b.copy(src, dst);
        }
    }
}
