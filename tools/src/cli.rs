//! The `mpiexec` command line.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::launch::JobSpec;
use crate::mapping::Mapping;

const AFTER_HELP: &str = "\
Options end at PROGRAM: everything after it is passed to PROGRAM unchanged.

Environment of every process (on top of mpiexec's own, which is inherited,
and the -x settings):
  PMI_FD             descriptor of the process's PMI-1 connection to mpiexec
  PMI_RANK           rank of the process, 0..N-1
  PMI_SIZE           number of processes N
  TESSEL_NODE        virtual node of the process (rank / P with --ppn P, else 0)
  TESSEL_LOCAL_RANK  rank of the process among those of its virtual node
  TESSEL_LOCAL_SIZE  number of processes on its virtual node
  TESSEL_JOB_CPUS    CPUs mpiexec's affinity mask holds, which the job's
                     processes share, on every virtual node
  TESSEL_UNIVERSE    BASE SIZE ID: the process's job is ids BASE.. of a
                     universe of SIZE (see --universe-size) named ID
Each process runs in a process group of its own. Rank 0 reads mpiexec's
standard input unless that is a terminal; the other ranks read /dev/null.

Exit status:
  0        every rank exited with status 0
  C        the first rank to fail exited with code C, or called abort with C
  128+S    the first rank to fail was killed by signal S, or mpiexec itself
           received signal S (SIGINT, SIGTERM, SIGHUP are forwarded to the job)
  124      --timeout expired
  126/127  PROGRAM could not be executed / was not found
When a rank fails, every other process gets SIGTERM, and SIGKILL 2 s later.

Process sets (MPI-4 Sessions): every job has mpi://WORLD, mpi://SELF and
mpix://SHARED (the processes of the caller's virtual node). --pset NAME=RANKS
adds the set app://NAME of RANKS, a list like 0-3,6 (ranks and inclusive
ranges, in rank order of the set's group; each rank at most once). NAME may
be given with or without its app:// prefix and may hold letters, digits and
`_ . / -`; names are compared ignoring case. The sets reach the processes
through the PMI key-value store (keys tessel.psets and tessel.pset.I).

Dynamic processes: MPI_Comm_spawn asks mpiexec to start processes, which join
the running node's shared-memory segment. The segment is sized for the
universe (--universe-size, MPI_UNIVERSE_SIZE); ids of processes that exited
are not used again. Names published with MPI_Publish_name are seen by every
job of this mpiexec.";

/// Ids a one-node job may add by default (`--universe-size`).
const DEFAULT_SPARE: u32 = 32;

/// Where processes may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bind {
    /// Each process on its own group of cores (as many as
    /// `OMP_NUM_THREADS` says, one when unset) when they fit the cores
    /// mpiexec may use; `Unbound` otherwise.
    Auto,
    /// Pin each process to the PUs of one core (hwloc's cores, keeping
    /// only the CPUs mpiexec may use), round robin by rank.
    Core,
    /// Pin each process to the PUs of one NUMA node, round robin by rank.
    Numa,
    /// Leave placement to the kernel.
    #[value(name = "none")]
    Unbound,
}

/// `mpiexec [OPTIONS] PROGRAM [ARGS...]`
#[derive(Debug, Parser)]
#[command(
    name = "mpiexec",
    version,
    about = "Start a Tessel job: N copies of PROGRAM connected to a PMI-1 server",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Number of processes (ranks) to start.
    #[arg(
        short = 'n',
        long = "np",
        value_name = "N",
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub np: u32,

    /// Processes per virtual node: ranks 0..P-1 form node 0, P..2P-1 node 1,
    /// and so on (the last node may have fewer). Default: all on one node.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..))]
    pub ppn: Option<u32>,

    /// How many processes the job may hold in all, those MPI_Comm_spawn
    /// adds included (MPI_UNIVERSE_SIZE). Default: N + 32 on one node; N
    /// with --ppn (processes are added on one node only).
    #[arg(
        long,
        visible_alias = "max-procs",
        value_name = "U",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub universe_size: Option<u32>,

    /// Act as the job's resource manager: propose resource changes, which
    /// the job queries and accepts (MPIX_Dynres_get / _accept). POLICY:
    /// schedule:FILE (lines `add N` / `remove N`, in order), step:N (add N,
    /// remove N, ...), random:SEED, external (only `tessel-dynres PID add
    /// N|remove N` requests, which every policy also takes). Needs one
    /// node; see --universe-size.
    #[arg(long, value_name = "POLICY", value_parser = crate::dynres::Policy::parse)]
    pub dynres: Option<crate::dynres::Policy>,

    /// Set KEY=VALUE in the environment of every process (repeatable).
    #[arg(short = 'x', long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Pin processes, round robin by rank over the places mpiexec may use
    /// (found with hwloc; virtual nodes of --ppn share them): `core` binds
    /// each process to the PUs of one core, `numa` to those of one NUMA
    /// node; `auto` gives each process its own OMP_NUM_THREADS cores (one
    /// when unset) when the processes fit the cores, and is `none`
    /// otherwise; `none` (the default) leaves placement to the kernel.
    #[arg(long, value_enum, value_name = "auto|core|numa|none", default_value_t = Bind::Unbound)]
    pub bind: Bind,

    /// Kill the job and exit with 124 if it is still running after SECS
    /// seconds (0: no limit).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub timeout: u64,

    /// Add the process set app://NAME of RANKS (like `0-3,6`) to the job,
    /// for MPI_Group_from_session_pset (repeatable).
    #[arg(long = "pset", value_name = "NAME=RANKS", value_parser = parse_pset)]
    pub psets: Vec<(String, Vec<u32>)>,

    /// The program to run, followed by its arguments.
    #[arg(
        value_name = "PROGRAM [ARGS]",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

impl Cli {
    /// Checks that need more than one option: every rank of a `--pset` is
    /// below `-n`, and no set is named twice.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(u) = self.universe_size {
            if u < self.np {
                return Err(format!(
                    "--universe-size {u} is smaller than the number of processes {}",
                    self.np
                ));
            }
            if u > self.np && self.job_spec().mapping.nodes() > 1 {
                return Err(format!(
                    "--universe-size {u} with {} virtual nodes: processes can be added to a \
                     job on one node only",
                    self.job_spec().mapping.nodes()
                ));
            }
        }
        if self.dynres.is_some() && self.job_spec().mapping.nodes() > 1 {
            return Err(format!(
                "--dynres with {} virtual nodes: processes can be added to a job on one node \
                 only",
                self.job_spec().mapping.nodes()
            ));
        }
        for (i, (name, ranks)) in self.psets.iter().enumerate() {
            if let Some(r) = ranks.iter().find(|&&r| r >= self.np) {
                return Err(format!(
                    "--pset {name}: rank {r} is not below the number of processes {}",
                    self.np
                ));
            }
            if self.psets[..i]
                .iter()
                .any(|(other, _)| other.eq_ignore_ascii_case(name))
            {
                return Err(format!("--pset {name} is given twice"));
            }
        }
        Ok(())
    }

    /// The universe size: as given, or the default (see `--universe-size`).
    fn universe(&self) -> u32 {
        let nodes = Mapping::block(self.np, self.ppn).nodes();
        self.universe_size.unwrap_or(if nodes > 1 {
            self.np
        } else {
            self.np.saturating_add(DEFAULT_SPARE)
        })
    }

    /// The job this command line describes.
    pub fn job_spec(&self) -> JobSpec {
        let mut command = self.command.iter().cloned();
        let program = command.next().unwrap_or_default();
        JobSpec {
            program,
            args: command.collect(),
            mapping: Mapping::block(self.np, self.ppn),
            universe: self.universe(),
            dynres: self.dynres.clone(),
            env: self.env.clone(),
            psets: self.psets.clone(),
            bind: self.bind,
            timeout: (self.timeout > 0).then(|| Duration::from_secs(self.timeout)),
        }
    }
}

/// Parse `KEY=VALUE` (the value may contain `=` and be empty).
fn parse_env(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))?;
    if key.is_empty() || key.contains('\0') || value.contains('\0') {
        return Err(format!(
            "expected KEY=VALUE with a non-empty KEY, got {text:?}"
        ));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// The prefix of process sets named on the command line.
pub const PSET_PREFIX: &str = "app://";

/// Longest set name, prefix included (MPICH's `MPI_MAX_PSET_NAME_LEN` less
/// its terminating NUL).
const PSET_NAME_MAX: usize = 255;

/// Parse `NAME=RANKS` into the set's full name (`app://NAME`) and ranks.
fn parse_pset(text: &str) -> Result<(String, Vec<u32>), String> {
    let (name, ranks) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=RANKS, got {text:?}"))?;
    let bare = name.strip_prefix(PSET_PREFIX).unwrap_or(name);
    let usable = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    if bare.is_empty() || !bare.chars().all(usable) {
        return Err(format!(
            "process set name {name:?} must be letters, digits and `_ . / -`, \
             optionally after app://"
        ));
    }
    let full = format!("{PSET_PREFIX}{bare}");
    if full.len() > PSET_NAME_MAX {
        return Err(format!(
            "process set name {full:?} is longer than {PSET_NAME_MAX} bytes"
        ));
    }
    let ranks = shm_engine::bootstrap::pset::parse_ranks(ranks)?;
    Ok((full, ranks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mpiexec").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let cli = parse(&["prog"]).unwrap();
        assert_eq!(cli.np, 1);
        assert_eq!(cli.ppn, None);
        assert_eq!(cli.bind, Bind::Unbound);
        assert_eq!(cli.timeout, 0);
        let spec = cli.job_spec();
        assert_eq!(spec.program, "prog");
        assert!(spec.args.is_empty());
        assert_eq!(spec.timeout, None);
        assert_eq!(spec.mapping, Mapping::block(1, None));
    }

    #[test]
    fn options_stop_at_the_program() {
        let cli = parse(&[
            "-n",
            "4",
            "--ppn",
            "2",
            "-x",
            "A=1",
            "--env",
            "B=x=y",
            "--bind",
            "core",
            "--timeout",
            "9",
            "prog",
            "-n",
            "5",
            "--help",
            "--",
            "x",
        ])
        .unwrap();
        assert_eq!(cli.np, 4);
        assert_eq!(cli.ppn, Some(2));
        assert_eq!(
            cli.env,
            [("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        assert_eq!(cli.bind, Bind::Core);
        assert_eq!(parse(&["--bind", "numa", "p"]).unwrap().bind, Bind::Numa);
        assert_eq!(parse(&["--bind", "none", "p"]).unwrap().bind, Bind::Unbound);
        assert_eq!(parse(&["--bind", "auto", "p"]).unwrap().bind, Bind::Auto);
        let spec = cli.job_spec();
        assert_eq!(spec.program, "prog");
        assert_eq!(spec.args, ["-n", "5", "--help", "--", "x"]);
        assert_eq!(spec.timeout, Some(Duration::from_secs(9)));
        assert_eq!(spec.mapping, Mapping::block(4, Some(2)));
    }

    #[test]
    fn process_sets_are_named_app_and_checked_against_the_job_size() {
        let cli = parse(&[
            "-n",
            "8",
            "--pset",
            "ocean=0-3,6",
            "--pset",
            "app://Atmos/1=7",
            "prog",
        ])
        .unwrap();
        assert_eq!(
            cli.job_spec().psets,
            [
                ("app://ocean".to_owned(), vec![0, 1, 2, 3, 6]),
                ("app://Atmos/1".to_owned(), vec![7]),
            ]
        );
        assert_eq!(cli.validate(), Ok(()));
        let cli = parse(&["-n", "4", "--pset", "a=0-4", "prog"]).unwrap();
        assert!(cli.validate().unwrap_err().contains("rank 4"));
        let cli = parse(&["-n", "4", "--pset", "a=0", "--pset", "A=1", "prog"]).unwrap();
        assert!(cli.validate().unwrap_err().contains("twice"));
    }

    #[test]
    fn program_after_double_dash() {
        let cli = parse(&["-n", "2", "--", "-weird-name", "a"]).unwrap();
        assert_eq!(cli.command, ["-weird-name", "a"]);
    }

    #[test]
    fn growing_needs_one_node_and_room() {
        for args in [
            &["--ppn", "1", "-n", "2", "--dynres", "step:1", "prog"][..],
            &["--ppn", "1", "-n", "2", "--universe-size", "4", "prog"],
            &["--universe-size", "1", "-n", "2", "prog"],
        ] {
            let cli = parse(args).expect("parses");
            assert!(cli.validate().is_err(), "{args:?} was accepted");
        }
        let cli = parse(&["-n", "2", "--max-procs", "9", "--dynres", "step:1", "prog"]).unwrap();
        assert!(cli.validate().is_ok());
        assert_eq!(cli.job_spec().universe, 9);
    }

    #[test]
    fn bad_command_lines_are_refused() {
        for args in [
            &[][..],
            &["-n", "0", "prog"],
            &["--ppn", "0", "prog"],
            &["-x", "NOEQUALS", "prog"],
            &["-x", "=v", "prog"],
            &["--bind", "socket", "prog"],
            &["--bind", "", "prog"],
            &["--timeout", "-1", "prog"],
            &["--pset", "a", "prog"],
            &["--pset", "=0", "prog"],
            &["--pset", "a b=0", "prog"],
            &["--pset", "mpi://a=0", "prog"],
            &["--pset", "a=3-1", "prog"],
            &["--pset", "a=0,0", "prog"],
            &["--dynres", "step:0", "prog"],
        ] {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn help_mentions_every_option_and_variable() {
        let help = Cli::command().render_help().to_string();
        for word in [
            "--np",
            "--ppn",
            "--env",
            "--bind",
            "--timeout",
            "--pset",
            "app://",
            "mpix://SHARED",
            "--version",
            "PMI_FD",
            "PMI_RANK",
            "PMI_SIZE",
            "TESSEL_NODE",
            "TESSEL_LOCAL_RANK",
            "TESSEL_LOCAL_SIZE",
            "TESSEL_JOB_CPUS",
            "TESSEL_UNIVERSE",
            "--universe-size",
            "--max-procs",
            "--dynres",
            "124",
            "127",
        ] {
            assert!(help.contains(word), "--help lacks {word}:\n{help}");
        }
    }
}
