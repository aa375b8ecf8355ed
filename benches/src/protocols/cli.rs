//! Command line of `protocols`.

use std::path::PathBuf;

use clap::Parser;

use crate::compare::cli::dedup;
use crate::compare::competitors::Kind;

const AFTER_HELP: &str = "\
Runs benches/c/protocols.c (bandwidth of large messages between ranks 0 and
1, 64 KiB to 64 MiB; ranks 2 and up wait idle in a blocking receive) on
Tessel once per TESSEL_RNDV setting (adaptive, get, coop, steal) with
TESSEL_STATS=1, for buffers from malloc and from MPI_Alloc_mem, on each
process count of --np; the same with every other chosen MPI; and
benches/c/stencil.c with normal receives and (Tessel) with library-managed
receive buffers (--managed). Every repetition runs all of these in turn;
the report takes medians.

The report (report.md, bandwidth.csv, results.csv, samples.csv, stats.csv,
SVG plots) gives per size the bandwidth of each setting, its ratio to
Tessel's GET-only run with the same buffers and processes, and to the best
other MPI at that size; the protocols the adaptive engine chose per size
class (from the TESSEL_STATS lines); the stencil's exchange times; and the
machine's core count: more copying processes than cores cannot run at once.

Set-up and --no-setup as for `compare` (see its --help). The environment
variable TESSEL_BENCH_SRC=DIR takes the programs from DIR.";

/// `protocols [OPTIONS]`: Tessel's large-message protocols side by side.
#[derive(Debug, Parser)]
#[command(
    name = "protocols",
    about = "Benchmark Tessel's large-message protocols (adaptive, GET, COOP, work \
             stealing) with private and MPI_Alloc_mem buffers, with and without idle \
             helper processes, against the best other MPI; and the stencil with \
             library-managed receive buffers",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Process counts of the bandwidth runs: 2 is the pair alone, more
    /// adds idle helpers. Default: 2,4.
    #[arg(long, value_name = "N,N,..", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(2..))]
    pub np: Option<Vec<u32>>,

    /// Process counts of the stencil. Default: 2,4,8 (--quick: 2).
    #[arg(long, value_name = "N,N,..", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub stencil_np: Option<Vec<u32>>,

    /// Edge of each process's stencil block (doubles); 128 makes each face
    /// 128 KiB, a large message. Default: 128 (--quick: 8).
    #[arg(long, value_name = "E", value_parser = clap::value_parser!(u32).range(1..))]
    pub edge: Option<u32>,

    /// Largest message size: bytes, or with a K or M suffix (64K .. 64M).
    /// Default: 64M (--quick: 256K).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max: Option<u64>,

    /// Repetitions of every run; the report shows medians. Default: 5
    /// (--quick: 1).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,

    /// MPIs to run (default: all that set up); Tessel is the subject, the
    /// others are the comparison.
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', value_enum)]
    pub mpi: Option<Vec<Kind>>,

    /// A check that everything runs, in seconds: sizes up to 256 KiB,
    /// stencil on 2 processes with the programs' --quick, 1 repetition.
    /// Options given explicitly still apply.
    #[arg(long)]
    pub quick: bool,

    /// Report directory. Default: target/protocols-report of the workspace.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Install nothing and build no Tessel: use the MPIs already present.
    #[arg(long)]
    pub no_setup: bool,

    /// Kill a run still going after SECS seconds and record it as failed.
    /// Default: 300 (--quick: 60).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

/// Smallest and largest message of `protocols.c`.
pub const MIN_SIZE: u64 = 64 << 10;
pub const MAX_SIZE: u64 = 64 << 20;

/// `65536`, `64K`, `4M` (KiB and MiB), within [`MIN_SIZE`]..=[`MAX_SIZE`].
fn parse_size(v: &str) -> Result<u64, String> {
    let (digits, unit) = match v.strip_suffix('K') {
        Some(d) => (d, 1 << 10),
        None => match v.strip_suffix('M') {
            Some(d) => (d, 1 << 20),
            None => (v, 1),
        },
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{v}` is not a size (like 65536, 64K or 4M)"))?;
    let bytes = n.saturating_mul(unit);
    if (MIN_SIZE..=MAX_SIZE).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!("{v} is outside 64K..64M"))
    }
}

/// The options with `--quick` and the defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub np: Vec<u32>,
    pub stencil_np: Vec<u32>,
    /// `None`: the stencil program's own default for `--quick`.
    pub edge: Option<u32>,
    /// `None`: the program's own default (64 MiB, 256 KiB with `--quick`).
    pub max: Option<u64>,
    pub reps: u32,
    pub mpis: Vec<Kind>,
    pub quick: bool,
    pub out: Option<PathBuf>,
    pub setup: bool,
    pub timeout_secs: u64,
}

impl Cli {
    /// Apply `--quick` and the defaults; duplicates are dropped, order kept.
    pub fn plan(self) -> Plan {
        let q = self.quick;
        let pick = |v: Option<Vec<u32>>, quick: &[u32], full: &[u32]| {
            dedup(v.unwrap_or_else(|| if q { quick.to_vec() } else { full.to_vec() }))
        };
        Plan {
            np: pick(self.np, &[2, 4], &[2, 4]),
            stencil_np: pick(self.stencil_np, &[2], &[2, 4, 8]),
            edge: self.edge.or((!q).then_some(128)),
            max: self.max,
            reps: self.reps.unwrap_or(if q { 1 } else { 5 }),
            mpis: dedup(self.mpi.unwrap_or_else(|| Kind::ALL.to_vec())),
            quick: q,
            out: self.out,
            setup: !self.no_setup,
            timeout_secs: self.timeout.unwrap_or(if q { 60 } else { 300 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        Cli::try_parse_from(std::iter::once("protocols").chain(args.iter().copied()))
            .unwrap()
            .plan()
    }

    #[test]
    fn defaults_and_quick() {
        let p = plan(&[]);
        assert_eq!((p.np, p.stencil_np, p.reps), (vec![2, 4], vec![2, 4, 8], 5));
        assert_eq!((p.edge, p.max, p.timeout_secs), (Some(128), None, 300));
        let p = plan(&["--quick", "--mpi", "tessel"]);
        assert_eq!((p.np, p.stencil_np, p.reps), (vec![2, 4], vec![2], 1));
        assert_eq!((p.edge, p.mpis), (None, vec![Kind::Tessel]));
        let p = plan(&["--quick", "--edge", "16", "--max", "1M", "--np", "4,4"]);
        assert_eq!((p.edge, p.max, p.np), (Some(16), Some(1 << 20), vec![4]));
    }

    #[test]
    fn sizes_take_suffixes_and_stay_in_range() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        for bad in ["1K", "128M", "4G", "x", "", "M"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_one_process() {
        let argv = ["protocols", "--np", "1"];
        assert!(Cli::try_parse_from(argv).is_err());
    }
}
