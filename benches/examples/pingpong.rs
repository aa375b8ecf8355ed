//! Latency and bandwidth between two processes, 0 B to 16 MiB, printed next
//! to two physical references measured by the same program in the same
//! run: a cache-line ping-pong between two threads (the latency floor) and
//! single-thread `memcpy` of the same size (the copy-bandwidth reference).
//!
//! ```text
//! cargo build --release -p tools --bin mpiexec -p benches --examples
//! target/release/mpiexec -n 2 target/release/examples/pingpong [--quick]
//! ```
//!
//! Every figure is the median of 5 repetitions. Latency is half a round
//! trip; bandwidth streams a window of 16 messages, then waits for a
//! one-byte acknowledgement.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use shm_engine::sync::{AtomicU64, Ordering};
use shm_engine::{Endpoint, Source, TagMatch, bootstrap};

const REPS: usize = 5;
const WINDOW: usize = 16;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn iterations(size: usize, quick: bool) -> usize {
    let budget: usize = if quick { 8 << 20 } else { 256 << 20 };
    (budget / size.max(64)).clamp(if quick { 4 } else { 20 }, if quick { 200 } else { 20_000 })
}

/// One-way latency of a cache line bouncing between two threads, in µs.
fn cacheline_floor() -> f64 {
    const ROUNDS: u64 = 200_000;
    let flag = Arc::new(AtomicU64::new(0));
    let other = flag.clone();
    let t = std::thread::spawn(move || {
        for i in 0..ROUNDS {
            while other.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.store(2 * i + 2, Ordering::Release);
        }
    });
    let start = Instant::now();
    for i in 0..ROUNDS {
        flag.store(2 * i + 1, Ordering::Release);
        while flag.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let el = start.elapsed();
    t.join().unwrap();
    el.as_secs_f64() * 1e6 / (2 * ROUNDS) as f64
}

/// The `len` bytes of `buf` that start at a 64-byte boundary.
fn aligned(buf: &mut [u8], len: usize) -> &mut [u8] {
    let off = buf.as_ptr().align_offset(64);
    &mut buf[off..off + len]
}

/// Single-thread copy bandwidth for `size`-byte copies, in MB/s.
fn memcpy_bw(size: usize, quick: bool) -> f64 {
    if size == 0 {
        return f64::NAN;
    }
    // Both ends 64-byte aligned: with some relative misalignments, `rep
    // movsb` runs an order of magnitude slower on some x86 CPUs, and the
    // reference should be what the machine can do, not that accident.
    let (mut src, mut dst) = (vec![1u8; size + 64], vec![2u8; size + 64]);
    let src = aligned(&mut src, size);
    let dst = aligned(&mut dst, size);
    let iters = iterations(size, quick) * 4;
    let start = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(black_box(&*src));
        black_box(&mut *dst);
    }
    (size * iters) as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// Message buffers of one size, allocated once and written to, so that no
/// measurement pays for page faults.
struct Buffers {
    out: Vec<u8>,
    window: Vec<Vec<u8>>,
}

impl Buffers {
    fn new(size: usize) -> Self {
        Self {
            out: vec![7; size],
            window: (0..WINDOW).map(|_| vec![1; size]).collect(),
        }
    }
}

fn latency(ep: &mut Endpoint, b: &mut Buffers, iters: usize) -> Result<f64, shm_engine::Error> {
    let me = ep.rank();
    let peer = 1 - me;
    let (out, inb) = (&b.out, &mut b.window[0]);
    let tag = TagMatch::exact(1);
    let start = Instant::now();
    for _ in 0..iters {
        if me == 0 {
            ep.send(peer, 1, out)?;
            ep.recv(Source::Rank(peer), tag, inb)?;
        } else {
            ep.recv(Source::Rank(peer), tag, inb)?;
            ep.send(peer, 1, out)?;
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / (2 * iters) as f64)
}

fn bandwidth(ep: &mut Endpoint, b: &mut Buffers, iters: usize) -> Result<f64, shm_engine::Error> {
    let me = ep.rank();
    let peer = 1 - me;
    let size = b.out.len();
    let rounds = iters.div_ceil(WINDOW).max(2);
    let (out, bufs) = (&b.out, &mut b.window);
    let start = Instant::now();
    for _ in 0..rounds {
        let mut reqs = Vec::with_capacity(WINDOW);
        if me == 0 {
            for _ in 0..WINDOW {
                // SAFETY: `out` outlives the requests, waited for below.
                reqs.push(unsafe { ep.isend_raw(peer, 2, out.as_ptr(), size)? });
            }
            for r in reqs {
                ep.wait(r)?;
            }
            ep.recv(Source::Rank(peer), TagMatch::exact(3), &mut [0u8; 1])?;
        } else {
            for b in bufs.iter_mut() {
                // SAFETY: each buffer outlives its request, waited for below.
                reqs.push(unsafe {
                    ep.irecv_raw(Source::Rank(peer), TagMatch::exact(2), b.as_mut_ptr(), size)?
                });
            }
            for r in reqs {
                ep.wait(r)?;
            }
            ep.send(peer, 3, &[1])?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((size * WINDOW * rounds) as f64 / secs / 1e6)
}

fn fmt_size(s: usize) -> String {
    match s {
        0..1024 => format!("{s} B"),
        1024..1_048_576 => format!("{} KiB", s / 1024),
        _ => format!("{} MiB", s / 1_048_576),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let mut ep = Endpoint::new(bootstrap::from_env()?)?;
    if ep.size() != 2 {
        return Err("run with exactly 2 processes (mpiexec -n 2)".into());
    }
    let me = ep.rank();
    let sizes: Vec<usize> = [0usize, 8, 64, 512]
        .into_iter()
        .chain((12..=24).step_by(2).map(|p| 1usize << p))
        .collect();

    // Physical references first, while the peer sleeps in a receive.
    let mut floor = f64::NAN;
    let mut copy = Vec::new();
    if me == 0 {
        floor = median((0..REPS).map(|_| cacheline_floor()).collect());
        for &s in &sizes {
            copy.push(median((0..REPS).map(|_| memcpy_bw(s, quick)).collect()));
        }
        ep.send(1, 9, &[])?;
    } else {
        ep.recv(Source::Rank(0), TagMatch::exact(9), &mut [])?;
    }

    let mut rows = Vec::new();
    for &size in &sizes {
        let iters = iterations(size, quick);
        let mut bufs = Buffers::new(size);
        latency(&mut ep, &mut bufs, iters.div_ceil(10))?; // warm-up
        let lat = median(
            (0..REPS)
                .map(|_| latency(&mut ep, &mut bufs, iters))
                .collect::<Result<_, _>>()?,
        );
        let bw = if size == 0 {
            f64::NAN
        } else {
            bandwidth(&mut ep, &mut bufs, WINDOW)?; // warm-up
            median(
                (0..REPS)
                    .map(|_| bandwidth(&mut ep, &mut bufs, iters))
                    .collect::<Result<_, _>>()?,
            )
        };
        rows.push((size, lat, bw));
    }
    let cma = ep.uses_cma();
    ep.finalize()?;
    if me == 0 {
        println!(
            "pingpong: 2 processes, median of {REPS}; large messages via {}; cache-line floor {:.3} us one-way",
            if cma {
                "process_vm_readv"
            } else {
                "staging pipeline"
            },
            floor
        );
        println!(
            "{:>8} {:>12} {:>10} {:>14} {:>14} {:>10}",
            "size", "latency(us)", "x floor", "bw(MB/s)", "memcpy(MB/s)", "bw/memcpy"
        );
        for (i, (size, lat, bw)) in rows.into_iter().enumerate() {
            let (bw, copy, ratio) = if size == 0 {
                ("-".into(), "-".into(), "-".into())
            } else {
                (
                    format!("{bw:.0}"),
                    format!("{:.0}", copy[i]),
                    format!("{:.2}", bw / copy[i]),
                )
            };
            println!(
                "{:>8} {:>12.3} {:>10.1} {bw:>14} {copy:>14} {ratio:>10}",
                fmt_size(size),
                lat,
                lat / floor,
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pingpong: {e}");
            ExitCode::FAILURE
        }
    }
}
