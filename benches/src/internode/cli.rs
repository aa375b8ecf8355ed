//! Command line of `internode`.

use std::path::PathBuf;

use clap::Parser;

use crate::compare::cli::dedup;
use crate::compare::competitors::Kind;

const AFTER_HELP: &str = "\
Stencil overlap: benches/c/stencil.c on 8 processes split as 2 nodes of 4,
once per --mode (intra: only the faces whose neighbour shares the node;
inter: only the others; total: all), reported as total / max(intra, inter)
(1 when the two kinds of transfer overlap perfectly). Tessel runs across
virtual nodes of its own launcher (mpiexec --ppn 4) with every network plugin
that opens (TESSEL_NET=ucx with UCX_TLS=tcp UCX_NET_DEVICES=lo; TESSEL_NET=ofi
with FI_PROVIDER=tcp FI_TCP_IFACE=lo) and across two network namespaces
joined by a veth pair, launched by MPICH's Hydra; Debian's MPICH and Open MPI
run across the same namespaces (needs root and iproute2's ip). Each MPI also
runs --mode inter on one node, where no face crosses nodes: a locality check.

Plugin overhead: benches/c/pingpong.c on 2 processes on 2 virtual nodes
(mpiexec -n 2 --ppn 1), so that every message goes through the plugin, next
to the transport's own tool over loopback in the same repetition:
ucx_perftest (ucp_am_lat, ucp_am_bw; Debian ucx-utils) for the UCX plugin,
fi_pingpong (-p tcp -e rdm; Debian libfabric-bin) for the libfabric one.

Every repetition runs everything in turn; the report takes medians. Set-up
(skipped with --no-setup) as for `compare`: Debian's mpich and Open MPI
packages when missing, Tessel with tools/install.sh. The namespaces are
removed when the command ends.";

/// `internode [OPTIONS]`: Tessel across nodes.
#[derive(Debug, Parser)]
#[command(
    name = "internode",
    about = "Benchmark jobs that span nodes: the stencil's overlap of intra- and inter-node \
             transfers (Tessel on each network plugin, MPICH, Open MPI, across virtual nodes \
             and network namespaces) and the network plugins' overhead over their transport",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Repetitions of every run; the report shows medians. Default: 5
    /// (--quick: 1).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,

    /// MPIs to run: tessel, mpich, openmpi (default: all three). Tessel is
    /// the subject, the others the comparison.
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', value_parser = parse_mpi)]
    pub mpi: Option<Vec<Kind>>,

    /// Edge of each process's stencil block (doubles). Default: the
    /// program's (64; 8 with --quick).
    #[arg(long, value_name = "E", value_parser = clap::value_parser!(u32).range(1..))]
    pub edge: Option<u32>,

    /// A check that everything runs (for CI), in about a minute: one
    /// repetition, the programs' --quick sizes, the transport tools at one
    /// small size each. Its numbers mean nothing. Options given explicitly
    /// still apply.
    #[arg(long)]
    pub quick: bool,

    /// Report directory. Default: target/internode-report of the workspace.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Install nothing and build no Tessel: use the MPIs already present.
    #[arg(long)]
    pub no_setup: bool,

    /// Kill a run still going after SECS seconds and record it as failed.
    /// Default: 120 (--quick: 60).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

/// The MPIs this command knows (`mpich-pypi` has no run across nodes here).
fn parse_mpi(v: &str) -> Result<Kind, String> {
    match v {
        "tessel" => Ok(Kind::Tessel),
        "mpich" => Ok(Kind::Mpich),
        "openmpi" => Ok(Kind::OpenMpi),
        _ => Err(format!("`{v}` is not one of tessel, mpich, openmpi")),
    }
}

/// The MPIs run by default.
pub const MPIS: [Kind; 3] = [Kind::Tessel, Kind::Mpich, Kind::OpenMpi];

/// Message sizes of the plugin-overhead comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    /// Latency: small messages.
    pub latency: Vec<u64>,
    /// Bandwidth: large messages.
    pub bandwidth: Vec<u64>,
}

/// The options with `--quick` and the defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub reps: u32,
    pub mpis: Vec<Kind>,
    /// `None`: the stencil program's own default.
    pub edge: Option<u32>,
    pub sizes: Sizes,
    pub quick: bool,
    pub out: Option<PathBuf>,
    pub setup: bool,
    pub timeout_secs: u64,
}

impl Cli {
    /// Apply `--quick` and the defaults; duplicates are dropped, order kept.
    pub fn plan(self) -> Plan {
        let q = self.quick;
        // pingpong.c's sizes: --quick stops at 64 KiB.
        let sizes = if q {
            Sizes {
                latency: vec![64],
                bandwidth: vec![64 << 10],
            }
        } else {
            Sizes {
                latency: vec![1, 64, 1024],
                bandwidth: vec![1 << 20, 4 << 20, 16 << 20],
            }
        };
        Plan {
            reps: self.reps.unwrap_or(if q { 1 } else { 5 }),
            mpis: dedup(self.mpi.unwrap_or_else(|| MPIS.to_vec())),
            edge: self.edge,
            sizes,
            quick: q,
            out: self.out,
            setup: !self.no_setup,
            timeout_secs: self.timeout.unwrap_or(if q { 60 } else { 120 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        Cli::try_parse_from(std::iter::once("internode").chain(args.iter().copied()))
            .unwrap()
            .plan()
    }

    #[test]
    fn defaults_and_quick() {
        let p = plan(&[]);
        assert_eq!((p.reps, p.edge, p.timeout_secs), (5, None, 120));
        assert_eq!(p.mpis, MPIS);
        assert_eq!(p.sizes.latency, [1, 64, 1024]);
        assert!(p.setup && !p.quick);
        let p = plan(&["--quick", "--mpi", "tessel,tessel", "--no-setup"]);
        assert_eq!(
            (p.reps, p.timeout_secs, p.mpis),
            (1, 60, vec![Kind::Tessel])
        );
        assert_eq!(p.sizes.bandwidth, [64 << 10]);
        assert!(!p.setup);
        let p = plan(&["--quick", "--reps", "3", "--edge", "16"]);
        assert_eq!((p.reps, p.edge), (3, Some(16)));
    }

    #[test]
    fn rejects_unknown_mpis_and_bad_values() {
        for args in [
            &["--mpi", "mpich-pypi"][..],
            &["--mpi", "lam"],
            &["--reps", "0"],
            &["--edge", "x"],
        ] {
            let argv = std::iter::once("internode").chain(args.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?}");
        }
    }
}
