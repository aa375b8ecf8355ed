//! The demo: every process passes a message around a ring, for several
//! laps and sizes covering each protocol (inline, eager, rendezvous), and
//! checks every byte.
//!
//! ```text
//! cargo build --release -p tools --bin mpiexec --examples
//! target/release/mpiexec -n 4 target/release/examples/ring
//! ```

use std::process::ExitCode;
use std::time::Instant;

use shm_engine::{Endpoint, Source, TagMatch, bootstrap};

const SIZES: [usize; 6] = [8, 72, 4096, 16384, 65536, 4 << 20];

fn pattern(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for b in buf.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let laps: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10);
    let mut ep = Endpoint::new(bootstrap::from_env()?)?;
    let (me, n) = (ep.rank(), ep.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let start = Instant::now();
    let mut expect = Vec::new();
    let mut bytes = 0u64;
    for &size in &SIZES {
        let mut out = vec![0u8; size];
        for lap in 0..laps {
            let tag = (size as u64) << 16 | lap;
            pattern(&mut out, tag ^ u64::from(me));
            let r = ep.irecv(Source::Rank(prev), TagMatch::exact(tag), size)?;
            ep.send(next, tag, &out)?;
            let got = ep.wait(r)?;
            expect.resize(size, 0);
            pattern(&mut expect, tag ^ u64::from(prev));
            if got.data.as_deref() != Some(&expect[..]) || got.status.source != prev {
                return Err(format!("rank {me}: corrupt {size}-byte message on lap {lap}").into());
            }
            bytes += size as u64;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cma = ep.uses_cma();
    ep.finalize()?;
    if me == 0 {
        println!(
            "ring: {n} processes, {laps} laps x {} sizes (8 B .. 4 MiB), {:.1} MiB per process checked in {secs:.3} s (large messages via {})",
            SIZES.len(),
            bytes as f64 / (1 << 20) as f64,
            if cma {
                "process_vm_readv"
            } else {
                "staging pipeline"
            }
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ring: {e}");
            ExitCode::FAILURE
        }
    }
}
