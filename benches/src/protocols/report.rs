//! The report directory of `protocols`: `report.md` (with its SVG plots),
//! `bandwidth.csv` (the per-size table with its ratios), `stats.csv` (the
//! `TESSEL_STATS` lines), and `compare`'s `results.csv` and `samples.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::cli::Plan;
use super::tstats::Stat;
use super::{ALLOC, RNDV, RunStats, Setting};
use crate::compare::competitors::{Competitor, Kind};
use crate::compare::plot::{self, Plot, Spec};
use crate::compare::report::{
    Environment, failures_section, medians_csv, mpis_section, num, samples_csv, write_files,
};
use crate::compare::run::Failure;
use crate::compare::stats::{Sample, Summary, ratio};

/// Everything the report is made of.
#[derive(Debug)]
pub struct Results<'a> {
    pub environment: &'a Environment,
    pub plan: &'a Plan,
    pub mpis: &'a [Competitor],
    pub failures: &'a [Failure],
    pub medians: &'a [Summary],
    pub samples: &'a [Sample],
    pub stats: &'a [RunStats],
}

/// Write the report into `dir`.
pub fn write(dir: &Path, r: &Results) -> Result<(), String> {
    let plots = plot::write_specs(dir, r.medians, specs(r.plan), &["protocols_"])?;
    let rows = bandwidth_rows(r.medians);
    write_files(
        dir,
        [
            ("report.md", markdown(r, &rows, &plots)),
            ("bandwidth.csv", bandwidth_csv(&rows)),
            ("stats.csv", stats_csv(r.stats)),
            ("results.csv", medians_csv(r.medians)),
            ("samples.csv", samples_csv(r.samples)),
        ],
    )
}

/// One bandwidth median with its ratios.
#[derive(Debug, Clone, PartialEq)]
pub struct BwRow {
    pub np: u32,
    pub alloc: String,
    pub size: u64,
    pub mpi: String,
    /// Tessel's `TESSEL_RNDV` setting; `None` for the other MPIs.
    pub rndv: Option<String>,
    pub mbps: f64,
    /// Over Tessel's GET-only run with the same buffers and processes.
    pub vs_get: Option<f64>,
    /// The other MPI with the highest bandwidth at this point, and it.
    pub best_other: Option<(String, f64)>,
    /// Tessel's bandwidth over the best other's (Tessel rows only).
    pub vs_other: Option<f64>,
}

/// (np, alloc, size) of a bandwidth median.
type Point = (u32, String, u64);

fn point(s: &Summary) -> Option<Point> {
    let k = &s.key.keys;
    Some((
        k.get("np")?.parse().ok()?,
        k.get("alloc")?.clone(),
        k.get("size")?.parse().ok()?,
    ))
}

/// Every bandwidth median of `protocols.c` with its ratios, by process
/// count, allocation, size, then MPI and setting.
pub fn bandwidth_rows(medians: &[Summary]) -> Vec<BwRow> {
    let mut at: BTreeMap<Point, Vec<&Summary>> = BTreeMap::new();
    for s in medians
        .iter()
        .filter(|s| s.key.bench == "protocols" && s.key.metric == "bw")
    {
        if let Some(p) = point(s) {
            at.entry(p).or_default().push(s);
        }
    }
    let tessel = Kind::Tessel.name();
    let mut rows = Vec::new();
    for ((np, alloc, size), group) in at {
        let rndv = |s: &Summary| s.key.keys.get("rndv").cloned();
        let get = group
            .iter()
            .find(|s| s.key.mpi == tessel && rndv(s).as_deref() == Some("get"))
            .map(|s| s.median);
        let best_other = group
            .iter()
            .filter(|s| s.key.mpi != tessel)
            .max_by(|a, b| a.median.total_cmp(&b.median))
            .map(|s| (s.key.mpi.clone(), s.median));
        for s in &group {
            let is_tessel = s.key.mpi == tessel;
            rows.push(BwRow {
                np,
                alloc: alloc.clone(),
                size,
                mpi: s.key.mpi.clone(),
                rndv: rndv(s),
                mbps: s.median,
                vs_get: get.and_then(|g| ratio(s.median, g)),
                vs_other: best_other
                    .as_ref()
                    .filter(|_| is_tessel)
                    .and_then(|(_, o)| ratio(s.median, *o)),
                best_other: best_other.clone(),
            });
        }
    }
    rows
}

fn bandwidth_csv(rows: &[BwRow]) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = String::from(
        "np,alloc,size,mpi,rndv,mbps,ratio_to_tessel_get,best_other,best_other_mbps,ratio_to_best_other\n",
    );
    for r in rows {
        let (other, other_mbps) = r
            .best_other
            .as_ref()
            .map_or((String::new(), None), |(n, v)| (n.clone(), Some(*v)));
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            r.np,
            r.alloc,
            r.size,
            r.mpi,
            r.rndv.as_deref().unwrap_or(""),
            r.mbps,
            opt(r.vs_get),
            other,
            opt(other_mbps),
            opt(r.vs_other)
        );
    }
    out
}

fn stats_csv(runs: &[RunStats]) -> String {
    let mut out = String::from("rndv,alloc,np,rep,rank,kind,proto,class,transfers,helper,bytes\n");
    for run in runs {
        let Setting { rndv, alloc, np } = &run.setting;
        for s in &run.stats {
            let fields = match s {
                Stat::Proto {
                    rank,
                    proto,
                    class,
                    transfers,
                    bytes,
                } => format!("{rank},proto,{proto},{class},{transfers},,{bytes}"),
                Stat::Helper {
                    rank,
                    helper,
                    bytes,
                } => format!("{rank},helper,,,,{helper},{bytes}"),
            };
            let _ = writeln!(out, "{rndv},{alloc},{np},{},{fields}", run.rep);
        }
    }
    out
}

/// One plot of bandwidth against size per process count and allocation,
/// and the stencil's exchange time against processes.
fn specs(plan: &Plan) -> Vec<Spec<'static>> {
    let mut v = Vec::new();
    for &np in &plan.np {
        for alloc in ALLOC {
            let n = np.to_string();
            v.push(Spec {
                file: format!("protocols_np{np}_{alloc}.svg"),
                title: format!("Bandwidth, {np} processes, {alloc} buffers"),
                x_key: "size",
                y_label: "bandwidth (MB/s)".into(),
                select: Box::new(move |s| {
                    s.key.bench == "protocols"
                        && s.key.keys.get("np") == Some(&n)
                        && s.key.keys.get("alloc").map(String::as_str) == Some(alloc)
                }),
            });
        }
    }
    v.push(Spec {
        file: "protocols_stencil.svg".into(),
        title: "3-D stencil halo exchange, normal and library-managed receives".into(),
        x_key: "np",
        y_label: "time per exchange (us)".into(),
        select: Box::new(|s| s.key.bench == "stencil" && s.key.metric == "exchange"),
    });
    v
}

/// `64 KiB`, `16 MiB`.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}"))
}

fn markdown(r: &Results, rows: &[BwRow], plots: &[Plot]) -> String {
    let mut md = String::new();
    let env = r.environment;
    let p = r.plan;
    let cores = env.machine.cores;
    let _ = writeln!(md, "# Tessel's large-message protocols\n");
    let _ = writeln!(
        md,
        "{} on {}, Linux {}{}. **This machine has {cores} cores** (available parallelism): \
         at most {cores} processes run at once, so however many idle helpers a run has, no \
         more than {cores} copiers copy at the same time here. Runs with more processes than \
         cores are marked *oversubscribed*. {} repetition(s), every run in turn in each; \
         medians{}.\n",
        env.date,
        env.cpu,
        env.kernel,
        if env.machine.root { ", as root" } else { "" },
        p.reps,
        if p.quick {
            "; **--quick: small sizes, the numbers prove only that everything runs**"
        } else {
            ""
        },
    );
    mpis_section(&mut md, r.mpis);
    bandwidth_section(&mut md, rows, cores);
    stats_section(&mut md, r.stats);
    stencil_section(&mut md, r.medians);
    if !plots.is_empty() {
        md.push_str("\n## Plots\n\n");
        for p in plots {
            let _ = writeln!(md, "![{}]({})\n", p.title, p.file);
        }
    }
    failures_section(&mut md, r.failures);
    md.push_str(
        "\nPer size with ratios: `bandwidth.csv`; statistics lines: `stats.csv`; medians with \
         min and max: `results.csv`; raw samples: `samples.csv`.\n",
    );
    md
}

fn bandwidth_section(md: &mut String, rows: &[BwRow], cores: u32) {
    md.push_str(
        "\n## Bandwidth (MB/s, 10^6 bytes per second)\n\n`protocols.c`: rank 0 sends windows \
         of 4 messages (2 at 64 MiB) to rank 1, acknowledged; ranks 2 and up wait idle in a \
         blocking receive. Tessel runs once per `TESSEL_RNDV` setting. Each Tessel cell: \
         MB/s (ratio to Tessel's GET-only run with the same buffers and processes / ratio to \
         the best other MPI at that size); above 1 is faster. *malloc*: private buffers; \
         *mpi*: `MPI_Alloc_mem` (Tessel: the shared heap).\n",
    );
    let mut tables: BTreeMap<(u32, String), Vec<&BwRow>> = BTreeMap::new();
    for r in rows {
        tables.entry((r.np, r.alloc.clone())).or_default().push(r);
    }
    if tables.is_empty() {
        md.push_str("\nNo bandwidth measurements (see the failed runs).\n");
    }
    for ((np, alloc), rows) in tables {
        let helpers = match np {
            2 => "no helper".to_string(),
            n => format!("{} idle helpers", n - 2),
        };
        let over = if np > cores {
            " (*oversubscribed*)"
        } else {
            ""
        };
        let _ = write!(
            md,
            "\n### {np} processes ({helpers}){over}, {alloc} buffers\n\n| size |"
        );
        for rndv in RNDV {
            let _ = write!(md, " tessel {rndv} |");
        }
        md.push_str(" best other |\n|---|");
        md.push_str(&"---|".repeat(RNDV.len() + 1));
        md.push('\n');
        let mut sizes: Vec<u64> = rows.iter().map(|r| r.size).collect();
        sizes.dedup();
        for size in sizes {
            let at: Vec<&&BwRow> = rows.iter().filter(|r| r.size == size).collect();
            let _ = write!(md, "| {} |", size_text(size));
            for rndv in RNDV {
                let cell =
                    at.iter()
                        .find(|r| r.rndv.as_deref() == Some(rndv))
                        .map_or("–".into(), |r| {
                            format!(
                                "{} ({} / {})",
                                num(r.mbps),
                                ratio_text(r.vs_get),
                                ratio_text(r.vs_other)
                            )
                        });
                let _ = write!(md, " {cell} |");
            }
            let best = at
                .first()
                .and_then(|r| r.best_other.as_ref())
                .map_or("–".into(), |(n, v)| format!("{} ({n})", num(*v)));
            let _ = writeln!(md, " {best} |");
        }
    }
}

/// Statistics of the runs of one setting, summed over repetitions.
#[derive(Debug, Default)]
struct Totals {
    runs: u32,
    /// (class, protocol) -> transfers.
    transfers: BTreeMap<(u32, String), u64>,
    /// (rank, helper) -> bytes.
    helped: BTreeMap<(u32, u32), u64>,
}

fn totals(runs: &[RunStats]) -> Vec<(Setting, Totals)> {
    let mut out: Vec<(Setting, Totals)> = Vec::new();
    for run in runs {
        let i = match out.iter().position(|(s, _)| *s == run.setting) {
            Some(i) => i,
            None => {
                out.push((run.setting.clone(), Totals::default()));
                out.len() - 1
            }
        };
        let t = &mut out[i].1;
        t.runs += 1;
        for s in &run.stats {
            match s {
                Stat::Proto {
                    proto,
                    class,
                    transfers,
                    ..
                } => *t.transfers.entry((*class, proto.clone())).or_default() += transfers,
                Stat::Helper {
                    rank,
                    helper,
                    bytes,
                } => *t.helped.entry((*rank, *helper)).or_default() += bytes,
            }
        }
    }
    out
}

/// Protocol names in the engine's order, then any others.
fn protocol_order(all: &BTreeMap<(u32, String), u64>) -> Vec<String> {
    let known = ["get", "coop", "steal", "probe", "pipeline"];
    let mut names: Vec<String> = known.iter().map(|s| s.to_string()).collect();
    for (_, p) in all.keys() {
        if !names.contains(p) {
            names.push(p.clone());
        }
    }
    names
}

fn stats_section(md: &mut String, runs: &[RunStats]) {
    md.push_str(
        "\n## Which protocol ran (`TESSEL_STATS=1`)\n\nLarge receives per size class and \
         protocol, summed over the ranks and the repetitions of each setting (*probe*: the \
         first, chunked transfer of a size class, which counts the helpers; *pipeline*: the \
         staging copy used when cross-memory attach is refused).\n",
    );
    let unread: Vec<&String> = runs.iter().flat_map(|r| &r.unread).collect();
    let all = totals(runs);
    if all
        .iter()
        .all(|(_, t)| t.transfers.is_empty() && t.helped.is_empty())
    {
        md.push_str(
            "\nNo `tessel-stats` lines: this Tessel prints no statistics, so which protocol \
             ran is unknown and the forced settings may have been ignored.\n",
        );
    }
    for (setting, t) in all.iter().filter(|(_, t)| !t.transfers.is_empty()) {
        let names = protocol_order(&t.transfers);
        let _ = write!(
            md,
            "\n### {}: {} processes, {} buffers ({} runs)\n\n| size class |",
            setting.rndv, setting.np, setting.alloc, t.runs
        );
        for n in &names {
            let _ = write!(md, " {n} |");
        }
        md.push_str(" chosen |\n|---|");
        md.push_str(&"---|".repeat(names.len() + 1));
        md.push('\n');
        let mut classes: Vec<u32> = t.transfers.keys().map(|(c, _)| *c).collect();
        classes.dedup();
        for class in classes {
            let count = |p: &str| t.transfers.get(&(class, p.to_string())).copied();
            let _ = write!(md, "| {} |", size_text(1 << class));
            for n in &names {
                let _ = write!(md, " {} |", count(n).map_or("–".into(), |c| c.to_string()));
            }
            let chosen = names
                .iter()
                .filter(|n| *n != "probe")
                .max_by_key(|n| count(n).unwrap_or(0))
                .filter(|n| count(n).unwrap_or(0) > 0);
            let _ = writeln!(md, " {} |", chosen.map_or("–", String::as_str));
        }
    }
    let helped: Vec<&(Setting, Totals)> =
        all.iter().filter(|(_, t)| !t.helped.is_empty()).collect();
    if !helped.is_empty() {
        md.push_str(
            "\n### Bytes copied by helpers\n\nMiB per run that each helper rank copied for a \
             receiving rank's messages.\n\n| setting | processes | buffers | receiver | \
             helper | MiB per run |\n|---|---|---|---|---|---|\n",
        );
        for (s, t) in helped {
            for ((rank, helper), bytes) in &t.helped {
                let mib = *bytes as f64 / f64::from(t.runs.max(1)) / f64::from(1 << 20);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {rank} | {helper} | {} |",
                    s.rndv,
                    s.np,
                    s.alloc,
                    num(mib)
                );
            }
        }
    }
    if !unread.is_empty() {
        let _ = writeln!(
            md,
            "\n{} `tessel-stats` line(s) not understood, the first: `{}`",
            unread.len(),
            unread[0]
        );
    }
}

fn stencil_section(md: &mut String, medians: &[Summary]) {
    md.push_str(
        "\n## Stencil: normal against library-managed receives\n\n`stencil.c` halo exchange, \
         median of the slowest rank's time per exchange in µs (lower is faster); *managed*: \
         `MPI_Irecv(NULL, ...)`, `MPIX_Get_recv_buf`, the copy into the halo, \
         `MPIX_Release_recv_buf` (Tessel only). Ratios Tessel/other: below 1 Tessel is \
         faster.\n\n| processes | edge | tessel normal | tessel managed | managed / normal | \
         best other (normal) | normal / best other | managed / best other |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let tessel = Kind::Tessel.name();
    // (np, edge) -> recv -> mpi -> summary
    let mut at: BTreeMap<(u32, u32), Vec<&Summary>> = BTreeMap::new();
    for s in medians.iter().filter(|s| s.key.bench == "stencil") {
        let k = &s.key.keys;
        let np = k.get("np").and_then(|v| v.parse().ok());
        let edge = k.get("edge").and_then(|v| v.parse().ok());
        if let (Some(np), Some(edge)) = (np, edge) {
            at.entry((np, edge)).or_default().push(s);
        }
    }
    if at.is_empty() {
        md.push_str("| – | – | – | – | – | – | – | – |\n");
        return;
    }
    for ((np, edge), group) in at {
        let find = |mpi: &str, recv: &str| {
            group.iter().find(|s| {
                s.key.mpi == mpi && s.key.keys.get("recv").map(String::as_str) == Some(recv)
            })
        };
        let time = |s: Option<&&Summary>| match s {
            Some(s) if s.key.metric == "exchange" => Some(s.median),
            _ => None,
        };
        let cell = |s: Option<&&Summary>| match s {
            Some(s) if s.key.metric == "unsupported" => "unsupported".to_string(),
            _ => time(s).map_or("–".into(), num),
        };
        let normal = find(tessel, "normal");
        let managed = find(tessel, "managed");
        let best = group
            .iter()
            .filter(|s| s.key.mpi != tessel && s.key.metric == "exchange")
            .min_by(|a, b| a.median.total_cmp(&b.median));
        let (n, m, b) = (time(normal), time(managed), best.map(|s| s.median));
        let r =
            |x: Option<f64>, y: Option<f64>| ratio_text(x.zip(y).and_then(|(x, y)| ratio(x, y)));
        let _ = writeln!(
            md,
            "| {np} | {edge} | {} | {} | {} | {} | {} | {} |",
            cell(normal),
            cell(managed),
            r(m, n),
            best.map_or("–".into(), |s| format!(
                "{} ({})",
                num(s.median),
                s.key.mpi
            )),
            r(n, b),
            r(m, b)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::summarize;

    fn bw(mpi: &str, rndv: Option<&str>, alloc: &str, size: u64, value: f64) -> Sample {
        let mut keys: BTreeMap<String, String> = [
            ("np".to_string(), "2".to_string()),
            ("alloc".to_string(), alloc.to_string()),
            ("size".to_string(), size.to_string()),
        ]
        .into();
        if let Some(r) = rndv {
            keys.insert("rndv".into(), r.into());
        }
        Sample {
            mpi: mpi.into(),
            bench: "protocols".into(),
            metric: "bw".into(),
            keys,
            value,
            unit: "MB/s".into(),
            rep: 1,
            procs: 2,
            oversubscribed: false,
        }
    }

    #[test]
    fn ratios_are_to_get_and_to_the_best_other() {
        let samples = [
            bw("tessel", Some("get"), "mpi", 65536, 1000.0),
            bw("tessel", Some("steal"), "mpi", 65536, 3000.0),
            bw("mpich", None, "mpi", 65536, 1500.0),
            bw("openmpi", None, "mpi", 65536, 500.0),
            bw("tessel", Some("steal"), "malloc", 65536, 800.0),
        ];
        let rows = bandwidth_rows(&summarize(&samples));
        let find = |mpi: &str, rndv: Option<&str>, alloc: &str| {
            rows.iter()
                .find(|r| r.mpi == mpi && r.rndv.as_deref() == rndv && r.alloc == alloc)
                .unwrap()
        };
        let steal = find("tessel", Some("steal"), "mpi");
        assert_eq!(steal.vs_get, Some(3.0));
        assert_eq!(steal.vs_other, Some(2.0));
        assert_eq!(steal.best_other, Some(("mpich".to_string(), 1500.0)));
        let mpich = find("mpich", None, "mpi");
        assert_eq!((mpich.vs_get, mpich.vs_other), (Some(1.5), None));
        // Another allocation has no GET run and no other MPI.
        let alone = find("tessel", Some("steal"), "malloc");
        assert_eq!((alone.vs_get, alone.vs_other), (None, None));
        let csv = bandwidth_csv(&rows);
        assert!(
            csv.contains("2,mpi,65536,tessel,steal,3000,3,mpich,1500,2\n"),
            "{csv}"
        );
    }

    #[test]
    fn stats_are_summed_per_setting_and_the_choice_named() {
        let setting = Setting {
            rndv: "adaptive",
            alloc: "mpi",
            np: 4,
        };
        let proto = |p: &str, transfers| Stat::Proto {
            rank: 1,
            proto: p.into(),
            class: 20,
            transfers,
            bytes: transfers << 20,
        };
        let run = |rep| RunStats {
            setting: setting.clone(),
            rep,
            stats: vec![
                proto("probe", 1),
                proto("steal", 9),
                proto("get", 2),
                Stat::Helper {
                    rank: 1,
                    helper: 3,
                    bytes: 1 << 21,
                },
            ],
            unread: vec![],
        };
        let runs = [run(1), run(2)];
        let mut md = String::new();
        stats_section(&mut md, &runs);
        assert!(
            md.contains("| 1 MiB | 4 | – | 18 | 2 | – | steal |"),
            "{md}"
        );
        assert!(
            md.contains("| adaptive | 4 | mpi | 1 | 3 | 2.000 |"),
            "{md}"
        );
        let csv = stats_csv(&runs);
        assert_eq!(csv.lines().count(), 9);
        assert!(csv.contains("adaptive,mpi,4,2,1,helper,,,,3,2097152\n"));
        let mut md = String::new();
        stats_section(&mut md, &[]);
        assert!(md.contains("No `tessel-stats` lines"));
    }

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(size_text(65536), "64 KiB");
        assert_eq!(size_text(64 << 20), "64 MiB");
        assert_eq!(size_text(1000), "1000 B");
    }
}
