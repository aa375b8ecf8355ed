//! Our standard-ABI `mpi.h` against MPICH 5's (`mpi_abi.h`, which MPICH's
//! `mpicc_abi` compiles with): every constant has the same value, the
//! types have the same sizes, and every prototype we declare agrees with
//! MPICH's declaration of the same function (the C compiler rejects a
//! conflicting redeclaration). The standard fixes all of it, so any
//! difference is a bug on one side.
//!
//! Needs MPICH 5 from PyPI, which `tools/setup.sh` installs into
//! `target/bench-venv` (`$TESSEL_MPICH5` names another installation).

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpi::abi::{CKind, profiling};
use mpi::std_abi::{constants::CONSTANTS, header, prototypes};

/// Constants whose values are the implementation's, not the standard's:
/// the version of the standard the library implements.
const OURS_BY_DESIGN: &[&str] = &["MPI_VERSION", "MPI_SUBVERSION"];

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("std-abi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (tools/setup.sh installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// MPICH 5's `mpicc_abi`.
fn mpich_mpicc_abi() -> PathBuf {
    let prefix = std::env::var_os("TESSEL_MPICH5").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-venv"),
        PathBuf::from,
    );
    let cc = prefix.join("bin/mpicc_abi");
    assert!(
        cc.exists(),
        "{} is missing: tools/setup.sh installs MPICH 5 from PyPI",
        cc.display()
    );
    cc
}

/// A C program printing every constant of the standard and the sizes of
/// its types.
fn printer() -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdint.h>\n#include <mpi.h>\nint main(void) {\n",
    );
    for k in CONSTANTS {
        if OURS_BY_DESIGN.contains(&k.name) {
            continue;
        }
        let expr = match k.kind {
            CKind::Pointer(_) | CKind::Handle(_) => format!("(long long)(intptr_t)({})", k.name),
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
        "MPI_Win",
        "MPI_File",
        "MPI_Message",
        "MPI_Session",
        "MPI_T_enum",
    ] {
        writeln!(c, "    printf(\"sizeof({t}) %zu\\n\", sizeof({t}));").unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

#[test]
fn constants_and_types_match_mpich5() {
    let dir = scratch("constants");
    std::fs::write(dir.join("mpi.h"), header()).unwrap();
    std::fs::write(dir.join("print.c"), printer()).unwrap();
    let (ours, theirs) = (dir.join("print-tessel"), dir.join("print-mpich"));
    run(Command::new("cc")
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("print.c"))
        .arg("-o")
        .arg(&ours));
    // `-c` then a plain link: the program makes no MPI call, so it needs
    // neither library.
    run(Command::new(mpich_mpicc_abi())
        .arg("-c")
        .arg(dir.join("print.c"))
        .arg("-o")
        .arg(dir.join("print-mpich.o")));
    run(Command::new("cc")
        .arg(dir.join("print-mpich.o"))
        .arg("-o")
        .arg(&theirs));
    let (a, b) = (
        run(&mut Command::new(&ours)),
        run(&mut Command::new(&theirs)),
    );
    let differ: Vec<String> = a
        .lines()
        .zip(b.lines())
        .filter(|(x, y)| x != y)
        .map(|(x, y)| format!("ours {x:?}, MPICH's {y:?}"))
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert_eq!(a.lines().count(), b.lines().count());
    assert!(a.lines().count() > 300, "too few constants compared");
}

#[test]
fn prototypes_agree_with_mpich5() {
    let dir = scratch("protos");
    let mut c = String::from("#include <mpi.h>\n");
    for p in prototypes() {
        writeln!(c, "{p};\n{};", profiling(p)).unwrap();
    }
    std::fs::write(dir.join("protos.c"), c).unwrap();
    run(Command::new(mpich_mpicc_abi())
        .args(["-c", "-Werror", "-o"])
        .arg(dir.join("protos.o"))
        .arg(dir.join("protos.c")));
}

#[test]
fn our_header_compiles_cleanly() {
    let dir = scratch("clean");
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
