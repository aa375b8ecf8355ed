//! Our `mpi.h` against MPICH's: every constant has the same value, the
//! types have the same sizes and layout, and every prototype we declare
//! agrees with MPICH's declaration of the same function (the C compiler
//! rejects a conflicting redeclaration).
//!
//! Needs MPICH's development files (`mpicc.mpich`, Debian `libmpich-dev`),
//! which `tools/setup.sh` installs.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpi::abi::{CKind, CONSTANTS, POINTERS, header};
use mpi::mpich::prototypes;

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {cmd:?}: {e} (tools/setup.sh installs MPICH and a C compiler)")
    });
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A C program printing every constant and the layout of the ABI types.
fn printer() -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <mpi.h>\nint main(void) {\n",
    );
    for k in CONSTANTS.iter().chain(POINTERS) {
        let expr = match k.kind {
            CKind::Pointer(_) => format!("(long long)(intptr_t)({})", k.name),
            _ => format!("(long long)({})", k.name),
        };
        writeln!(c, "    printf(\"{} %lld\\n\", {expr});", k.name).unwrap();
    }
    for t in [
        "MPI_Status",
        "MPI_Comm",
        "MPI_Datatype",
        "MPI_Request",
        "MPI_Aint",
        "MPI_Count",
        "MPI_Offset",
    ] {
        writeln!(c, "    printf(\"sizeof({t}) %zu\\n\", sizeof({t}));").unwrap();
    }
    for f in [
        "count_lo",
        "count_hi_and_cancelled",
        "MPI_SOURCE",
        "MPI_TAG",
        "MPI_ERROR",
    ] {
        writeln!(
            c,
            "    printf(\"offsetof({f}) %zu\\n\", offsetof(MPI_Status, {f}));"
        )
        .unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

#[test]
fn constants_and_layouts_match_mpich() {
    let dir = scratch();
    std::fs::write(dir.join("mpi.h"), header()).unwrap();
    std::fs::write(dir.join("print.c"), printer()).unwrap();
    let ours = dir.join("print-tessel");
    let theirs = dir.join("print-mpich");
    run(Command::new("cc")
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("print.c"))
        .arg("-o")
        .arg(&ours));
    // MPICH's wrapper finds MPICH's own header; the program makes no MPI
    // calls, so which library it links does not matter.
    run(Command::new("mpicc.mpich")
        .arg(dir.join("print.c"))
        .arg("-o")
        .arg(&theirs));
    let (a, b) = (
        run(&mut Command::new(&ours)),
        run(&mut Command::new(&theirs)),
    );
    for (x, y) in a.lines().zip(b.lines()) {
        assert_eq!(x, y, "ours vs MPICH's");
    }
    assert_eq!(a.lines().count(), b.lines().count());
}

#[test]
fn prototypes_agree_with_mpich() {
    let dir = scratch();
    let mut c = String::from("#include <mpi.h>\n");
    for p in prototypes() {
        writeln!(c, "{p};").unwrap();
    }
    std::fs::write(dir.join("protos.c"), c).unwrap();
    run(Command::new("mpicc.mpich")
        .args(["-c", "-Werror", "-o"])
        .arg(dir.join("protos.o"))
        .arg(dir.join("protos.c")));
}

#[test]
fn our_header_compiles_cleanly() {
    let dir = scratch();
    std::fs::write(dir.join("mpi.h"), header()).unwrap();
    std::fs::write(
        dir.join("use.c"),
        "#include <mpi.h>\nint main(void) { return MPI_SUCCESS; }\n",
    )
    .unwrap();
    run(Command::new("cc")
        .args(["-Wall", "-Werror", "-std=c99", "-fsyntax-only", "-I"])
        .arg(&dir)
        .arg(dir.join("use.c")));
}

/// The installed library (`tools/install.sh`: `target/tessel`, or
/// `$TESSEL_PREFIX`), which is what applications load.
fn built_library() -> PathBuf {
    let prefix = std::env::var_os("TESSEL_PREFIX").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tessel"),
        PathBuf::from,
    );
    let lib = prefix.join("lib/libmpi.so.12");
    assert!(
        lib.exists(),
        "{} is missing: run tools/install.sh first",
        lib.display()
    );
    lib
}

#[test]
fn exports_are_exactly_the_declared_functions() {
    let syms = run(Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(built_library()));
    let mut exported: Vec<&str> = syms
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("MPI_"))
        .collect();
    let mut declared: Vec<&str> = prototypes()
        .map(|p| {
            let name = p.split('(').next().unwrap();
            name.rsplit(' ').next().unwrap()
        })
        .collect();
    exported.sort_unstable();
    declared.sort_unstable();
    assert_eq!(exported, declared);
}
