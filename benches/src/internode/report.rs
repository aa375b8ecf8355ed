//! The report directory of `internode`: `report.md`, `ratios.csv` (the
//! overlap and overhead ratios), `veth.csv` (bytes through the veth pair
//! per namespaced run), and `compare`'s `results.csv` and `samples.csv`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use super::cli::Plan;
use super::helper::Test;
use super::{Ended, GRACE_SECS, Load, MODES, NP, NotRun, PPN, PluginStatus, TOOL_BATCHES, VethRun};
use crate::compare::competitors::Competitor;
use crate::compare::report::{
    Environment, failures_section, medians_csv, mpis_section, num, samples_csv, write_files,
};
use crate::compare::run::Failure;
use crate::compare::stats::{Sample, Summary, median};

/// Target of the stencil's total / max(intra, inter).
pub const OVERLAP_TARGET: f64 = 1.05;
/// Targets of the plugin/transport ratios.
pub const LATENCY_TARGET: f64 = 1.1;
pub const BANDWIDTH_TARGET: f64 = 0.9;

/// Everything the report is made of.
#[derive(Debug)]
pub struct Results<'a> {
    pub environment: &'a Environment,
    pub plan: &'a Plan,
    pub mpis: &'a [Competitor],
    pub plugins: &'a [PluginStatus],
    pub not_run: &'a [NotRun],
    pub failures: &'a [Failure],
    pub medians: &'a [Summary],
    pub samples: &'a [Sample],
    pub veth: &'a [VethRun],
    pub ended: &'a [Ended],
    pub load: &'a Load,
}

/// Write the report into `dir`.
pub fn write(dir: &Path, r: &Results) -> Result<(), String> {
    let overlap = overlap_rows(r.medians, r.veth);
    let overhead = overhead_rows(r.medians, r.plan);
    write_files(
        dir,
        [
            ("report.md", markdown(r, &overlap, &overhead)),
            ("ratios.csv", ratios_csv(&overlap, &overhead)),
            ("veth.csv", veth_csv(r.veth)),
            ("results.csv", medians_csv(r.medians)),
            ("samples.csv", samples_csv(r.samples)),
        ],
    )
}

/// The median whose keys include all of `want`.
fn find<'a>(
    medians: &'a [Summary],
    mpi: &str,
    bench: &str,
    metric: &str,
    want: &[(&str, &str)],
) -> Option<&'a Summary> {
    medians.iter().find(|s| {
        s.key.mpi == mpi
            && s.key.bench == bench
            && s.key.metric == metric
            && want
                .iter()
                .all(|(k, v)| s.key.keys.get(*k).map(String::as_str) == Some(*v))
    })
}

/// One MPI's stencil across nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct OverlapRow {
    pub mpi: String,
    pub transport: String,
    pub nodes: String,
    /// Medians in µs, per mode (intra, inter, total).
    pub times: [Option<f64>; 3],
    /// total / max(intra, inter).
    pub ratio: Option<f64>,
    /// The inter-mode median on one node (nothing crosses nodes there).
    pub inter_one_node: Option<f64>,
    /// Median bytes through the veth per run, per mode (namespaces only).
    pub veth: [Option<f64>; 3],
    /// The stencil's block edge.
    pub edge: Option<u64>,
}

impl OverlapRow {
    /// Bytes of one exchange's inter-node faces: with 2 nodes of the
    /// 2×2×2 grid, every rank's 2 faces along the first dimension, E²
    /// doubles each.
    pub fn inter_bytes(&self) -> Option<f64> {
        self.edge
            .map(|e| 2.0 * f64::from(NP) * (e * e) as f64 * 8.0)
    }
}

/// Where a row goes: Tessel first, virtual nodes before namespaces, UCX
/// before libfabric.
type Order = (usize, usize, usize);

fn order(mpi: &str, nodes: &str, transport: &str) -> Order {
    let pos = |list: &[&str], x: &str| list.iter().position(|m| *m == x).unwrap_or(9);
    (
        pos(&["tessel", "mpich", "openmpi"], mpi),
        pos(&["virtual", "netns"], nodes),
        pos(&["ucx", "ofi"], transport),
    )
}

/// The overlap rows: every (MPI, transport, nodes) split across nodes that
/// has a stencil median, Tessel first.
pub fn overlap_rows(medians: &[Summary], veth: &[VethRun]) -> Vec<OverlapRow> {
    let mut places: BTreeSet<(Order, String, String, String)> = BTreeSet::new();
    for s in medians.iter().filter(|s| s.key.bench == "stencil") {
        let (Some(t), Some(n)) = (s.key.keys.get("transport"), s.key.keys.get("nodes")) else {
            continue;
        };
        if n != "one" {
            let o = order(&s.key.mpi, n, t);
            places.insert((o, s.key.mpi.clone(), n.clone(), t.clone()));
        }
    }
    places
        .into_iter()
        .map(|(_, mpi, nodes, transport)| {
            let time = |mode: &str, t: &str, n: &str| {
                find(
                    medians,
                    &mpi,
                    "stencil",
                    "exchange",
                    &[("variant", mode), ("transport", t), ("nodes", n)],
                )
                .map(|s| s.median)
            };
            let times = MODES.map(|m| time(m, &transport, &nodes));
            let ratio = match times {
                [Some(a), Some(e), Some(t)] if a.max(e) > 0.0 => Some(t / a.max(e)),
                _ => None,
            };
            let veth = MODES.map(|m| {
                let v: Vec<f64> = veth
                    .iter()
                    .filter(|v| v.mpi == mpi && v.transport == transport && v.mode == m)
                    .map(|v| v.bytes as f64)
                    .collect();
                median(&v)
            });
            let edge = medians
                .iter()
                .find(|s| {
                    s.key.mpi == mpi
                        && s.key.bench == "stencil"
                        && s.key.keys.get("nodes") == Some(&nodes)
                })
                .and_then(|s| s.key.keys.get("edge")?.parse().ok());
            OverlapRow {
                inter_one_node: time("inter", "shm", "one"),
                edge,
                times,
                ratio,
                veth,
                mpi,
                transport,
                nodes,
            }
        })
        .collect()
}

/// One plugin-vs-transport comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct OverheadRow {
    pub plugin: String,
    /// `latency`, `ping-pong bandwidth` or `streaming bandwidth`.
    pub what: &'static str,
    pub size: u64,
    /// Tessel's figure and the tool's, in `unit`.
    pub tessel: f64,
    pub tool: f64,
    pub unit: &'static str,
    /// `ucx_perftest ucp_am_lat`, ...
    pub reference: String,
    /// Tessel / tool (of times for latency, of rates for bandwidth).
    pub ratio: f64,
    pub met: bool,
}

/// The overhead rows of every plugin that has both figures.
pub fn overhead_rows(medians: &[Summary], plan: &Plan) -> Vec<OverheadRow> {
    let mut rows = Vec::new();
    let lat = |mpi: &str, size: u64, extra: (&str, &str), transport: &str| {
        let s = size.to_string();
        find(
            medians,
            mpi,
            "pingpong",
            "latency",
            &[("size", &s), ("transport", transport), extra],
        )
        .map(|x| x.median)
    };
    for (plugin, test) in [("ucx", Test::UcxLat), ("ofi", Test::FiPingpong)] {
        let tessel = |size| lat("tessel", size, ("nodes", "virtual"), plugin);
        let tool = |size| lat(test.tool(), size, ("test", test.name()), plugin);
        let reference = if test.tool() == test.name() {
            test.tool().to_string()
        } else {
            format!("{} {}", test.tool(), test.name())
        };
        for &size in &plan.sizes.latency {
            if let (Some(t), Some(o)) = (tessel(size), tool(size)) {
                let ratio = t / o;
                rows.push(OverheadRow {
                    plugin: plugin.into(),
                    what: "latency",
                    size,
                    tessel: t,
                    tool: o,
                    unit: "µs",
                    reference: reference.clone(),
                    ratio,
                    met: ratio <= LATENCY_TARGET,
                });
            }
        }
        for &size in &plan.sizes.bandwidth {
            if let (Some(t), Some(o)) = (tessel(size), tool(size)) {
                // Bytes per µs are MB/s.
                let (t, o) = (size as f64 / t, size as f64 / o);
                let ratio = t / o;
                rows.push(OverheadRow {
                    plugin: plugin.into(),
                    what: "ping-pong bandwidth",
                    size,
                    tessel: t,
                    tool: o,
                    unit: "MB/s",
                    reference: reference.clone(),
                    ratio,
                    met: ratio >= BANDWIDTH_TARGET,
                });
            }
        }
    }
    let bw = |mpi: &str, size: u64, extra: (&str, &str)| {
        let s = size.to_string();
        find(
            medians,
            mpi,
            "pingpong",
            "bw_uni",
            &[("size", &s), ("transport", "ucx"), extra],
        )
        .map(|x| x.median)
    };
    let test = Test::UcxBw;
    for &size in &plan.sizes.bandwidth {
        let t = bw("tessel", size, ("nodes", "virtual"));
        let o = bw(test.tool(), size, ("test", test.name()));
        if let (Some(t), Some(o)) = (t, o) {
            let ratio = t / o;
            rows.push(OverheadRow {
                plugin: "ucx".into(),
                what: "streaming bandwidth",
                size,
                tessel: t,
                tool: o,
                unit: "MB/s",
                reference: format!("{} {}", test.tool(), test.name()),
                ratio,
                met: ratio >= BANDWIDTH_TARGET,
            });
        }
    }
    rows
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn ratios_csv(overlap: &[OverlapRow], overhead: &[OverheadRow]) -> String {
    let mut out = String::from(
        "section,mpi_or_plugin,transport,nodes,what,size,value,unit,reference,reference_value,ratio,target,met\n",
    );
    for r in overlap {
        let [a, e, t] = r.times;
        let _ = writeln!(
            out,
            "overlap,{},{},{},total/max(intra;inter),,{},us,max(intra;inter),{},{},<={OVERLAP_TARGET},{}",
            r.mpi,
            r.transport,
            r.nodes,
            opt(t),
            opt(a.zip(e).map(|(a, e)| a.max(e))),
            opt(r.ratio),
            r.ratio
                .map_or(String::new(), |x| (x <= OVERLAP_TARGET).to_string())
        );
    }
    for r in overhead {
        let target = if r.what == "latency" {
            format!("<={LATENCY_TARGET}")
        } else {
            format!(">={BANDWIDTH_TARGET}")
        };
        let _ = writeln!(
            out,
            "overhead,{},tcp,virtual,{},{},{},{},{},{},{},{target},{}",
            r.plugin,
            r.what,
            r.size,
            r.tessel,
            if r.unit == "µs" { "us" } else { r.unit },
            r.reference,
            r.tool,
            r.ratio,
            r.met
        );
    }
    out
}

fn veth_csv(veth: &[VethRun]) -> String {
    let mut out = String::from("mpi,transport,mode,rep,bytes\n");
    for v in veth {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            v.mpi, v.transport, v.mode, v.rep, v.bytes
        );
    }
    out
}

/// `64 B`, `64 KiB`, `16 MiB`.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

fn mb(v: Option<f64>) -> String {
    v.map_or("–".into(), |b| format!("{:.2}", b / 1e6))
}

fn where_text(nodes: &str, transport: &str) -> String {
    match nodes {
        "virtual" => format!("virtual nodes, {transport} plugin over lo"),
        "netns" => format!("2 namespaces (Hydra/mpirun), {transport} over the veth"),
        other => format!("{other}, {transport}"),
    }
}

fn markdown(r: &Results, overlap: &[OverlapRow], overhead: &[OverheadRow]) -> String {
    let mut md = String::new();
    let env = r.environment;
    let p = r.plan;
    let cores = env.machine.cores;
    md.push_str("# Jobs across nodes: stencil overlap and plugin overhead\n\n");
    let _ = writeln!(
        md,
        "{} on {}, Linux {}{}. **This machine has {cores} cores**: the stencil's {NP} \
         processes (2 nodes of {PPN}, both \"nodes\" on the same cores) are oversubscribed \
         {}×. {} repetition(s), every run in turn in each; medians.{}\n",
        env.date,
        env.cpu,
        env.kernel,
        if env.machine.root { ", as root" } else { "" },
        NP.div_ceil(cores.max(1)),
        p.reps,
        if p.quick {
            " **--quick: one run at tiny sizes; it proves that the harness runs, its numbers \
             mean nothing.**"
        } else {
            ""
        },
    );
    summary_section(&mut md, overlap, overhead);
    how_section(&mut md, r);
    mpis_section(&mut md, r.mpis);
    plugins_section(&mut md, r.plugins);
    overlap_section(&mut md, overlap, r);
    locality_section(&mut md, overlap);
    overhead_section(&mut md, overhead, r);
    noise_section(&mut md, r);
    not_run_section(&mut md, r);
    failures_section(&mut md, r.failures);
    md.push_str(
        "\nRatios: `ratios.csv`; bytes through the veth pair per run: `veth.csv`; medians \
         with min and max: `results.csv`; raw samples: `samples.csv`.\n",
    );
    md
}

fn summary_section(md: &mut String, overlap: &[OverlapRow], overhead: &[OverheadRow]) {
    md.push_str("## Summary\n\n");
    md.push_str(&format!(
        "Stencil overlap, total / max(intra, inter) (target ≤ {OVERLAP_TARGET} and below every \
         other MPI's):\n\n| MPI | where | ratio | ≤ {OVERLAP_TARGET} |\n|---|---|---|---|\n"
    ));
    for o in overlap {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            o.mpi,
            where_text(&o.nodes, &o.transport),
            o.ratio.map_or("–".into(), |x| format!("{x:.3}")),
            o.ratio
                .map_or("–", |x| if x <= OVERLAP_TARGET { "yes" } else { "no" })
        );
    }
    if overlap.is_empty() {
        md.push_str("| – | nothing ran | – | – |\n");
    }
    md.push_str(&format!(
        "\nPlugin overhead, Tessel / the transport's own tool (latency: target ≤ \
         {LATENCY_TARGET}; bandwidth: target ≥ {BANDWIDTH_TARGET}):\n\n| plugin | what | size \
         | ratio | met |\n|---|---|---|---|---|\n"
    ));
    for o in overhead {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {} |",
            o.plugin,
            o.what,
            size_text(o.size),
            o.ratio,
            if o.met { "yes" } else { "no" }
        );
    }
    if overhead.is_empty() {
        md.push_str("| – | no plugin and tool figures to compare | – | – | – |\n");
    }
}

fn how_section(md: &mut String, r: &Results) {
    let edge = r
        .plan
        .edge
        .map_or_else(|| "the program's default".to_string(), |e| e.to_string());
    let _ = writeln!(
        md,
        "\n## How it runs\n\n\
         **Stencil overlap.** `benches/c/stencil.c` on {NP} processes, {PPN} per node (block \
         edge: {edge}), once per `--mode`: `intra` exchanges only the faces whose neighbour \
         shares the node (`MPI_COMM_TYPE_SHARED`), `inter` only the others, `total` all six. \
         Each figure is the median over repetitions of the program's median of the slowest \
         rank's exchange time. When the intra- and inter-node transfers proceed at once, total \
         ≈ max(intra, inter): the ratio is 1; 2 means no overlap at all of two equal halves.\n\n\
         * Tessel, virtual nodes: `target/tessel/bin/mpiexec -n {NP} --ppn {PPN}`, with \
         `TESSEL_NET=ucx UCX_TLS=tcp UCX_NET_DEVICES=lo` or `TESSEL_NET=ofi FI_PROVIDER=tcp \
         FI_TCP_IFACE=lo` (each plugin that opens).\n\
         * Two network namespaces joined by a veth pair (device `tsl0` in both, 10.X.0.1/24 and \
         .2/24 inside them only), made for the run and removed at its end. Hydra runs in the \
         first: `ip netns exec A mpiexec.mpich -hosts A,B -launcher ssh -launcher-exec SCRIPT \
         -iface tsl0 -ppn {PPN} -n {NP} PROG`, where SCRIPT skips ssh's options and runs the \
         command in namespace HOST with `ip netns exec`. Tessel: the plugin's variables with \
         `tsl0` as the device. Debian's MPICH (ch4:ucx): `UCX_TLS=tcp UCX_NET_DEVICES=tsl0`, \
         or UCX would carry its \"inter-node\" data through shared memory (both namespaces are \
         one host to UCX), plus `compare`'s launch settings for more processes than cores. \
         Open MPI: `mpirun --hostfile` (each namespace 4 slots) `--map-by ppr:{PPN}:node --mca \
         plm_rsh_agent SCRIPT' --mca pml ob1 --mca btl self,vader,tcp` with `tsl0` for its \
         out-of-band and TCP traffic and `mpi_yield_when_idle 1` when processes outnumber \
         cores; SCRIPT' also gives each namespace its own shared-memory and temporary \
         directory (`OMPI_MCA_btl_vader_backing_directory`, `TMPDIR`): vader names its \
         segments by host name and local rank, the same in both namespaces, and ranks of the \
         two nodes would otherwise share segments (they crash). The bytes through the veth \
         during each namespaced run are counted.\n\
         * Locality check: each MPI also runs `--mode inter` on one node with its usual \
         launcher, where no neighbour is on another node and nothing is exchanged.\n\
         * The namespaced runs of MPICH go through a wrapper that ends the job when it is \
         still running {GRACE_SECS} s after printing its result (see *Runs ended after their \
         results*).\n\n\
         **Plugin overhead.** `benches/c/pingpong.c` with `mpiexec -n 2 --ppn 1` (ranks 0 \
         and 1 on different virtual nodes: every message goes through the plugin, over \
         loopback): `latency` is half the round trip of `MPI_Send`/`MPI_Recv`, median of 5 \
         batches; `bw_uni` a window of 64 `MPI_Isend`s (fewer above 1 MiB) and a zero-byte \
         acknowledgement. In the same repetition, the transport's own tool, server and client \
         on 127.0.0.1: UCX's `ucx_perftest -t ucp_am_lat` (UCP active messages, what the \
         plugin sends; half the round trip, mean over the run) and `-t ucp_am_bw` (a stream, \
         its MiB/s converted to MB/s), with `UCX_TLS=tcp UCX_NET_DEVICES=lo`; libfabric's \
         `fi_pingpong -p tcp -e rdm` (reliable-datagram endpoints and untagged messages, as \
         the plugin; `usec/xfer`, half the round trip) with `FI_PROVIDER=tcp FI_TCP_IFACE=lo`. \
         Each tool figure is the median of {TOOL_BATCHES} runs of the tool (1 with `--quick`), \
         as `pingpong.c`'s are medians of 5 timed batches. Ping-pong bandwidth is size / \
         latency, the same pattern on both sides; streaming \
         bandwidth compares `bw_uni` with `ucp_am_bw` (the patterns differ: windows of 64 with \
         an acknowledgement against `ucx_perftest`'s own flow control). `fi_pingpong` times \
         the first transfer, which opens the connection, within its loop and has no warm-up: \
         it runs with N and 2N round trips and the figure is the time per transfer of the \
         difference, 2·t(2N) − t(N).\n"
    );
}

fn plugins_section(md: &mut String, plugins: &[PluginStatus]) {
    md.push_str(
        "\n## Network plugins\n\nEach was tried with a 2-node ping-pong (`mpiexec -n 2 --ppn 1 \
         pingpong --quick`) before the runs.\n\n| plugin | opens |\n|---|---|\n",
    );
    for p in plugins {
        let what = match &p.opens {
            Ok(()) => "yes".to_string(),
            Err(e) => format!("no: {}", e.replace('|', "/")),
        };
        let _ = writeln!(md, "| {} | {what} |", p.name);
    }
    if plugins.is_empty() {
        md.push_str("| – | Tessel did not set up or build |\n");
    }
}

fn overlap_section(md: &mut String, rows: &[OverlapRow], r: &Results) {
    md.push_str(
        "\n## Stencil overlap\n\nMedians in µs (min–max over repetitions in `results.csv`); \
         MB through the veth per run for the namespaced ones; each total against the fastest \
         total. A ratio near 1 says the two kinds of transfer overlap only when the times are \
         those of the transfers: with more processes than cores, an MPI whose waiting \
         processes poll waits for time slices of milliseconds, in all three modes alike, and \
         its ratio tends to 1 whatever the transfers do.\n\n| MPI | where | intra | inter | \
         total | total / max(intra, inter) | total / fastest total | veth MB intra / inter / \
         total |\n|---|---|---|---|---|---|---|---|\n",
    );
    let fastest = rows
        .iter()
        .filter_map(|o| o.times[2])
        .fold(f64::INFINITY, f64::min);
    for o in rows {
        let [a, e, t] = o.times;
        let veth = if o.nodes == "netns" {
            format!("{} / {} / {}", mb(o.veth[0]), mb(o.veth[1]), mb(o.veth[2]))
        } else {
            "–".into()
        };
        let vs_fastest = t
            .filter(|_| fastest.is_finite() && fastest > 0.0)
            .map_or("–".into(), |t| format!("{:.1}×", t / fastest));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {vs_fastest} | {veth} |",
            o.mpi,
            where_text(&o.nodes, &o.transport),
            cell(a),
            cell(e),
            cell(t),
            o.ratio.map_or("–".into(), |x| format!("{x:.3}")),
        );
    }
    let best_other = rows
        .iter()
        .filter(|o| o.mpi != "tessel")
        .filter_map(|o| o.ratio.map(|x| (x, o)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    md.push('\n');
    match best_other {
        Some((x, o)) => {
            let _ = writeln!(
                md,
                "Best other MPI: {} ({}) at {x:.3}.",
                o.mpi,
                where_text(&o.nodes, &o.transport)
            );
            for t in rows.iter().filter(|o| o.mpi == "tessel") {
                if let Some(tr) = t.ratio {
                    let _ = writeln!(
                        md,
                        "* Tessel, {}: {tr:.3}, {} the target of {OVERLAP_TARGET}, {} than {}.",
                        where_text(&t.nodes, &t.transport),
                        if tr <= OVERLAP_TARGET {
                            "within"
                        } else {
                            "above"
                        },
                        if tr < x { "better" } else { "not better" },
                        o.mpi
                    );
                }
            }
        }
        None => md.push_str("No other MPI has all three modes: no comparison.\n"),
    }
    if r.plan.quick {
        md.push_str("\n(--quick: these numbers mean nothing.)\n");
    }
}

fn locality_section(md: &mut String, rows: &[OverlapRow]) {
    md.push_str(
        "\n## Locality check: do the MPIs see two nodes?\n\n`--mode inter` exchanges only the \
         faces of neighbours on another node. On one node there are none: the exchange is \
         empty. Across the split it is not, if the MPI sees two nodes; across the namespaces \
         an inter run must then move at least one exchange's inter-node faces (each rank's 2 \
         faces towards the other node) more through the veth than an intra run.\n\n| MPI | where | inter across nodes (µs) \
         | inter on one node (µs) | veth MB per intra run | per inter run | sees two nodes |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for o in rows {
        let split = o.times[1];
        let verdict = match (split, o.inter_one_node) {
            (Some(s), Some(one)) if s > 2.0 * one => {
                if o.nodes == "netns" {
                    match (o.veth[0], o.veth[1], o.inter_bytes()) {
                        (Some(vi), Some(ve), Some(want)) if ve - vi >= want => format!(
                            "yes: inter {:.0}× one node's, its faces over the veth",
                            s / one.max(1e-9)
                        ),
                        (Some(_), Some(_), Some(_)) => {
                            "no: slower, but its faces did not cross the veth".into()
                        }
                        _ => format!("yes (inter {:.0}× one node's; no veth count)", s / one),
                    }
                } else {
                    format!("yes: inter {:.0}× one node's", s / one.max(1e-9))
                }
            }
            (Some(_), Some(_)) => "no: inter as fast as with nothing to exchange".into(),
            _ => "–".into(),
        };
        let (vi, ve) = if o.nodes == "netns" {
            (mb(o.veth[0]), mb(o.veth[1]))
        } else {
            ("–".into(), "–".into())
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {vi} | {ve} | {verdict} |",
            o.mpi,
            where_text(&o.nodes, &o.transport),
            cell(split),
            cell(o.inter_one_node),
        );
    }
}

fn overhead_section(md: &mut String, rows: &[OverheadRow], r: &Results) {
    md.push_str(
        "\n## Plugin overhead\n\nRatios are Tessel / tool: for latency below 1 means Tessel \
         faster, for bandwidth above 1.\n\n| plugin | what | size | Tessel | transport's tool \
         | tool | ratio | target | met |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for o in rows {
        let target = if o.what == "latency" {
            format!("≤ {LATENCY_TARGET}")
        } else {
            format!("≥ {BANDWIDTH_TARGET}")
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} {} | {} | {} {} | {:.3} | {target} | {} |",
            o.plugin,
            o.what,
            size_text(o.size),
            num(o.tessel),
            o.unit,
            o.reference,
            num(o.tool),
            o.unit,
            o.ratio,
            if o.met { "yes" } else { "no" }
        );
    }
    let plugins: BTreeSet<&str> = rows.iter().map(|o| o.plugin.as_str()).collect();
    for p in r.plugins.iter().filter(|p| p.opens.is_ok()) {
        if !plugins.contains(p.name) && p.name != "verbs" {
            let _ = writeln!(
                md,
                "\nNo overhead figures for {}: its tool did not run or Tessel's ping-pong \
                 failed (see below).",
                p.name
            );
        }
    }
    md.push_str(
        "\nThe transports' figures come from separate processes on loopback, measured in \
         the same repetitions as Tessel's; both sides share this machine's cores with \
         whatever else runs.\n",
    );
}

fn noise_section(md: &mut String, r: &Results) {
    let spreads: Vec<(f64, &Summary)> = r
        .medians
        .iter()
        .filter(|s| s.n >= 2 && s.median > 0.0)
        .map(|s| ((s.max - s.min) / s.median, s))
        .collect();
    md.push_str("\n## Noise\n\n");
    let _ = writeln!(
        md,
        "Load average (1, 5, 15 min) before the command: {}; at its end: {}. CPU time \
         stolen by the hypervisor during the runs: {}.",
        r.load.before,
        r.load.after,
        r.load
            .steal_pct
            .map_or("unknown".into(), |s| format!("{s:.1} %"))
    );
    if spreads.is_empty() {
        md.push_str("\nOne repetition: no spread to show.\n");
        return;
    }
    let mut v: Vec<f64> = spreads.iter().map(|(x, _)| *x).collect();
    v.sort_by(f64::total_cmp);
    let _ = writeln!(
        md,
        "\nSpread of the repetitions, (max − min) / median, over {} series: median {:.0} %, \
         worst {:.0} %. The noisiest:\n",
        v.len(),
        100.0 * median(&v).unwrap_or(0.0),
        100.0 * v.last().copied().unwrap_or(0.0)
    );
    let mut worst: Vec<&(f64, &Summary)> = spreads.iter().collect();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (x, s) in worst.into_iter().take(5) {
        let _ = writeln!(
            md,
            "* {} {} {} {}: {:.0} % (median {} {}, min {}, max {})",
            s.key.mpi,
            s.key.bench,
            s.key.metric,
            s.key.keys_text(),
            100.0 * x,
            num(s.median),
            s.unit,
            num(s.min),
            num(s.max)
        );
    }
}

fn not_run_section(md: &mut String, r: &Results) {
    let mut lines: Vec<String> = r
        .not_run
        .iter()
        .map(|n| format!("* {}: {}", n.what, n.why.replace('|', "/")))
        .collect();
    for p in r.plugins.iter() {
        if let Err(e) = &p.opens {
            lines.push(format!(
                "* Tessel's {} plugin: {}",
                p.name,
                e.replace('|', "/")
            ));
        }
    }
    if !r.ended.is_empty() {
        let mut by_mpi: Vec<(&str, usize)> = Vec::new();
        for e in r.ended {
            match by_mpi.iter_mut().find(|(m, _)| *m == e.mpi) {
                Some((_, n)) => *n += 1,
                None => by_mpi.push((&e.mpi, 1)),
            }
        }
        md.push_str("\n## Runs ended after their results\n\n");
        for (mpi, n) in by_mpi {
            let runs = r
                .samples
                .iter()
                .filter(|s| {
                    s.mpi == mpi
                        && s.bench == "stencil"
                        && s.keys.get("nodes").map(String::as_str) == Some("netns")
                })
                .count();
            let _ = writeln!(
                md,
                "{mpi}: {n} of its {runs} namespaced runs were still running {GRACE_SECS} s after \
                 printing their result, in `MPI_Finalize`, and were ended (SIGTERM to the \
                 launcher). The stencil's measurement is complete before `MPI_Finalize`. With \
                 `UCX_TLS=tcp` Debian's MPICH 4.0 on UCX 1.13 hangs there often, on one node \
                 too (one rank in `ucp_worker_progress` closing its endpoints, the others in \
                 the PMI barrier), like openucx/ucx#8738 (TCP transport hangs during cleanup)."
            );
        }
    }
    if !lines.is_empty() {
        md.push_str("\n## Not run\n\n");
        md.push_str(&lines.join("\n"));
        md.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::summarize;

    fn sample(mpi: &str, bench: &str, metric: &str, keys: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            mpi: mpi.into(),
            bench: bench.into(),
            metric: metric.into(),
            keys: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            unit: if metric.starts_with("bw") {
                "MB/s"
            } else {
                "us"
            }
            .into(),
            rep: 1,
            procs: 8,
            oversubscribed: true,
        }
    }

    fn stencil(mpi: &str, t: &str, n: &str, mode: &str, v: f64) -> Sample {
        sample(
            mpi,
            "stencil",
            "exchange",
            &[
                ("variant", mode),
                ("recv", "normal"),
                ("np", "8"),
                ("edge", "64"),
                ("transport", t),
                ("nodes", n),
            ],
            v,
        )
    }

    #[test]
    fn overlap_ratio_is_total_over_the_slower_half() {
        let samples = [
            stencil("tessel", "ucx", "virtual", "intra", 100.0),
            stencil("tessel", "ucx", "virtual", "inter", 200.0),
            stencil("tessel", "ucx", "virtual", "total", 210.0),
            stencil("tessel", "shm", "one", "inter", 1.0),
            stencil("mpich", "ucx", "netns", "intra", 100.0),
            stencil("mpich", "ucx", "netns", "inter", 100.0),
            stencil("mpich", "ucx", "netns", "total", 180.0),
        ];
        let veth = [VethRun {
            mpi: "mpich".into(),
            transport: "ucx".into(),
            mode: "inter".into(),
            rep: 1,
            bytes: 5_000_000,
        }];
        let rows = overlap_rows(&summarize(&samples), &veth);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].mpi, "tessel");
        assert!((rows[0].ratio.unwrap() - 1.05).abs() < 1e-12);
        assert_eq!(rows[0].inter_one_node, Some(1.0));
        assert_eq!(rows[1].mpi, "mpich");
        assert!((rows[1].ratio.unwrap() - 1.8).abs() < 1e-12);
        assert_eq!(rows[1].veth, [None, Some(5e6), None]);
        assert_eq!(rows[1].inter_one_node, None);
    }

    fn plan() -> Plan {
        use clap::Parser;
        crate::internode::cli::Cli::try_parse_from(["internode"])
            .unwrap()
            .plan()
    }

    #[test]
    fn overhead_ratios_follow_each_direction() {
        let pp = |mpi: &str, metric: &str, size: &str, extra: (&str, &str), v: f64| {
            sample(
                mpi,
                "pingpong",
                metric,
                &[("size", size), ("transport", "ucx"), extra],
                v,
            )
        };
        let samples = [
            pp("tessel", "latency", "64", ("nodes", "virtual"), 11.0),
            pp(
                "ucx_perftest",
                "latency",
                "64",
                ("test", "ucp_am_lat"),
                10.0,
            ),
            pp("tessel", "latency", "1048576", ("nodes", "virtual"), 200.0),
            pp(
                "ucx_perftest",
                "latency",
                "1048576",
                ("test", "ucp_am_lat"),
                100.0,
            ),
            pp("tessel", "bw_uni", "1048576", ("nodes", "virtual"), 950.0),
            pp(
                "ucx_perftest",
                "bw_uni",
                "1048576",
                ("test", "ucp_am_bw"),
                1000.0,
            ),
        ];
        let rows = overhead_rows(&summarize(&samples), &plan());
        assert_eq!(rows.len(), 3);
        let lat = &rows[0];
        assert_eq!((lat.what, lat.size), ("latency", 64));
        assert!((lat.ratio - 1.1).abs() < 1e-12 && lat.met);
        let pp_bw = &rows[1];
        assert_eq!(pp_bw.what, "ping-pong bandwidth");
        assert!((pp_bw.ratio - 0.5).abs() < 1e-12 && !pp_bw.met);
        assert!((pp_bw.tessel - 1048576.0 / 200.0).abs() < 1e-9);
        let st = &rows[2];
        assert_eq!(st.what, "streaming bandwidth");
        assert!((st.ratio - 0.95).abs() < 1e-12 && st.met);
        let csv = ratios_csv(&[], &rows);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv.lines().all(|l| l.split(',').count() == 13), "{csv}");
    }

    #[test]
    fn sizes_read_as_binary_multiples() {
        assert_eq!(size_text(64), "64 B");
        assert_eq!(size_text(64 << 10), "64 KiB");
        assert_eq!(size_text(16 << 20), "16 MiB");
    }
}
