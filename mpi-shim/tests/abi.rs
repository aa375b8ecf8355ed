//! Our two `mpi.h` against the reference headers: the MPICH ABI's against
//! Debian's MPICH, the standard ABI's against MPICH 5's `mpi_abi.h` (the
//! standard fixes all of it, so a difference is a bug on one side). Every
//! constant has the same value, the types have the same sizes and layout,
//! and every prototype we declare agrees with the reference declaration of
//! the same function (the C compiler rejects a conflicting redeclaration).
//!
//! Needs MPICH's development files (`mpicc.mpich`, Debian `libmpich-dev`)
//! and MPICH 5 from PyPI (in `target/bench-venv`, or `$TESSEL_MPICH5`),
//! which `tools/setup.sh` installs.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpi::abi::{CKind, CONSTANTS, HANDLE_CONVERSIONS, POINTERS, header, profiling};
use mpi::mpich::prototypes;
use mpi::std_abi;

/// A directory of its own for test `name` (tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("abi-{name}-{}", std::process::id()));
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
            // Addresses in the library: whether they are null.
            CKind::Function(..) | CKind::Extern(_) => format!("(long long)({} != 0)", k.name),
            CKind::Int | CKind::Handle(_) | CKind::Enum(_) => format!("(long long)({})", k.name),
        };
        writeln!(c, "    printf(\"{} %lld\\n\", {expr});", k.name).unwrap();
    }
    for prefix in ["MPI", "PMPI"] {
        for (kind, ty) in HANDLE_CONVERSIONS {
            writeln!(
                c,
                "    printf(\"{prefix}_{kind}_c2f %lld %lld\\n\", (long long){prefix}_{kind}_c2f(({ty})0x44000001), (long long){prefix}_{kind}_f2c(7));"
            )
            .unwrap();
        }
    }
    for t in [
        "MPI_Status",
        "MPI_Comm",
        "MPI_Datatype",
        "MPI_Request",
        "MPI_Aint",
        "MPI_Count",
        "MPI_Offset",
        "MPI_Fint",
        "MPI_Win",
        "MPI_File",
        "MPI_Message",
        "MPI_Session",
        "MPI_F08_status",
        "MPI_T_enum",
        "MPI_T_pvar_session",
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
    let dir = scratch("constants");
    std::fs::write(dir.join("mpi.h"), header()).unwrap();
    std::fs::write(dir.join("print.c"), printer()).unwrap();
    let ours = dir.join("print-tessel");
    let theirs = dir.join("print-mpich");
    // Linked with the library: the header names its data and callbacks.
    let lib = built_library();
    let libdir = lib.parent().unwrap();
    run(Command::new("cc")
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("print.c"))
        .arg("-o")
        .arg(&ours)
        .arg(format!("-L{}", libdir.display()))
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-lmpi"));
    // MPICH's wrapper finds MPICH's own header and library; the program
    // makes no MPI calls.
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
    let dir = scratch("protos");
    let mut c = String::from("#include <mpi.h>\n");
    for p in prototypes() {
        writeln!(c, "{p};\n{};", profiling(p)).unwrap();
    }
    std::fs::write(dir.join("protos.c"), c).unwrap();
    run(Command::new("mpicc.mpich")
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

/// `file` of the installation that `$var` names, by default `default`
/// (relative to the workspace); it must exist, or `missing` says why.
fn installed(var: &str, default: &str, file: &str, missing: &str) -> PathBuf {
    let prefix = std::env::var_os(var).map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(default)
        },
        PathBuf::from,
    );
    let path = prefix.join(file);
    assert!(path.exists(), "{} is missing: {missing}", path.display());
    path
}

/// The installed library (`tools/install.sh`: `target/tessel`, or
/// `$TESSEL_PREFIX`), which is what applications load.
fn built_library() -> PathBuf {
    installed(
        "TESSEL_PREFIX",
        "target/tessel",
        "lib/libmpi.so.12",
        "run tools/install.sh first",
    )
}

/// The installed standard-ABI library.
fn built_standard_library() -> PathBuf {
    installed(
        "TESSEL_PREFIX",
        "target/tessel",
        "lib/libmpi_abi.so.1",
        "run tools/install.sh first",
    )
}

/// The `MPI_` symbols the installed library defines: (functions, data).
fn exports() -> (BTreeSet<String>, BTreeSet<String>) {
    exports_named(&["MPI_", "MPIX_"])
}

/// The symbols the installed library defines whose names start with one
/// of `prefixes`: (functions, data).
fn exports_named(prefixes: &[&str]) -> (BTreeSet<String>, BTreeSet<String>) {
    symbols_of(&built_library(), prefixes)
}

/// The symbols `lib` defines whose names start with one of `prefixes`:
/// (functions, data).
fn symbols_of(lib: &Path, prefixes: &[&str]) -> (BTreeSet<String>, BTreeSet<String>) {
    let syms = run(Command::new("nm").args(["-D", "--defined-only"]).arg(lib));
    let (mut functions, mut data) = (BTreeSet::new(), BTreeSet::new());
    for line in syms.lines() {
        let mut f = line.split_whitespace().skip(1);
        let (Some(kind), Some(name)) = (f.next(), f.next()) else {
            continue;
        };
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let set = if kind == "T" {
            &mut functions
        } else {
            &mut data
        };
        set.insert(name.to_owned());
    }
    (functions, data)
}

/// The function names of the declared prototypes.
fn declared() -> BTreeSet<String> {
    prototypes()
        .map(|p| {
            let name = p.split('(').next().unwrap();
            name.rsplit([' ', '*']).next().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn exports_are_exactly_the_declared_functions_and_data() {
    let (functions, data) = exports();
    assert_eq!(functions, declared());
    let externs: BTreeSet<String> = POINTERS
        .iter()
        .filter(|c| matches!(c.kind, CKind::Extern(_)))
        .map(|c| c.name.to_owned())
        .collect();
    assert_eq!(data, externs);
}

/// The profiling interface: `PMPI_X` for every exported `MPI_X`, and
/// nothing else.
#[test]
fn every_function_has_its_profiling_twin() {
    let (functions, _) = exports();
    let (profiling, data) = exports_named(&["PMPI_", "PMPIX_"]);
    let twins: BTreeSet<String> = functions.iter().map(|f| format!("P{f}")).collect();
    assert_eq!(profiling, twins);
    assert!(data.is_empty(), "{data:?}");
}

/// `mpi31_functions.txt` (every MPI-3.1 function MPICH exports) against
/// the library's exports: binary clients such as mpi4py's MPICH-ABI module
/// resolve all of them when they load.
#[test]
fn every_mpi31_function_is_exported() {
    let list = include_str!("mpi31_functions.txt");
    let expected: BTreeSet<&str> = list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(expected.len() > 380, "the list is incomplete");
    let (functions, _) = exports();
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|f| !functions.contains(*f))
        .collect();
    assert!(missing.is_empty(), "MPI-3.1 functions missing: {missing:?}");
}

// ---------------------------------------------------------------------
// The standard ABI against MPICH 5's `mpi_abi.h`.

/// Constants whose values are the implementation's, not the standard's:
/// the version of the standard the library implements.
const OURS_BY_DESIGN: &[&str] = &["MPI_VERSION", "MPI_SUBVERSION"];

/// MPICH 5's `mpicc_abi`.
fn mpich_mpicc_abi() -> PathBuf {
    installed(
        "TESSEL_MPICH5",
        "target/bench-venv",
        "bin/mpicc_abi",
        "tools/setup.sh installs MPICH 5 from PyPI",
    )
}

/// A C program printing every constant of the standard and the sizes of
/// its types.
fn standard_printer() -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdint.h>\n#include <mpi.h>\nint main(void) {\n",
    );
    for k in std_abi::constants::CONSTANTS {
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
    let dir = scratch("std-constants");
    std::fs::write(dir.join("mpi.h"), std_abi::header()).unwrap();
    std::fs::write(dir.join("print.c"), standard_printer()).unwrap();
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

/// The standard-ABI library defines the functions its header declares and
/// their profiling twins, and needs no `MPI_` symbol from elsewhere.
#[test]
fn standard_exports_are_exactly_the_declared_functions() {
    let lib = built_standard_library();
    let (functions, _) = symbols_of(&lib, &["MPI_", "MPIX_"]);
    let declared: BTreeSet<String> = std_abi::prototypes()
        .map(|p| {
            let name = p.split('(').next().unwrap();
            name.rsplit([' ', '*']).next().unwrap().to_owned()
        })
        .collect();
    assert_eq!(functions, declared);
    let (profiling, _) = symbols_of(&lib, &["PMPI_", "PMPIX_"]);
    let twins: BTreeSet<String> = functions.iter().map(|f| format!("P{f}")).collect();
    assert_eq!(profiling, twins);
    let undefined = run(Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(&lib));
    let missing: Vec<&str> = undefined
        .split_whitespace()
        .filter(|s| s.starts_with("MPI") || s.starts_with("PMPI"))
        .collect();
    assert!(missing.is_empty(), "undefined: {missing:?}");
}

#[test]
fn prototypes_agree_with_mpich5() {
    let dir = scratch("std-protos");
    let mut c = String::from("#include <mpi.h>\n");
    for p in std_abi::prototypes() {
        writeln!(c, "{p};\n{};", profiling(p)).unwrap();
    }
    std::fs::write(dir.join("protos.c"), c).unwrap();
    run(Command::new(mpich_mpicc_abi())
        .args(["-c", "-Werror", "-o"])
        .arg(dir.join("protos.o"))
        .arg(dir.join("protos.c")));
}

#[test]
fn our_standard_header_compiles_cleanly() {
    let dir = scratch("std-clean");
    std::fs::write(dir.join("mpi.h"), std_abi::header()).unwrap();
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
