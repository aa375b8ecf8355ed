//! Tessel's MPI library from C: the test programs of `mpi-shim/tests/c`
//! built with our `mpicc` and with MPICH's `mpicc.mpich` (binary
//! compatibility: the MPICH build runs on our library through
//! `LD_LIBRARY_PATH`), run by our `mpiexec` and by MPICH's Hydra.
//!
//! They use the installation `tools/install.sh` makes (`target/tessel`, or
//! `$TESSEL_PREFIX`); `tools/test.sh` runs it before the tests.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Run, assert_code, hydra, launch, mpiexec, tessel_prefix};

const WATCHDOG: Duration = Duration::from_secs(120);
/// The C test programs (`mpi-shim/tests/c/NAME.c`), one area each.
const PROGRAMS: &[&str] = &[
    "p2p",
    "coll",
    "errors",
    "sessions",
    "sessions_mixed",
    "unsupported",
    "p2pmore",
    "datatypes",
    "comms",
    "topo",
    "colls",
    "neighbor",
    "mem",
    "hwtopo",
    "recvbuf",
    "mpi4",
    "mpi41",
    "intercomm",
    "rma",
    "threads",
    "anytime",
    "dynamic",
    "psetops",
    "boards",
    "reductions",
];

/// Programs that use Tessel's `MPIX_` extensions: MPICH's libraries lack
/// them, so neither `mpicc.mpich` nor MPICH 5's `mpicc_abi` can link these.
const EXTENSIONS: &[&str] = &["recvbuf", "psetops"];

/// Programs that call functions MPI-4.1 added, which the `mpi.h` of
/// Debian's MPICH (4.0.2) does not declare: `mpicc.mpich` cannot build
/// these. MPICH 5's `mpi_abi.h` has MPI-4.1, so its `mpicc_abi` builds them.
const MPI_4_1: &[&str] = &["mpi41"];

fn prefix() -> PathBuf {
    tessel_prefix()
}

/// Compile test program `name` with `compiler`; returns the executable.
fn build(compiler: &Path, name: &str, flavour: &str) -> PathBuf {
    common::build_c(compiler, name, flavour)
}

fn ours() -> PathBuf {
    prefix().join("bin/mpicc")
}

fn mpich_cc() -> PathBuf {
    PathBuf::from("mpicc.mpich")
}

/// Every rank printed `NAME: rank R ok`, and rank 0 ran on Tessel's library.
fn assert_ok(run: &Run, name: &str, n: u32) {
    assert_code(run, 0);
    for r in 0..n {
        let line = format!("{name}: rank {r} ok");
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?}\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert!(
        run.stdout.contains("library: Tessel MPI"),
        "not run on Tessel's library:\n{}",
        run.stdout
    );
}

fn run_ours(label: &str, exe: &Path, n: u32, with_lib_path: bool) -> Run {
    let np = n.to_string();
    let mut cmd = mpiexec(&["-n", &np]);
    cmd.arg(exe);
    if with_lib_path {
        cmd.env("LD_LIBRARY_PATH", prefix().join("lib"));
    }
    launch(label, cmd).wait_for(WATCHDOG)
}

/// The programs whose collectives run on flag boards within a node.
const COLLECTIVES: &[&str] = &["coll", "colls", "boards", "reductions"];

/// Each rank's posts on flag boards, from the `board-posts=N` lines that
/// `TESSEL_STATS=1` prints at finalize, in rank order (one per rank).
fn board_posts(run: &Run, n: u32) -> Vec<u64> {
    per_rank(run, n, "board-posts")
}

/// Each rank's figure `key` from the `tessel-stats: rank R KEY=N` lines
/// that `TESSEL_STATS=1` prints at finalize, in rank order (one per rank).
fn per_rank(run: &Run, n: u32, key: &str) -> Vec<u64> {
    let mut figures = vec![None; n as usize];
    let sep = format!(" {key}=");
    for line in run.stderr.lines() {
        let Some(at) = line.find("tessel-stats: rank ") else {
            continue;
        };
        let rest = &line[at + "tessel-stats: rank ".len()..];
        let Some((rank, count)) = rest.split_once(&sep) else {
            continue;
        };
        let (rank, count): (usize, u64) = (rank.parse().unwrap(), count.trim().parse().unwrap());
        assert!(figures[rank].replace(count).is_none(), "rank {rank} twice");
    }
    figures
        .into_iter()
        .enumerate()
        .map(|(r, p)| p.unwrap_or_else(|| panic!("no {key} line of rank {r}\n{}", run.stderr)))
        .collect()
}

/// Every program at 1, 2, 3, 4 and 8 processes; the collective programs
/// at every count from 1 to 8, each rank showing (`TESSEL_STATS=1`) that
/// it posted on its communicators' flag boards: a fall-back to messages
/// (the board's setup failing at some rank) would pass the programs'
/// checks unseen.
#[test]
fn programs_built_with_our_mpicc() {
    for &name in PROGRAMS {
        let exe = build(&ours(), name, "tessel");
        let collective = COLLECTIVES.contains(&name);
        let counts: &[u32] = if collective {
            &[1, 2, 3, 4, 5, 6, 7, 8]
        } else {
            &[1, 2, 3, 4, 8]
        };
        for &n in counts {
            let np = n.to_string();
            let mut cmd = mpiexec(&["-n", &np]);
            cmd.arg(&exe).env("TESSEL_STATS", "1");
            let run = launch(&format!("{name}-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
            if collective && n > 1 {
                let posts = board_posts(&run, n);
                assert!(
                    posts.iter().all(|&p| p > 0),
                    "{name} at {n}: board posts {posts:?}"
                );
            }
        }
    }
}

/// The programs built with `mpicc_abi` for the MPI-5 standard ABI
/// (`libmpi_abi.so.1`): every one (those that use what the standard ABI
/// dropped, `MPI_Errhandler_get` and the `MPI_Fint` conversions, test
/// `MPI_ABI_VERSION`).
/// The collective programs with `TESSEL_COLL=p2p`: within one node they
/// otherwise run on flag boards, so this keeps the message algorithms
/// tested on one node too.
#[test]
fn collectives_on_messages_within_a_node() {
    for name in ["coll", "colls", "boards", "reductions", "comms", "mpi4"] {
        let exe = build(&ours(), name, "tessel");
        for n in [2, 3, 8] {
            let np = n.to_string();
            let mut cmd = mpiexec(&["-n", &np]);
            cmd.arg(&exe)
                .env("TESSEL_COLL", "p2p")
                .env("TESSEL_STATS", "1");
            let run = launch(&format!("{name}-p2p-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
            assert_eq!(board_posts(&run, n), vec![0; n as usize], "{name} at {n}");
        }
    }
}

#[test]
fn programs_built_with_mpicc_abi() {
    let cc = prefix().join("bin/mpicc_abi");
    for &name in PROGRAMS {
        let exe = build(&cc, name, "abi");
        for n in [1, 2, 3, 4, 8] {
            let run = run_ours(&format!("{name}-abi-{n}"), &exe, n, false);
            assert_ok(&run, name, n);
        }
    }
}

#[test]
fn programs_built_against_mpich_run_on_our_library() {
    let mpich4_builds = |p: &&&str| !EXTENSIONS.contains(p) && !MPI_4_1.contains(p);
    for &name in PROGRAMS.iter().filter(mpich4_builds) {
        let exe = build(&mpich_cc(), name, "mpich");
        for n in [1, 3, 8] {
            let run = run_ours(&format!("{name}-mpich-{n}"), &exe, n, true);
            assert_ok(&run, name, n);
        }
    }
}

/// MPICH 5's `mpicc_abi` (PyPI's `mpich`, which `tools/setup.sh` installs
/// into `target/bench-venv`; `$TESSEL_MPICH5` names another installation).
fn mpich5_cc_abi() -> PathBuf {
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

/// Binaries of the standard ABI built by another implementation, MPICH 5,
/// with its own `mpi.h`: they run on our `libmpi_abi.so.1` unchanged
/// (found first through `LD_LIBRARY_PATH`, before the `RUNPATH` to
/// MPICH's library that its wrapper records).
#[test]
fn programs_built_with_mpich5_mpicc_abi_run_on_our_library() {
    let cc = mpich5_cc_abi();
    for &name in PROGRAMS.iter().filter(|p| !EXTENSIONS.contains(p)) {
        let exe = build(&cc, name, "mpich5-abi");
        for n in [1, 3, 8] {
            let run = run_ours(&format!("{name}-mpich5-abi-{n}"), &exe, n, true);
            assert_ok(&run, name, n);
            assert!(
                run.stdout.contains("MPI-5 standard ABI"),
                "not run on Tessel's libmpi_abi:\n{}",
                run.stdout
            );
        }
    }
}

/// Every program on two virtual nodes of two processes (`--ppn 2 -n 4`)
/// and on uneven nodes (`--ppn 2 -n 3`): ranks of a node talk through
/// shared memory, the others through the network plugin the library
/// finds next to itself (`lib/tessel`). Given the processes per node,
/// `comms` and `topo` also check that `MPI_COMM_TYPE_SHARED` gives the
/// node.
#[test]
fn programs_on_virtual_nodes() {
    for &name in PROGRAMS {
        let exe = build(&ours(), name, "ppn");
        for n in [4, 3] {
            let np = n.to_string();
            let mut cmd = mpiexec(&["--ppn", "2", "-n", &np]);
            cmd.arg(&exe);
            if matches!(name, "comms" | "topo") {
                cmd.arg("2");
            }
            let run = launch(&format!("{name}-ppn-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
        }
    }
}

/// The collective programs on virtual nodes wider than two processes:
/// nodes of 3, 3 and 2 (`--ppn 3 -n 8`), and of 4 and 1 (`--ppn 4 -n 5`).
/// The ranks of a node run the phases of node-aware collectives that stay
/// within the node on their node's flag board, blocking and nonblocking
/// ones outstanding together; a node of one process has none.
#[test]
fn collectives_on_node_boards() {
    for &name in COLLECTIVES {
        let exe = build(&ours(), name, "nodes");
        for (ppn, n) in [(3, 8), (4, 5)] {
            let (ppn, np) = (ppn.to_string(), n.to_string());
            let mut cmd = mpiexec(&["--ppn", &ppn, "-n", &np]);
            cmd.arg(&exe).env("TESSEL_STATS", "1");
            let run = launch(&format!("{name}-nodes-{ppn}-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
            // Every rank whose node has another posts on a board; the
            // node of one process (`--ppn 4 -n 5`: rank 4) has none.
            let posts = board_posts(&run, n);
            for (r, &p) in posts.iter().enumerate() {
                let alone = ppn == "4" && r == 4;
                assert_eq!(p == 0, alone, "{name} on nodes: board posts {posts:?}");
            }
        }
    }
}

/// Ranks told (`TESSEL_PLACE`, as a launcher that bound them says) that
/// they run in two packages: in runs of consecutive ranks (3 a package),
/// and alternating. Their boards group them by package, with a leader
/// each; barriers and small reductions take the tiered steps at every
/// rank (`board-tiered` > 0), with the programs' results unchanged, and a
/// non-commutative operation on the alternating groups takes the flat
/// ones. Without the variable no rank takes them: this machine has one
/// package, one NUMA node and one L3.
#[test]
fn collectives_on_tiered_boards() {
    let layouts = [
        ("runs", "$((PMI_RANK / 3 * 8))"),
        ("alternating", "$((PMI_RANK % 2 * 8))"),
    ];
    for &name in COLLECTIVES {
        let exe = build(&ours(), name, "tessel");
        for (layout, package) in layouts {
            let script = format!(r#"export TESSEL_PLACE="-,-,-,-,{package}"; exec "$0""#);
            for n in [4, 7] {
                let np = n.to_string();
                let mut cmd = mpiexec(&["-n", &np]);
                cmd.args(["sh", "-c", &script])
                    .arg(&exe)
                    .env("TESSEL_STATS", "1");
                let run = launch(&format!("{name}-{layout}-{n}"), cmd).wait_for(WATCHDOG);
                assert_ok(&run, name, n);
                let tiered = per_rank(&run, n, "board-tiered");
                assert!(
                    tiered.iter().all(|&k| k > 0),
                    "{name} {layout} at {n}: {tiered:?}"
                );
            }
        }
        let mut cmd = mpiexec(&["-n", "4"]);
        cmd.arg(&exe).env("TESSEL_STATS", "1");
        let run = launch(&format!("{name}-untiered"), cmd).wait_for(WATCHDOG);
        assert_ok(&run, name, 4);
        assert_eq!(
            per_rank(&run, 4, "board-tiered"),
            vec![0; 4],
            "{name} untiered"
        );
    }
}

/// Rank 0 alone sets `TESSEL_COLL=p2p`: every member still decides alike
/// whether a communicator's collectives run on a flag board (each
/// process publishes whether it takes part when it attaches). Before,
/// each decided from its own environment, and the job hung.
#[test]
fn collectives_where_one_rank_turns_flag_boards_off() {
    let script = r#"if [ "$PMI_RANK" = 0 ]; then export TESSEL_COLL=p2p; fi; exec "$0""#;
    for name in ["coll", "colls", "boards"] {
        let exe = build(&ours(), name, "tessel");
        for n in [2, 3] {
            let np = n.to_string();
            let mut cmd = mpiexec(&["-n", &np]);
            cmd.args(["sh", "-c", script]).arg(&exe);
            let run = launch(&format!("{name}-mixed-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
        }
    }
}

/// A flag board whose setup fails at one member (`boardfail.c`: rank 1
/// has no file descriptor left when the first collective sets the board
/// up; with `noarea` it cannot even make the heap for its own area). Every
/// member runs that communicator's collectives on messages, with the right
/// results, on one node and on virtual nodes (where only one node's board
/// fails), and the member that failed says why, once. Before, that
/// member's collective failed with `MPI_ERR_OTHER` (the job aborted; under
/// `MPI_ERRORS_RETURN` the others would have waited for it on the board).
#[test]
fn collectives_where_a_board_cannot_be_set_up() {
    let exe = build(&ours(), "boardfail", "tessel");
    for (arg, cause) in [
        (None, "cannot map a peer's shared memory"),
        (
            Some("noarea"),
            "could not place its area in its shared heap",
        ),
    ] {
        for (ppn, n) in [(8, 2), (8, 3), (2, 4), (3, 5)] {
            let (ppn, np) = (ppn.to_string(), n.to_string());
            let mut cmd = mpiexec(&["--ppn", &ppn, "-n", &np]);
            cmd.arg(&exe).args(arg);
            let label = format!("boardfail-{}-{ppn}-{n}", arg.unwrap_or("map"));
            let run = launch(&label, cmd).wait_for(WATCHDOG);
            assert_ok(&run, "boardfail", n);
            let notes = run.stderr.matches("collectives run on messages").count();
            assert_eq!(
                notes, 1,
                "{label}: one member should say why\n{}",
                run.stderr
            );
            assert!(run.stderr.contains(cause), "{label}: {}", run.stderr);
        }
    }
}

/// Programs under valgrind, as a user debugging a program runs them: they
/// complete (memcheck's reports are not checked). Valgrind 3.19 lacks
/// `pidfd_open`, so the library maps peers' heaps through `/proc/PID/fd`,
/// and collectives run on flag boards there too.
#[test]
fn programs_under_valgrind() {
    for name in ["p2p", "coll", "colls", "boards"] {
        let exe = build(&ours(), name, "tessel");
        for n in [2, 3] {
            let np = n.to_string();
            let mut cmd = mpiexec(&["-n", &np]);
            cmd.args(["valgrind", "-q"]).arg(&exe);
            let run = launch(&format!("{name}-valgrind-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, name, n);
        }
    }
}

/// A profiling library (`pmpi_wrapper.c`) defines some `MPI_` functions
/// and forwards them to `PMPI_`: preloaded, or linked before the library,
/// it counts exactly the calls the program makes (`pmpi_app.c`), none of
/// the library's calls to itself (a collective or `MPI_Waitall` that used
/// the wrapped functions inside would raise the counts). Both ABIs.
#[test]
fn profiling_wrapper_sees_every_call_of_the_program() {
    for abi in ["mpich", "standard"] {
        profile(abi);
    }
}

fn profile(abi: &str) {
    let cc = prefix().join(if abi == "mpich" {
        "bin/mpicc"
    } else {
        "bin/mpicc_abi"
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pmpi-{abi}"));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("libpmpi_count.so");
    let compile = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(&cc).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let source = common::c_source("pmpi_wrapper");
    compile(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        wrapper.as_os_str(),
        source.as_os_str(),
    ]);
    let plain = build(&cc, "pmpi_app", abi);
    let linked = dir.join("pmpi_app.wrapped");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let app = common::c_source("pmpi_app");
    compile(&[
        "-o".as_ref(),
        linked.as_os_str(),
        app.as_os_str(),
        format!("-L{}", dir.display()).as_ref(),
        rpath.as_ref(),
        "-lpmpi_count".as_ref(),
    ]);
    let n = 3;
    for (label, exe, preload) in [("preload", &plain, true), ("linked", &linked, false)] {
        let mut cmd = mpiexec(&["-n", &n.to_string()]);
        cmd.arg(exe);
        if preload {
            cmd.env("LD_PRELOAD", &wrapper);
        }
        let run = launch(&format!("pmpi-{abi}-{label}"), cmd).wait_for(WATCHDOG);
        assert_ok(&run, "pmpi_app", n);
        for r in 0..n {
            let line = format!(
                "pmpi: rank {r} send 3 recv 3 sendrecv 2 allreduce 1 isend 2 irecv 2 wait 0 barrier 1"
            );
            assert!(
                run.stdout.lines().any(|l| l == line),
                "{abi} {label}: missing {line:?}\n{}",
                run.stdout
            );
        }
    }
}

#[test]
fn program_under_mpich_hydra() {
    let exe = build(&ours(), "coll", "hydra");
    let mut cmd = Command::new(hydra());
    cmd.args(["-n", "3"]).arg(exe);
    let run = launch("coll-hydra", cmd).wait_for(WATCHDOG);
    assert_ok(&run, "coll", 3);
}

#[test]
fn bad_argument_under_fatal_handler_ends_the_job_with_a_message() {
    let exe = build(&ours(), "fatal", "tessel");
    let run = run_ours("fatal", &exe, 2, false);
    assert_ne!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("returned"), "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "MPI_Send: invalid destination rank 5 in a communicator of size 2 (MPI_ERR_RANK)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn unsupported_function_under_fatal_handler_names_itself() {
    let exe = build(&ours(), "unsupported", "fatal");
    let mut cmd = mpiexec(&["-n", "2"]);
    cmd.arg(exe).arg("fatal");
    let run = launch("unsupported-fatal", cmd).wait_for(WATCHDOG);
    assert_ne!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("returned"), "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "MPI_File_open: MPI-IO is not supported by this library (MPI_ERR_UNSUPPORTED_OPERATION)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn pkg_config_describes_the_installation() {
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "mpi"])
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"))
        .output()
        .expect("pkg-config (tools/setup.sh installs it)");
    assert!(
        pc.status.success(),
        "{}",
        String::from_utf8_lossy(&pc.stderr)
    );
    let flags = String::from_utf8(pc.stdout).unwrap();
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("p2p.pkgconfig");
    let out = Command::new("cc")
        .arg(common::c_source("p2p"))
        .arg("-o")
        .arg(&exe)
        .args(flags.split_whitespace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_ours("p2p-pkgconfig", &exe, 2, false);
    assert_ok(&run, "p2p", 2);
}

/// Bound to cores or NUMA nodes, every process has a NUMA node: `hwtopo`
/// checks the NUMA sets and hardware splits against each other.
#[test]
fn hardware_splits_of_bound_processes() {
    let exe = build(&ours(), "hwtopo", "bound");
    for policy in ["core", "numa"] {
        for n in ["2", "3"] {
            let mut cmd = mpiexec(&["--bind", policy, "-n", n]);
            cmd.arg(&exe).arg("bound");
            let run = launch(&format!("hwtopo-{policy}-{n}"), cmd).wait_for(WATCHDOG);
            assert_ok(&run, "hwtopo", n.parse().unwrap());
        }
    }
}

/// The process sets a session sees: the predefined ones, then those named
/// with `--pset` in their order; members of an `app://` set make a
/// communicator from it.
#[test]
fn sessions_see_the_process_sets_named_on_the_command_line() {
    let exe = build(&ours(), "psets", "tessel");
    let mut cmd = mpiexec(&[
        "-n",
        "4",
        "--pset",
        "ocean=0-2",
        "--pset",
        "app://Atmos=3,1",
    ]);
    cmd.arg(&exe).arg("app");
    let run = launch("psets-named", cmd).wait_for(WATCHDOG);
    assert_code(&run, 0);
    let sets: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pset: "))
        // NUMA node sets depend on the machine (`hwtopo` checks them).
        .filter(|s| !s.starts_with("mpix://numa/"))
        .collect();
    assert_eq!(
        sets,
        [
            "mpi://WORLD",
            "mpi://SELF",
            "mpix://SHARED",
            "mpix://node",
            "app://ocean",
            "app://Atmos"
        ],
        "{}",
        run.stdout
    );
    for line in ["app://ocean: size 3 sum 3", "app://Atmos: size 2 sum 4"] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?}:\n{}",
            run.stdout
        );
    }
}

/// `mpix://SHARED` holds the processes of the caller's virtual node.
#[test]
fn shared_process_set_is_the_virtual_node() {
    let exe = build(&ours(), "psets", "tessel");
    let mut cmd = mpiexec(&["-n", "4", "--ppn", "2"]);
    cmd.arg(&exe);
    let run = launch("psets-ppn", cmd).wait_for(WATCHDOG);
    assert_code(&run, 0);
    for r in 0..4 {
        let line = format!("shared: rank {r} size 2");
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?}:\n{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("app://"), "{}", run.stdout);
}

/// Under Hydra no sets are named: the predefined ones remain.
#[test]
fn sessions_under_mpich_hydra() {
    let exe = build(&ours(), "sessions", "hydra");
    let mut cmd = Command::new(hydra());
    cmd.args(["-n", "3"]).arg(exe);
    let run = launch("sessions-hydra", cmd).wait_for(WATCHDOG);
    assert_ok(&run, "sessions", 3);
    assert!(run.stdout.contains("pset: mpix://SHARED"), "{}", run.stdout);
    assert!(!run.stdout.contains("app://"), "{}", run.stdout);
}

/// `MPI_COMM_WORLD` without `MPI_Init`, and `MPI_Init` after
/// `MPI_Finalize`, end the job with a message saying so.
#[test]
fn life_cycle_misuse_ends_the_job_with_a_message() {
    let exe = build(&ours(), "sessions_fatal", "tessel");
    for (mode, message) in [
        (
            "world",
            "MPI_Comm_size: MPI_COMM_WORLD used without MPI_Init: a process using only \
             sessions has no world communicator (MPI_ERR_COMM)",
        ),
        (
            "reinit",
            "MPI_Init: MPI_Init after MPI_Finalize is erroneous",
        ),
    ] {
        let mut cmd = mpiexec(&["-n", "2"]);
        cmd.arg(&exe).arg(mode);
        let run = launch(&format!("sessions-fatal-{mode}"), cmd).wait_for(WATCHDOG);
        assert_ne!(run.status.code(), Some(0), "{mode}: {}", run.stderr);
        assert!(!run.stdout.contains("returned"), "{mode}: {}", run.stdout);
        assert!(run.stderr.contains(message), "{mode}: {}", run.stderr);
    }
}

/// The malleable example (`dynres.c`, written with libmpidynres's names)
/// under each `--dynres` policy, through both ABIs: processes come and go,
/// the data follows them, and every process ends cleanly.
#[test]
fn resource_changes_under_every_policy() {
    let schedule = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dynres-schedule-{}.txt", std::process::id()));
    std::fs::write(
        &schedule,
        "# grow twice, shrink, grow, shrink\nadd 2\nadd 1\nremove 2\nadd 3\nremove 3\n",
    )
    .expect("write the schedule");
    let schedule = format!("schedule:{}", schedule.display());
    for (cc, flavour) in [(ours(), "tessel"), (prefix().join("bin/mpicc_abi"), "abi")] {
        let exe = build(&cc, "dynres", flavour);
        // (policy, processes, iterations, final size, processes in all)
        for (policy, n, iters, size, all) in [
            (schedule.as_str(), 2, "8", 3, 8),
            ("step:2", 3, "7", 5, 11),
            ("random:7", 2, "10", 8, 0),
        ] {
            let np = n.to_string();
            // Room for every id even if no process has exited yet.
            let mut cmd = mpiexec(&["-n", &np, "--max-procs", "64", "--dynres", policy]);
            cmd.arg(&exe).arg(iters);
            let label = format!("dynres-{flavour}-{}", policy.split(':').next().unwrap());
            let run = launch(&label, cmd).wait_for(WATCHDOG);
            assert_code(&run, 0);
            let last = format!("dynres: final size {size} after");
            assert!(
                run.stdout.contains(&last),
                "{label}: no {last:?}\n{}",
                run.stdout
            );
            let ended = run.stdout.lines().filter(|l| l.ends_with(" ok")).count();
            assert!(
                all == 0 || ended == all,
                "{label}: {ended} processes ended, expected {all}\n{}",
                run.stdout
            );
        }
    }
}

/// The resource-change benchmark (`benches/c/dynres.c`) runs and reports
/// every change of a short schedule (no timing is checked).
#[test]
fn resource_change_benchmark_reports_each_change() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/c");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let exe = tmp.join("dynres-bench");
    let out = Command::new(ours())
        .args(["-O1", "-Wall", "-I"])
        .arg(&bench)
        .arg("-o")
        .arg(&exe)
        .arg(bench.join("dynres.c"))
        .output()
        .expect("run mpicc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schedule = tmp.join(format!("dynres-bench-{}.txt", std::process::id()));
    std::fs::write(&schedule, "add 1\nremove 1\nadd 4\nremove 4\n").expect("write the schedule");
    let policy = format!("schedule:{}", schedule.display());
    let mut cmd = mpiexec(&["-n", "1", "--max-procs", "16", "--dynres", &policy]);
    cmd.arg(&exe);
    let run = launch("dynres-bench", cmd).wait_for(WATCHDOG);
    assert_code(&run, 0);
    for (kind, procs) in [("add", 1), ("remove", 1), ("add", 4), ("remove", 4)] {
        for metric in ["change_ms", "pss_mib"] {
            let line = format!("metric={metric} kind={kind} procs={procs} value=");
            assert!(run.stdout.contains(&line), "no {line:?}\n{}", run.stdout);
        }
    }
}

/// Requests from outside the job (`tessel-dynres PID add N|remove N`), as
/// a batch scheduler would make them, reach a job started with
/// `--dynres external`; growing past `--max-procs` is refused.
#[test]
fn resource_changes_asked_from_outside() {
    let exe = build(&ours(), "dynres", "external");
    let mut cmd = mpiexec(&["-n", "2", "--max-procs", "8", "--dynres", "external"]);
    // 40 iterations of 50 ms: time for the requests to arrive.
    cmd.arg(&exe).args(["40", "50"]);
    let job = launch("dynres-external", cmd);
    let pid = job.child.id().to_string();
    let ask = |args: &[&str]| {
        Command::new(prefix().join("bin/tessel-dynres"))
            .arg(&pid)
            .args(args)
            .output()
            .expect("run tessel-dynres")
    };
    // The control socket exists once mpiexec runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let refused = loop {
        let out = ask(&["add", "9"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !text.is_empty() || std::time::Instant::now() > deadline {
            break (out.status.code(), text);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(refused.0, Some(1), "{refused:?}");
    assert!(
        refused.1.contains("cannot grow past --max-procs 8"),
        "{refused:?}"
    );
    for change in [["add", "3"], ["remove", "2"]] {
        let out = ask(&change);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("ok"),
            "{change:?}: {out:?}"
        );
    }
    let run = job.wait_for(WATCHDOG);
    assert_code(&run, 0);
    assert!(
        run.stdout.contains("dynres: final size 3 after 2 changes"),
        "{}",
        run.stdout
    );
}
