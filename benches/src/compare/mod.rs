//! `compare`: Tessel against other MPIs on this machine, in one command.
//!
//! `cargo run --release -p benches --bin compare -- [OPTIONS]` sets up the
//! competitors ([`competitors`]), builds the C programs of `benches/c` with
//! each one's compiler wrapper ([`build`]), runs them alternately under a
//! watchdog ([`run`]), takes medians ([`stats`]) and writes the report
//! directory ([`report`], [`plot`]). The programs' output contract is
//! `result bench=.. metric=.. [key=value ..] value=.. unit=..` on rank 0's
//! stdout.
//!
//! Developer option: `TESSEL_BENCH_SRC=DIR` takes the programs from `DIR`
//! instead of `benches/c` (to try the harness on stand-in programs).

pub mod build;
pub mod cli;
pub mod competitors;
pub mod plot;
pub mod report;
pub mod run;
pub mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser;

use build::Built;
use cli::{Cli, Plan};
use competitors::{Competitor, Kind, Machine, Workspace};
use report::{Environment, Options, Results};
use run::{Failure, Task};
use stats::Sample;

/// The workspace this binary was built from.
pub fn workspace() -> Workspace {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    Workspace {
        root: manifest.parent().unwrap_or(manifest).to_path_buf(),
    }
}

/// Where the C programs are: `TESSEL_BENCH_SRC`, or `benches/c`.
pub fn source_dir(ws: &Workspace) -> PathBuf {
    std::env::var_os("TESSEL_BENCH_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.root.join("benches/c"))
}

/// Set up (when `setup`) and find the chosen MPIs, in [`Kind`] order,
/// printing what each is or why it is skipped.
pub fn competitors_ready(
    kinds: &[Kind],
    ws: &Workspace,
    machine: Machine,
    setup: bool,
) -> Vec<Competitor> {
    let mut order = kinds.to_vec();
    order.sort();
    let mpis = competitors::prepare(&order, ws, machine, setup, &mut |l| println!("{l}"));
    for c in &mpis {
        match &c.skipped {
            None => println!("{}: {} (launch: {})", c.name, c.version, c.settings_fit),
            Some(why) => println!("{}: skipped: {why}", c.name),
        }
    }
    mpis
}

/// Entry point of the `compare` binary.
pub fn main() -> ExitCode {
    let plan = Cli::parse().plan();
    match compare(&plan) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("compare: {e}");
            ExitCode::FAILURE
        }
    }
}

fn compare(plan: &Plan) -> Result<ExitCode, String> {
    let ws = workspace();
    let machine = Machine::this();
    let src = source_dir(&ws);
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| ws.root.join("target/bench-report"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let env = Environment::this(machine);

    let mut mpis = competitors_ready(&plan.mpis, &ws, machine, plan.setup);

    let mut failures = Vec::new();
    let (reference, built) = build_everything(&ws, &src, &mut mpis, &mut failures);
    let samples = run_all(
        plan,
        machine,
        &mpis,
        &built,
        reference.as_ref(),
        &mut failures,
    );

    let medians = stats::summarize(&samples);
    let plots = plot::write_all(&out, &medians)?;
    let options = Options {
        np: plan.np.clone(),
        startup_np: plan.startup_np.clone(),
        reps: plan.reps,
        quick: plan.quick,
        timeout_secs: plan.timeout_secs,
    };
    let results = Results {
        environment: &env,
        options: &options,
        mpis: &mpis,
        failures: &failures,
        medians: &medians,
        samples: &samples,
    };
    report::write(&out, &results, &plots)?;
    println!(
        "report: {} ({} samples, {} failed runs or builds)",
        out.join("report.md").display(),
        samples.len(),
        failures.len()
    );
    let tessel_ran = samples.iter().any(|s| s.mpi == Kind::Tessel.name());
    Ok(
        if samples.is_empty() || (plan.mpis.contains(&Kind::Tessel) && !tessel_ran) {
            eprintln!(
                "compare: no results{}",
                if tessel_ran { "" } else { " from Tessel" }
            );
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// Build `reference.c` and every MPI program with every ready competitor
/// into `target/bench-build/`, and record what failed to build.
fn build_everything(
    ws: &Workspace,
    src: &Path,
    mpis: &mut [Competitor],
    failures: &mut Vec<Failure>,
) -> (Option<PathBuf>, BTreeMap<Kind, Built>) {
    println!("building the programs from {}", src.display());
    let reference = build::build_reference(src, &build_dir(ws).join("reference"))
        .inspect_err(|e| {
            println!("cannot build reference: {e}");
            failures.push(Failure::new("reference", "build reference", 0, e));
        })
        .ok();
    let built = build_with_each(ws, src, mpis, &build::PROGRAMS, failures);
    (reference, built)
}

fn build_dir(ws: &Workspace) -> PathBuf {
    ws.root.join("target/bench-build")
}

/// Build `programs` with every ready competitor into
/// `target/bench-build/<mpi>/`, record which MPI library each one's
/// programs load, and record what failed to build.
pub fn build_with_each(
    ws: &Workspace,
    src: &Path,
    mpis: &mut [Competitor],
    programs: &[&'static str],
    failures: &mut Vec<Failure>,
) -> BTreeMap<Kind, Built> {
    let mut built = BTreeMap::new();
    for c in mpis.iter_mut().filter(|c| c.ready()) {
        let binaries = build::build_mpi(c, src, &build_dir(ws).join(c.name), programs);
        for (p, r) in &binaries {
            if let Err(e) = r {
                println!("{}: cannot build {p}: {e}", c.name);
                failures.push(Failure::new(c.name, &format!("build {p}"), 0, e));
            }
        }
        let first = binaries.values().find_map(|r| r.as_ref().ok());
        c.library = first.and_then(|bin| build::loaded_mpi(bin));
        built.insert(c.kind, binaries);
    }
    built
}

/// Every repetition: the reference once, then every job on each MPI in
/// turn (A B C D for each job), so that drifts of the machine spread over
/// all competitors alike.
fn run_all(
    plan: &Plan,
    machine: Machine,
    mpis: &[Competitor],
    built: &BTreeMap<Kind, Built>,
    reference: Option<&PathBuf>,
    failures: &mut Vec<Failure>,
) -> Vec<Sample> {
    let quick: Vec<String> = if plan.quick {
        vec!["--quick".into()]
    } else {
        vec![]
    };
    let mut tasks: Vec<Task> = Vec::new();
    if let Some(bin) = reference {
        let quick = quick.clone();
        tasks.push(Task {
            mpi: "reference",
            label: "reference".into(),
            procs: 1,
            keys: vec![],
            command: Box::new(move || {
                let mut cmd = Command::new(bin);
                cmd.args(&quick);
                cmd
            }),
        });
    }
    let jobs = run::mpi_jobs(&plan.np, &plan.startup_np, plan.quick);
    for job in jobs
        .into_iter()
        .filter(|j| plan.programs.iter().any(|p| p == j.program))
    {
        for c in mpis.iter().filter(|c| c.ready()) {
            let binary = built
                .get(&c.kind)
                .and_then(|b| b.get(job.program))
                .and_then(|r| r.as_ref().ok());
            // A build failure is in the report already.
            let Some(bin) = binary else { continue };
            let job = job.clone();
            tasks.push(Task {
                mpi: c.name,
                label: job.label(),
                procs: job.procs,
                keys: vec![],
                command: Box::new(move || c.command(job.procs, machine, bin, &job.args)),
            });
        }
    }
    let timeout = Duration::from_secs(plan.timeout_secs);
    let (samples, failed) =
        run::run_schedule(&tasks, plan.reps, machine, timeout, &mut |_, _, _| {});
    failures.extend(failed);
    samples
}
