//! Building the benchmark programs with each competitor's compiler wrapper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::competitors::{Competitor, run_ok};

/// The MPI programs of `benches/c`, built with every competitor.
pub const PROGRAMS: [&str; 5] = ["pingpong", "rma", "stencil", "colls", "startup"];

/// The programs' binaries of one competitor, or why each failed to build.
pub type Built = BTreeMap<&'static str, Result<PathBuf, String>>;

/// Build `programs` (of [`PROGRAMS`] for `compare`) from `src` with `c`'s
/// wrapper into `out` (`target/bench-build/<mpi>/`).
pub fn build_mpi(c: &Competitor, src: &Path, out: &Path, programs: &[&'static str]) -> Built {
    programs
        .iter()
        .map(|&p| {
            let result = std::fs::create_dir_all(out)
                .map_err(|e| format!("{}: {e}", out.display()))
                .and_then(|()| {
                    let mut cmd = Command::new(&c.cc[0]);
                    cmd.args(&c.cc[1..]);
                    compile(cmd, src, p, out, &c.cc_after)
                });
            (p, result)
        })
        .collect()
}

/// Build `reference.c` (no MPI) with `cc -O2 -pthread` into `out`.
pub fn build_reference(src: &Path, out: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new("cc");
    cmd.arg("-pthread");
    compile(cmd, src, "reference", out, &[])
}

/// `<compiler> -O2 -o out/<name> src/<name>.c <after> -lm`.
fn compile(
    mut cmd: Command,
    src: &Path,
    name: &str,
    out: &Path,
    after: &[String],
) -> Result<PathBuf, String> {
    let source = src.join(format!("{name}.c"));
    if !source.is_file() {
        return Err(format!("no source {}", source.display()));
    }
    let binary = out.join(name);
    cmd.arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .args(after)
        .arg("-lm");
    run_ok(&mut cmd).map(|()| binary)
}

/// The MPI library `binary` loads, from `ldd` (without the environment's
/// `LD_LIBRARY_PATH`, as the runs have it).
pub fn loaded_mpi(binary: &Path) -> Option<String> {
    let out = Command::new("ldd")
        .arg(binary)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("libmpi"))
        .and_then(|l| l.split("=>").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map(String::from)
}
