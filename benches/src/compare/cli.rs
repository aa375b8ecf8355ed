//! Command line of `compare`.

use std::path::PathBuf;

use clap::Parser;

use super::competitors::Kind;

const AFTER_HELP: &str = "\
Each repetition runs the physical reference (reference.c, built with
cc -O2 -pthread) once, then every program on every MPI in turn (A B C D for
each program); the report takes medians over repetitions. Ratios are always Tessel/other: for
times and memory below 1 means Tessel is better, for bandwidths above 1.

Set-up (skipped with --no-setup), for the chosen MPIs: installs the Debian
packages mpich, libmpich-dev, openmpi-bin and libopenmpi-dev when missing
(apt-get, through sudo when not root, waiting for a busy dpkg lock), `pip install mpich` into target/bench-venv, and Tessel with
tools/install.sh. A competitor whose set-up fails is skipped and the report
says why.

Developer option: the environment variable TESSEL_BENCH_SRC=DIR takes the
benchmark programs from DIR instead of benches/c.";

/// `compare [OPTIONS]`: Tessel against other MPIs on this machine.
#[derive(Debug, Parser)]
#[command(
    name = "compare",
    about = "Benchmark Tessel against other MPIs side by side and write a report \
             (Markdown, JSON, CSV, SVG plots)",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Process counts for the stencil and collectives (ping-pong always
    /// runs on 2). Default: 2,4,8 (--quick: 2).
    #[arg(long, value_name = "N,N,..", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub np: Option<Vec<u32>>,

    /// Process counts for the start-up benchmark. Default:
    /// 1,2,4,8,16,32,64 (--quick: 1,2).
    #[arg(long, value_name = "N,N,..", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub startup_np: Option<Vec<u32>>,

    /// Repetitions of every run; the report shows medians. Default: 5
    /// (--quick: 1).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,

    /// Benchmark programs to run (of pingpong, rma, stencil, colls,
    /// startup; default: all).
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(super::build::PROGRAMS))]
    pub programs: Option<Vec<String>>,

    /// MPIs to compare (default: all that set up).
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', value_enum)]
    pub mpi: Option<Vec<Kind>>,

    /// Proves the harness works (for CI): 2 processes, start-up at 1 and 2
    /// only, 1 repetition, and the programs' own --quick mode (tiny sizes).
    /// Options given explicitly still apply.
    #[arg(long)]
    pub quick: bool,

    /// Report directory. Default: target/bench-report of the workspace.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Install nothing and build no Tessel: use the MPIs already present.
    #[arg(long)]
    pub no_setup: bool,

    /// Kill a run still going after SECS seconds and record it as failed.
    /// Default: 600 (--quick: 60).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

/// The options with `--quick` and the defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub np: Vec<u32>,
    pub startup_np: Vec<u32>,
    pub reps: u32,
    pub mpis: Vec<Kind>,
    /// The benchmark programs run (of [`super::build::PROGRAMS`]).
    pub programs: Vec<String>,
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
            np: pick(self.np, &[2], &[2, 4, 8]),
            startup_np: pick(self.startup_np, &[1, 2], &[1, 2, 4, 8, 16, 32, 64]),
            reps: self.reps.unwrap_or(if q { 1 } else { 5 }),
            mpis: dedup(self.mpi.unwrap_or_else(|| Kind::ALL.to_vec())),
            programs: dedup(self.programs.unwrap_or_else(|| {
                super::build::PROGRAMS
                    .iter()
                    .map(|p| p.to_string())
                    .collect()
            })),
            quick: q,
            out: self.out,
            setup: !self.no_setup,
            timeout_secs: self.timeout.unwrap_or(if q { 60 } else { 600 }),
        }
    }
}

/// `v` without its repetitions, in first-seen order.
pub fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        Cli::try_parse_from(std::iter::once("compare").chain(args.iter().copied()))
            .unwrap()
            .plan()
    }

    #[test]
    fn defaults() {
        let p = plan(&[]);
        assert_eq!(p.np, [2, 4, 8]);
        assert_eq!(p.startup_np, [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(p.reps, 5);
        assert_eq!(p.mpis, Kind::ALL);
        assert_eq!(p.programs, super::super::build::PROGRAMS);
        assert!(p.setup && !p.quick);
        let p = plan(&["--programs", "colls,stencil,colls"]);
        assert_eq!(p.programs, ["colls", "stencil"]);
        assert!(Cli::try_parse_from(["compare", "--programs", "nope"]).is_err());
    }

    #[test]
    fn quick_changes_only_what_is_not_given() {
        let p = plan(&["--quick"]);
        assert_eq!((p.np, p.startup_np, p.reps), (vec![2], vec![1, 2], 1));
        let p = plan(&["--quick", "--reps", "3", "--np", "4,2,4"]);
        assert_eq!((p.np, p.reps), (vec![4, 2], 3));
    }

    #[test]
    fn mpi_list_and_no_setup() {
        let p = plan(&["--mpi", "openmpi,tessel", "--no-setup"]);
        assert_eq!(p.mpis, [Kind::OpenMpi, Kind::Tessel]);
        assert!(!p.setup);
    }

    #[test]
    fn rejects_bad_values() {
        for args in [&["--np", "0"][..], &["--mpi", "lam"], &["--reps", "x"]] {
            let argv = std::iter::once("compare").chain(args.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?}");
        }
    }
}
