//! Real third-party MPI programs on Tessel's library, unchanged: Debian's
//! NetPIPE binary (`NPmpich2`, linked against MPICH's `libmpich.so.12`)
//! and the mpi4py wheel from PyPI (its MPICH-ABI extension module), both
//! launched by the installed `mpiexec` with the library found through
//! `LD_LIBRARY_PATH`.
//!
//! `tools/setup.sh` installs NetPIPE (`netpipe-mpich2`) and mpi4py (into
//! the virtual environment `target/venv`); `tools/install.sh` makes the
//! installation (`target/tessel`, or `$TESSEL_PREFIX`).

mod common;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Run, assert_code, launch, on_path, tessel_prefix};

const WATCHDOG: Duration = Duration::from_secs(120);

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The installed `mpiexec` running `program` on `n` processes, with
/// Tessel's library first on the loader's path.
fn tessel_mpiexec(n: u32, program: &Path) -> Command {
    let prefix = tessel_prefix();
    let mut cmd = Command::new(prefix.join("bin/mpiexec"));
    cmd.args(["-n", &n.to_string()])
        .arg(program)
        .env("LD_LIBRARY_PATH", prefix.join("lib"));
    cmd
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Symbols the library defines.
fn library_exports() -> BTreeSet<String> {
    let lib = tessel_prefix().join("lib/libmpi.so.12");
    stdout_of(Command::new("nm").args(["-D", "--defined-only"]).arg(lib))
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect()
}

/// The `MPI_` symbols `object` needs (undefined and not weak), which the
/// library does not define: what the dynamic loader will miss.
fn unresolved(object: &Path) -> Vec<String> {
    let exports = library_exports();
    stdout_of(
        Command::new("nm")
            .args(["-D", "--undefined-only"])
            .arg(object),
    )
    .lines()
    .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
        ["U", name] if name.starts_with("MPI_") => Some(name.to_owned()),
        _ => None,
    })
    .filter(|name| !exports.contains(name))
    .collect()
}

fn assert_ranks_ok(run: &Run, name: &str, n: u32) {
    assert_code(run, 0);
    for r in 0..n {
        let line = format!("{name}: rank {r} ok");
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn netpipe_from_debian_runs_on_our_library() {
    let netpipe = on_path("NPmpich2")
        .expect("NPmpich2 is not on the PATH: run tools/setup.sh (Debian package netpipe-mpich2)");
    let dir = scratch("netpipe");
    let table = dir.join("np.out");
    let mut cmd = tessel_mpiexec(2, &netpipe);
    // Sizes 1 B to 64 KiB without perturbations, 20 round trips each:
    // every protocol of the engine, in well under a second.
    cmd.args(["-u", "65536", "-n", "20", "-p", "0", "-o"])
        .arg(&table)
        .current_dir(&dir)
        // The loader reports every library it initialises.
        .env("LD_DEBUG", "libs");
    let run = launch("netpipe", cmd).wait_for(WATCHDOG);
    assert_code(&run, 0);
    let ours = format!(
        "calling init: {}",
        tessel_prefix().join("lib/libmpich.so.12").display()
    );
    let inits: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("calling init:") && l.contains("libmpich"))
        .collect();
    assert!(
        inits.len() == 2 && inits.iter().all(|l| l.contains(&ours)),
        "both ranks must load Tessel's library ({ours}); they loaded:\n{}",
        inits.join("\n")
    );
    // NetPIPE reports each size on stderr as it goes.
    assert!(
        run.stderr.contains("Now starting the main loop")
            && run
                .stderr
                .lines()
                .any(|l| l.contains("65536 bytes") && l.contains("Mbps")),
        "no NetPIPE progress:\n{}",
        run.stderr
    );
    // The saved table: one row (size, Mbps, seconds) per size, 1 B to 64 KiB.
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&table)
        .expect("NetPIPE writes its table")
        .lines()
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 32, "{rows:?}");
    assert!(
        rows.iter()
            .all(|r| r.len() == 3 && r[1] > 0.0 && r[2] > 0.0)
    );
    assert_eq!(rows.last().unwrap()[0], 65536.0);
    // The loader binds functions when first called: the run above needs
    // only those it calls, but every function the binary names (`-S` uses
    // MPI_Ssend) must be there.
    let missing = unresolved(&netpipe);
    assert!(
        missing.is_empty(),
        "NetPIPE ran, but it names functions the library does not export: {missing:?}"
    );
}

/// The virtual environment with mpi4py that `tools/setup.sh` creates.
fn venv_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run tools/setup.sh (it installs mpi4py into target/venv)",
        python.display()
    );
    python
}

/// mpi4py's extension module built for the MPICH ABI.
fn mpi4py_mpich_extension(python: &Path) -> PathBuf {
    let dir = stdout_of(Command::new(python).args([
        "-c",
        "import importlib.util; print(importlib.util.find_spec('mpi4py').submodule_search_locations[0])",
    ]));
    let dir = PathBuf::from(dir.trim());
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("MPI.mpich.") && n.ends_with(".so"))
        })
        .unwrap_or_else(|| panic!("no MPICH-ABI extension module in {}", dir.display()))
}

#[test]
fn mpi4py_from_pypi_runs_on_our_library() {
    let python = venv_python();
    // Python loads extension modules with RTLD_NOW: every function the
    // module calls must resolve at import.
    let missing = unresolved(&mpi4py_mpich_extension(&python));
    assert!(
        missing.is_empty(),
        "mpi4py's MPICH-ABI module needs {} functions the library does not export:\n{}",
        missing.len(),
        missing.join("\n")
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mpi4py_check.py");
    let lib = tessel_prefix().join("lib/libmpi.so.12");
    let n = 3;
    // mpi4py's two documented ways to its MPICH-ABI module: naming the
    // ABI (the module's libmpi.so.12 then comes from the loader's path),
    // or naming the library, from which mpi4py detects the ABI and which
    // then stands for the module's libmpi.so.12 by its soname.
    let by_abi = ("mpi4py-mpiabi", "MPI4PY_MPIABI", OsString::from("mpich"));
    let by_library = ("mpi4py-libmpi", "MPI4PY_LIBMPI", lib.into_os_string());
    for (label, var, value) in [by_abi, by_library] {
        let mut cmd = tessel_mpiexec(n, &python);
        cmd.arg(&script).env(var, value);
        if var == "MPI4PY_LIBMPI" {
            cmd.env_remove("LD_LIBRARY_PATH");
        }
        let run = launch(label, cmd).wait_for(WATCHDOG);
        assert_ranks_ok(&run, "mpi4py", n);
        assert!(
            run.stdout.contains("library: Tessel MPI"),
            "{label}: not run on Tessel's library:\n{}",
            run.stdout
        );
    }
}
