//! The schedule compiler, checked by running every member's schedule of
//! a virtual communicator in one process (`sched::sim`) for sizes 1-9,
//! every root, and data on both sides of each algorithm switch.

use std::ffi::c_void;
use std::sync::Arc;

use super::sched::{Builder, Schedule, Sink, Span, Step, sim};
use super::{TUNING, algo};
use crate::core::datatype::Datatype;
use crate::ops::{Elem, Reduction, UserOp};

const SIZES: std::ops::RangeInclusive<usize> = 1..=9;

/// Compile with `f` at every rank of an `n`-process communicator, run,
/// and return what each rank unpacked from the span `f` returned.
fn run(
    n: usize,
    out_len: usize,
    op: Option<&Reduction>,
    f: impl Fn(&mut Builder) -> Option<Span>,
) -> Vec<Vec<u8>> {
    run_on(None, n, out_len, op, f)
}

/// As [`run`], on a communicator whose rank `r` runs on node `nodes[r]`.
fn run_on(
    nodes: Option<&[u32]>,
    n: usize,
    out_len: usize,
    op: Option<&Reduction>,
    f: impl Fn(&mut Builder) -> Option<Span>,
) -> Vec<Vec<u8>> {
    let mut outs = vec![vec![0xeeu8; out_len]; n];
    let ptrs: Vec<*mut u8> = outs.iter_mut().map(|o| o.as_mut_ptr()).collect();
    let mut scheds: Vec<Schedule> = (0..n)
        .map(|r| {
            let mut b = Builder::bare((0..n as u32).collect(), r, 1, 7, 0);
            if let Some(nodes) = nodes {
                b.set_nodes(nodes.to_vec());
            }
            if let Some(op) = op {
                b.set_op(op.clone());
            }
            if let Some(span) = f(&mut b) {
                assert!(span.len <= out_len);
                let k = b.sink(Sink {
                    dst: ptrs[r],
                    count: span.len,
                    dt: Arc::new(Datatype::basic(1, Elem::Byte)).into(),
                });
                b.unpack(span, k);
            }
            b.finish()
        })
        .collect();
    sim::run(&mut scheds);
    outs
}

fn ints(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
    v.into_iter().flat_map(i32::to_ne_bytes).collect()
}

fn sum() -> Reduction {
    Reduction::predefined(crate::ops::Op::Sum, &Datatype::basic(4, Elem::I32)).unwrap()
}

/// 2x2 integer matrices (wrapping): associative, not commutative.
///
/// # Safety
/// [`crate::ops::UserCaller`]'s.
unsafe fn matmul(_: usize, a: *mut c_void, b: *mut c_void, len: usize, _: u64) {
    // SAFETY: `len` elements of four ints at each address (the test's
    // datatype).
    unsafe {
        for k in 0..len {
            let x = std::slice::from_raw_parts(a.cast::<i32>().add(4 * k), 4).to_vec();
            let y = std::slice::from_raw_parts_mut(b.cast::<i32>().add(4 * k), 4);
            let m = |i: usize, j: usize| {
                x[2 * i]
                    .wrapping_mul(y[j])
                    .wrapping_add(x[2 * i + 1].wrapping_mul(y[2 + j]))
            };
            let r = [m(0, 0), m(0, 1), m(1, 0), m(1, 1)];
            y.copy_from_slice(&r);
        }
    }
}

fn matmul_op() -> Reduction {
    Reduction::User {
        op: UserOp {
            f: 0,
            call: matmul,
            max_len: usize::MAX,
            commute: false,
        },
        handle: 0,
        dt: Arc::new(Datatype::basic(16, Elem::I32)).into(),
    }
}

/// Rank `r`'s matrix number `k`.
fn matrix(r: usize, k: usize) -> [i32; 4] {
    let (r, k) = (r as i32, k as i32);
    [1 + r, k + 2, r * 3 - k, 1]
}

fn product(ranks: std::ops::Range<usize>, k: usize) -> [i32; 4] {
    let mut acc: [i32; 4] = [1, 0, 0, 1];
    for r in ranks {
        let m = matrix(r, k);
        acc = [
            acc[0]
                .wrapping_mul(m[0])
                .wrapping_add(acc[1].wrapping_mul(m[2])),
            acc[0]
                .wrapping_mul(m[1])
                .wrapping_add(acc[1].wrapping_mul(m[3])),
            acc[2]
                .wrapping_mul(m[0])
                .wrapping_add(acc[3].wrapping_mul(m[2])),
            acc[2]
                .wrapping_mul(m[1])
                .wrapping_add(acc[3].wrapping_mul(m[3])),
        ];
    }
    acc
}

fn matrices(r: usize, count: usize) -> Vec<u8> {
    ints((0..count).flat_map(|k| matrix(r, k)))
}

#[test]
fn barrier_rounds_are_logarithmic() {
    for n in SIZES {
        run(n, 0, None, |b| {
            algo::barrier(b);
            None
        });
    }
    let mut b = Builder::bare((0..5).collect(), 0, 1, 0, 0);
    algo::barrier(&mut b);
    let s = b.finish();
    assert_eq!(s.steps().len(), 3);
}

#[test]
fn bcast_from_every_root_short_and_long() {
    for n in SIZES {
        for len in [0, 1, 100, TUNING.bcast_large + 7] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            for root in 0..n {
                let outs = run(n, len, None, |b| {
                    let d = if b.rank == root {
                        b.input(data.clone())
                    } else {
                        b.buf(len)
                    };
                    algo::bcast(b, d, root);
                    Some(d)
                });
                for o in outs {
                    assert!(o == data, "n {n} len {len} root {root}");
                }
            }
        }
    }
}

#[test]
fn allreduce_sums_short_and_long() {
    let op = sum();
    for n in SIZES {
        for count in [0, 1, 3, TUNING.allreduce_large / 4 + 5] {
            let outs = run(n, 4 * count, Some(&op), |b| {
                let r = b.rank as i32;
                let acc = b.input(ints((0..count as i32).map(|i| r * 1000 + i)));
                algo::allreduce(b, acc, 4);
                Some(acc)
            });
            let n32 = n as i32;
            let want = ints((0..count as i32).map(|i| 1000 * n32 * (n32 - 1) / 2 + n32 * i));
            for o in outs {
                assert!(o == want, "n {n} count {count}");
            }
        }
    }
}

/// Collectives compiled while their board's setup may still fail hold
/// both variants; where it failed (always, in the simulator) the one on
/// messages runs and gives the results the flat algorithms give.
#[test]
fn collectives_compiled_before_a_failed_setup_run_on_messages() {
    let op = sum();
    for n in 2..=6 {
        let teams: Vec<_> = (0..n)
            .map(|r| super::board::Team::new((1..=n as u32).collect(), r, 2, None))
            .collect();
        for count in [1, 3000] {
            let outs = run(n, 4 * count, Some(&op), |b| {
                b.set_team(teams[b.rank].clone());
                let r = b.rank as i32;
                let acc = b.input(ints((0..count as i32).map(|i| r * 1000 + i)));
                b.either(|b| algo::allreduce(b, acc, 4));
                let data = b.input(if b.rank == n - 1 {
                    ints(0..count as i32)
                } else {
                    vec![0; 4 * count]
                });
                b.either(|b| algo::bcast(b, data, n - 1));
                b.reduce(data, acc, false);
                Some(acc)
            });
            let n32 = n as i32;
            let want = ints((0..count as i32).map(|i| 1000 * n32 * (n32 - 1) / 2 + n32 * i + i));
            for o in outs {
                assert!(o == want, "n {n} count {count}");
            }
        }
        let mut b = Builder::bare((0..n as u32).collect(), 0, 1, 7, 0);
        b.set_team(teams[0].clone());
        b.either(algo::barrier);
        let steps = b.finish();
        let steps = steps.steps();
        let Some(&Step::Choose { p2p }) = steps.first() else {
            panic!("no choice first: {steps:?}");
        };
        assert!(matches!(steps[p2p - 1], Step::Jump { to } if to == steps.len()));
        assert!(steps[1..p2p].iter().any(|s| matches!(s, Step::Board(_))));
        assert!(!steps[p2p..].iter().any(|s| matches!(s, Step::Board(_))));
    }
}

#[test]
fn non_commutative_reductions_keep_rank_order() {
    let op = matmul_op();
    for n in SIZES {
        for count in [1, 3, TUNING.allreduce_large / 16 + 1] {
            let want = ints((0..count).flat_map(|k| product(0..n, k)));
            let outs = run(n, 16 * count, Some(&op), |b| {
                let acc = b.input(matrices(b.rank, count));
                algo::allreduce(b, acc, 16);
                Some(acc)
            });
            for o in outs {
                assert!(o == want, "allreduce n {n} count {count}");
            }
            for root in 0..n {
                let outs = run(n, 16 * count, Some(&op), |b| {
                    let acc = b.input(matrices(b.rank, count));
                    algo::reduce(b, acc, root);
                    (b.rank == root).then_some(acc)
                });
                assert!(outs[root] == want, "reduce n {n} root {root}");
            }
        }
    }
}

#[test]
fn non_commutative_reduce_scatter_keeps_rank_order() {
    let op = matmul_op();
    for n in SIZES {
        let counts: Vec<usize> = (0..n).map(|r| 16 * (r % 3)).collect();
        let total: usize = counts.iter().sum::<usize>() / 16;
        let outs = run(n, 32, Some(&op), |b| {
            let acc = b.input(matrices(b.rank, total));
            Some(algo::reduce_scatter(b, acc, &counts))
        });
        let mut k = 0;
        for (r, o) in outs.iter().enumerate() {
            let want = ints((k..k + counts[r] / 16).flat_map(|j| product(0..n, j)));
            assert!(o[..counts[r]] == want, "n {n} rank {r}");
            k += counts[r] / 16;
        }
    }
}

#[test]
fn scan_and_exscan_are_prefixes_in_rank_order() {
    let op = matmul_op();
    for n in SIZES {
        for exclusive in [false, true] {
            let outs = run(n, 32, Some(&op), |b| {
                let partial = b.input(matrices(b.rank, 2));
                let result = b.buf(32);
                algo::scan(b, partial, result, exclusive);
                (!exclusive || b.rank > 0).then_some(result)
            });
            for (r, o) in outs.iter().enumerate() {
                let upto = if exclusive { r } else { r + 1 };
                if upto > 0 {
                    let want = ints((0..2).flat_map(|k| product(0..upto, k)));
                    assert!(*o == want, "n {n} rank {r} exclusive {exclusive}");
                }
            }
        }
    }
}

/// Rank `r`'s block for rank `to`: `len(r, to)` bytes.
fn block(r: usize, to: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (r * 31 + to * 7 + i) as u8).collect()
}

#[test]
fn gather_scatter_allgather_alltoall_move_every_block() {
    for n in SIZES {
        // Uneven blocks: rank r contributes r + 1 bytes (times a scale
        // that crosses the allgather switch).
        for scale in [1, TUNING.allgather_large / 4] {
            let len = |r: usize| (r + 1) * scale;
            let total: usize = (0..n).map(len).sum();
            let lens: Vec<usize> = (0..n).map(len).collect();
            let want: Vec<u8> = (0..n).flat_map(|r| block(r, 0, len(r))).collect();
            for root in [0, n / 2, n - 1] {
                let outs = run(n, total, None, |b| {
                    let own = b.input(block(b.rank, 0, len(b.rank)));
                    let all = b.buf(total);
                    let parts = all.split(lens.iter().copied());
                    if b.rank == root {
                        b.copy(own, parts[root]);
                    }
                    algo::gatherv(b, root, own, &parts);
                    (b.rank == root).then_some(all)
                });
                assert!(outs[root] == want, "gatherv n {n} root {root}");
                let outs = run(n, total, None, |b| {
                    let me = b.rank;
                    let all = b.input(if me == root {
                        want.clone()
                    } else {
                        vec![0; total]
                    });
                    let parts = all.split(lens.iter().copied());
                    let own = if me == root {
                        parts[me]
                    } else {
                        b.buf(len(me))
                    };
                    algo::scatterv(b, root, own, &parts);
                    Some(own)
                });
                for (r, o) in outs.iter().enumerate() {
                    assert!(
                        o[..len(r)] == block(r, 0, len(r)),
                        "scatterv n {n} root {root}"
                    );
                }
            }
            let outs = run(n, total, None, |b| {
                let all = b.buf(total);
                let parts = all.split(lens.iter().copied());
                let own = b.input(block(b.rank, 0, len(b.rank)));
                b.copy(own, parts[b.rank]);
                algo::allgatherv(b, &parts);
                Some(all)
            });
            for o in outs {
                assert!(o == want, "allgatherv n {n} scale {scale}");
            }
        }
        // All-to-all with a different length for every pair.
        let pair = |from: usize, to: usize| (from + 2 * to) % 5;
        let outs = run(n, 64, None, |b| {
            let me = b.rank;
            let out_lens: Vec<usize> = (0..n).map(|to| pair(me, to)).collect();
            let in_lens: Vec<usize> = (0..n).map(|from| pair(from, me)).collect();
            let sent = b.input((0..n).flat_map(|to| block(me, to, pair(me, to))).collect());
            let got = b.buf(in_lens.iter().sum());
            algo::alltoallv(
                b,
                &sent.split(out_lens.iter().copied()),
                &got.split(in_lens.iter().copied()),
            );
            Some(got)
        });
        for (me, o) in outs.iter().enumerate() {
            let want: Vec<u8> = (0..n)
                .flat_map(|from| block(from, me, pair(from, me)))
                .collect();
            assert!(o[..want.len()] == want, "alltoallv n {n} rank {me}");
        }
    }
}

#[test]
fn binomial_gather_and_scatter_from_every_root() {
    for n in SIZES {
        for blk in [0, 3] {
            let want: Vec<u8> = (0..n).flat_map(|r| block(r, 0, blk)).collect();
            for root in 0..n {
                let outs = run(n, n * blk, None, |b| {
                    let own = b.input(block(b.rank, 0, blk));
                    let parts = algo::gather(b, root, own, blk);
                    if b.rank != root {
                        assert!(parts.is_empty());
                        return None;
                    }
                    // Collect the parts, in rank order, into one span.
                    let all = b.buf(n * blk);
                    for (r, &p) in parts.iter().enumerate() {
                        b.copy(p, all.sub(r * blk, blk));
                    }
                    Some(all)
                });
                assert!(outs[root] == want, "gather n {n} blk {blk} root {root}");
                let outs = run(n, blk, None, |b| {
                    let all = b.input(if b.rank == root {
                        want.clone()
                    } else {
                        Vec::new()
                    });
                    let parts = if b.rank == root {
                        all.split(vec![blk; n])
                    } else {
                        Vec::new()
                    };
                    Some(algo::scatter(b, root, &parts, blk))
                });
                for (r, o) in outs.iter().enumerate() {
                    assert!(
                        *o == block(r, 0, blk),
                        "scatter n {n} blk {blk} root {root}"
                    );
                }
            }
        }
    }
}

#[test]
fn reduce_scatter_leaves_each_block_reduced() {
    let op = sum();
    for n in SIZES {
        let counts: Vec<usize> = (0..n).map(|r| 4 * (r % 3)).collect();
        let total: usize = counts.iter().sum();
        let outs = run(n, 8, Some(&op), |b| {
            let r = b.rank as i32;
            let acc = b.input(ints((0..total as i32 / 4).map(|i| r + i)));
            Some(algo::reduce_scatter(b, acc, &counts))
        });
        let mut off = 0;
        for (r, o) in outs.iter().enumerate() {
            let k = counts[r] / 4;
            let n32 = n as i32;
            let want = ints((off..off + k as i32).map(|i| n32 * (n32 - 1) / 2 + n32 * i));
            assert!(o[..counts[r]] == want, "n {n} rank {r}");
            off += k as i32;
        }
    }
}

#[test]
fn engine_tags_separate_calls_and_phases() {
    let tag = |seq: u32, phase: u16| Builder::bare(vec![0], 0, 5, seq, 0).finish().tag(phase);
    assert_ne!(tag(0, 1), tag(1, 1));
    assert_ne!(tag(3, 1), tag(3, 2));
    // Context in the upper half; the sequence number wraps.
    assert_eq!(tag(0, 1) >> 32, 5);
    assert_eq!(tag(1 << super::sched::SEQ_BITS, 1), tag(0, 1));
    assert!(tag(u32::MAX, (1 << super::sched::PHASE_BITS) - 1) as u32 <= 0x3fff_ffff);
}

/// Node layouts: even, uneven, interleaved, three nodes, one process per
/// node (the flat algorithms then), one node.
const LAYOUTS: &[&[u32]] = &[
    &[0, 0, 1, 1],
    &[0, 0, 0, 1, 1],
    &[0, 1, 0, 1, 0],
    &[0, 0, 1, 1, 2, 2, 2],
    &[2, 1, 0],
    &[0, 0, 0],
    &[1, 0, 0, 0, 0, 1, 1, 1],
];

#[test]
fn node_aware_collectives_agree_with_the_flat_ones() {
    let op = sum();
    for &nodes in LAYOUTS {
        let n = nodes.len();
        run_on(Some(nodes), n, 0, None, |b| {
            algo::barrier(b);
            None
        });
        for len in [0, 5, TUNING.bcast_large + 3] {
            let data: Vec<u8> = (0..len).map(|i| (i * 13 % 253) as u8).collect();
            for root in 0..n {
                let outs = run_on(Some(nodes), n, len, None, |b| {
                    let d = if b.rank == root {
                        b.input(data.clone())
                    } else {
                        b.buf(len)
                    };
                    algo::bcast(b, d, root);
                    Some(d)
                });
                assert!(
                    outs.iter().all(|o| *o == data),
                    "bcast {nodes:?} root {root}"
                );
            }
        }
        for count in [1, 3, TUNING.allreduce_large / 4 + 5] {
            let n32 = n as i32;
            let want = ints((0..count as i32).map(|i| 1000 * n32 * (n32 - 1) / 2 + n32 * i));
            let input = |b: &mut Builder| {
                let r = b.rank as i32;
                b.input(ints((0..count as i32).map(|i| r * 1000 + i)))
            };
            let outs = run_on(Some(nodes), n, 4 * count, Some(&op), |b| {
                let acc = input(b);
                algo::allreduce(b, acc, 4);
                Some(acc)
            });
            assert!(
                outs.iter().all(|o| *o == want),
                "allreduce {nodes:?} {count}"
            );
            for root in 0..n {
                let outs = run_on(Some(nodes), n, 4 * count, Some(&op), |b| {
                    let acc = input(b);
                    algo::reduce(b, acc, root);
                    (b.rank == root).then_some(acc)
                });
                assert!(outs[root] == want, "reduce {nodes:?} root {root}");
            }
        }
        // Allgather with a different length for every rank (some empty).
        let lens: Vec<usize> = (0..n).map(|r| (r * 7 + 3) % 11).collect();
        let total: usize = lens.iter().sum();
        let want: Vec<u8> = (0..n).flat_map(|r| block(r, 0, lens[r])).collect();
        let outs = run_on(Some(nodes), n, total, None, |b| {
            let all = b.buf(total);
            let parts = all.split(lens.iter().copied());
            let own = b.input(block(b.rank, 0, lens[b.rank]));
            b.copy(own, parts[b.rank]);
            algo::allgatherv(b, &parts);
            Some(all)
        });
        assert!(outs.iter().all(|o| *o == want), "allgatherv {nodes:?}");
        // Non-commutative: node-aware where each node's ranks are
        // consecutive, else the flat, rank-ordered algorithms.
        let mm = matmul_op();
        let want = ints(product(0..n, 0));
        let outs = run_on(Some(nodes), n, 16, Some(&mm), |b| {
            let acc = b.input(matrices(b.rank, 1));
            algo::allreduce(b, acc, 16);
            Some(acc)
        });
        assert!(outs.iter().all(|o| *o == want), "matmul {nodes:?}");
        for root in 0..n {
            let outs = run_on(Some(nodes), n, 16, Some(&mm), |b| {
                let acc = b.input(matrices(b.rank, 1));
                algo::reduce(b, acc, root);
                (b.rank == root).then_some(acc)
            });
            assert!(outs[root] == want, "matmul reduce {nodes:?} root {root}");
        }
    }
}

/// A non-commutative reduction runs node-aware (one message per node
/// crosses nodes) where each node's ranks are consecutive, and flat where
/// they interleave.
#[test]
fn non_commutative_reductions_go_node_aware_on_consecutive_nodes() {
    for (nodes, aware) in [
        (&[0, 0, 0, 1, 1, 1][..], true),
        (&[0, 1, 0, 1, 0, 1][..], false),
    ] {
        let n = nodes.len();
        let mut crossing = 0;
        for r in 0..n {
            let mut b = Builder::bare((0..n as u32).collect(), r, 0, 0, 0);
            b.set_nodes(nodes.to_vec());
            b.set_op(matmul_op());
            let acc = b.input(matrices(r, 1));
            algo::reduce(&mut b, acc, 0);
            crossing += b
                .finish()
                .steps()
                .iter()
                .filter_map(|st| match st {
                    super::sched::Step::Round(xs) => Some(xs),
                    _ => None,
                })
                .flatten()
                .filter(|x| matches!(x, super::sched::Xfer::Send { peer, .. } if nodes[*peer] != nodes[r]))
                .count();
        }
        // Node-aware: only node 1's leader sends across, once.
        assert_eq!(
            crossing == 1,
            aware,
            "{nodes:?}: {crossing} messages across nodes"
        );
    }
}

/// Across two nodes of four, a barrier sends one message per node across
/// (per leader round) instead of one per process.
#[test]
fn node_aware_barrier_crosses_nodes_once_per_round() {
    let nodes = [0, 0, 0, 0, 1, 1, 1, 1];
    let mut crossing = 0;
    for r in 0..8 {
        let mut b = Builder::bare((0..8).collect(), r, 1, 0, 0);
        b.set_nodes(nodes.to_vec());
        algo::barrier(&mut b);
        for step in b.finish().steps() {
            if let super::sched::Step::Round(xs) = step {
                crossing += xs
                    .iter()
                    .filter(|x| match x {
                        super::sched::Xfer::Send { peer, .. } => nodes[*peer] != nodes[r],
                        _ => false,
                    })
                    .count();
            }
        }
    }
    // The two leaders exchange one message each; a flat dissemination
    // barrier on 8 processes sends 14 of its 24 messages across.
    assert_eq!(crossing, 2);
}
