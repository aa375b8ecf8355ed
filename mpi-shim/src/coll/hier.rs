//! Node-aware collectives for communicators that span nodes: an
//! intra-node phase on shared memory, one leader per node across the
//! network, then an intra-node release, so each node sends one message
//! per step over the network instead of one per process. The intra-node
//! phases run on the node's flag board when the communicator's ranks on
//! the node have one ([`super::board::Boards::Node`]: inside the group of
//! a node's ranks, the algorithms of [`super::algo`] find it), else on
//! messages. (The two-level
//! scheme of MPICH's and MVAPICH's "SMP-aware" collectives; e.g. Kandalla
//! et al., "Designing multi-leader-based Allgather algorithms for
//! multi-core clusters", IPDPS 2009, for the structure.)
//!
//! Groups: the ranks of each node in communicator order ("locals"), and
//! one leader per node, the node's lowest rank, or the root on the root's
//! node. Each level runs the flat algorithm of [`super::algo`] inside its
//! group ([`Builder::in_group`]); a pair of ranks talks in one level only
//! (leaders of different nodes across, ranks of one node within), so the
//! levels' messages never meet. Reductions with a non-commutative
//! operation are node-aware only where each node's ranks are consecutive
//! (then the levels keep the rank order); elsewhere the flat algorithms
//! keep it.

use super::algo;
use super::sched::{Builder, Span};

/// This rank's node-mates and the leaders, for a given root.
struct Layout {
    /// Ranks on this rank's node, in order.
    locals: Vec<usize>,
    /// One rank per node, in order of the nodes' first ranks.
    leaders: Vec<usize>,
    /// This node's leader.
    leader: usize,
}

/// The layout, or `None` when a two-level algorithm gains nothing (one
/// node, or one process per node).
fn layout(b: &Builder, root: Option<usize>) -> Option<Layout> {
    let nodes = b.nodes()?;
    let mut firsts: Vec<u32> = Vec::new();
    for &n in nodes {
        if !firsts.contains(&n) {
            firsts.push(n);
        }
    }
    if firsts.len() == nodes.len() || firsts.len() < 2 {
        return None;
    }
    let leader_of = |node: u32| match root {
        Some(r) if nodes[r] == node => r,
        _ => nodes
            .iter()
            .position(|&n| n == node)
            .expect("a node of a rank"),
    };
    let mine = nodes[b.rank];
    Some(Layout {
        locals: node_ranks(nodes, b.rank),
        leaders: firsts.iter().map(|&n| leader_of(n)).collect(),
        leader: leader_of(mine),
    })
}

/// The ranks on the node of rank `rank`, in order, given each rank's node.
pub fn node_ranks(nodes: &[u32], rank: usize) -> Vec<usize> {
    (0..nodes.len())
        .filter(|&r| nodes[r] == nodes[rank])
        .collect()
}

fn index(group: &[usize], rank: usize) -> usize {
    group.iter().position(|&r| r == rank).expect("member")
}

/// Barrier: locals report to their leader, leaders meet, leaders release.
/// False (nothing compiled) when the flat algorithm is as good.
pub fn barrier(b: &mut Builder) -> bool {
    let Some(l) = layout(b, None) else {
        return false;
    };
    let empty = b.buf(0);
    let lead = index(&l.locals, l.leader);
    b.in_group(&l.locals, |b| algo::gather_empty(b, lead, empty));
    if b.rank == l.leader {
        b.in_group(&l.leaders, algo::barrier);
    }
    b.in_group(&l.locals, |b| algo::bcast(b, empty, lead));
    true
}

/// Broadcast from `root`: across the leaders (the root leads its node),
/// then within each node.
pub fn bcast(b: &mut Builder, data: Span, root: usize) -> bool {
    let Some(l) = layout(b, Some(root)) else {
        return false;
    };
    if b.rank == l.leader {
        let r = index(&l.leaders, root);
        b.in_group(&l.leaders, |b| algo::bcast(b, data, r));
    }
    let lead = index(&l.locals, l.leader);
    b.in_group(&l.locals, |b| algo::bcast(b, data, lead));
    true
}

/// Whether a reduction may run node-aware and keep its operation's
/// order: a commutative operation, or each node's ranks consecutive (then
/// each node reduces its block in rank order, both within a node and
/// among the leaders, whose order is the nodes' and so the ranks').
fn order_kept(b: &Builder) -> bool {
    if b.op().is_none_or(|o| o.commutative()) {
        return true;
    }
    let Some(nodes) = b.nodes() else {
        return false;
    };
    let mut ended: Vec<u32> = Vec::new();
    for w in nodes.windows(2) {
        if w[0] != w[1] {
            if ended.contains(&w[1]) {
                return false;
            }
            ended.push(w[0]);
        }
    }
    true
}

/// Reduction to `root`: within each node to its leader, then across the
/// leaders to the root (non-commutative operations when each node's
/// ranks are consecutive, [`order_kept`]).
pub fn reduce(b: &mut Builder, acc: Span, root: usize) -> bool {
    if !order_kept(b) {
        return false;
    }
    let Some(l) = layout(b, Some(root)) else {
        return false;
    };
    let lead = index(&l.locals, l.leader);
    b.in_group(&l.locals, |b| algo::reduce(b, acc, lead));
    if b.rank == l.leader {
        let r = index(&l.leaders, root);
        b.in_group(&l.leaders, |b| algo::reduce(b, acc, r));
    }
    true
}

/// Allreduce: within each node to its leader, an allreduce across the
/// leaders, then a broadcast within each node (non-commutative operations
/// as for [`reduce`]).
pub fn allreduce(b: &mut Builder, acc: Span, elem: usize) -> bool {
    if !order_kept(b) {
        return false;
    }
    let Some(l) = layout(b, None) else {
        return false;
    };
    let lead = index(&l.locals, l.leader);
    // A node's board splits the reduction between whole elements.
    b.set_elem(elem);
    b.in_group(&l.locals, |b| algo::reduce(b, acc, lead));
    if b.rank == l.leader {
        b.in_group(&l.leaders, |b| algo::allreduce(b, acc, elem));
    }
    b.in_group(&l.locals, |b| algo::bcast(b, acc, lead));
    true
}

/// Allgather (`blocks[r]` from rank `r`, end to end in one buffer in rank
/// order, this rank's filled): each node's blocks gathered at its leader,
/// the leaders exchanging whole nodes (packed in the leaders' order, since
/// a node's ranks need not be consecutive), then each leader broadcasting
/// the whole result within its node. Every block crosses between two
/// nodes once, in one message per pair of leaders' steps.
pub fn allgatherv(b: &mut Builder, blocks: &[Span]) -> bool {
    let Some(l) = layout(b, None) else {
        return false;
    };
    let nodes = b.nodes().expect("a layout has nodes").to_vec();
    let whole = Span {
        len: blocks.iter().map(|s| s.len).sum(),
        ..blocks[0]
    };
    let lead = index(&l.locals, l.leader);
    let mine: Vec<Span> = l.locals.iter().map(|&r| blocks[r]).collect();
    let own = blocks[b.rank];
    b.in_group(&l.locals, |b| {
        // On the node's board every member knows every block's length,
        // as its gather needs.
        if b.team().is_some() {
            super::board::algo::gather(b, &mine, Some(lead));
        } else {
            algo::gatherv(b, lead, own, &mine);
        }
    });
    if b.rank == l.leader {
        let members: Vec<Vec<usize>> = l
            .leaders
            .iter()
            .map(|&ld| {
                (0..nodes.len())
                    .filter(|&r| nodes[r] == nodes[ld])
                    .collect()
            })
            .collect();
        let lens = members
            .iter()
            .map(|m| m.iter().map(|&r| blocks[r].len).sum());
        let packed: Vec<Span> = {
            let lens: Vec<usize> = lens.collect();
            b.buf(lens.iter().sum()).split(lens)
        };
        // Where rank `r` of node `k` lies in the packed buffer.
        let pieces = |k: usize| packed[k].split(members[k].iter().map(|&r| blocks[r].len));
        let me = index(&l.leaders, l.leader);
        for (&r, piece) in members[me].iter().zip(pieces(me)) {
            b.copy(blocks[r], piece);
        }
        b.in_group(&l.leaders, |b| algo::allgatherv(b, &packed));
        for k in (0..members.len()).filter(|&k| k != me) {
            for (&r, piece) in members[k].iter().zip(pieces(k)) {
                b.copy(piece, blocks[r]);
            }
        }
    }
    b.in_group(&l.locals, |b| algo::bcast(b, whole, lead));
    true
}
