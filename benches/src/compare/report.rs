//! The report directory: `results.json`, `results.csv`, `samples.csv`,
//! `report.md` (with links to the SVG plots).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::competitors::{Competitor, Kind, Machine};
use super::plot::Plot;
use super::run::Failure;
use super::stats::{Better, Sample, Summary, badness, geomean, keys_text, ratio};

/// Where and when the numbers were taken.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    /// UTC, ISO 8601.
    pub date: String,
    pub machine: Machine,
    pub kernel: String,
    pub cpu: String,
}

impl Environment {
    pub fn this(machine: Machine) -> Environment {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Environment {
            date: utc_now(),
            machine,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            cpu,
        }
    }
}

/// The options the numbers were taken with.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    pub np: Vec<u32>,
    pub startup_np: Vec<u32>,
    pub reps: u32,
    pub quick: bool,
    pub timeout_secs: u64,
}

/// Everything `results.json` holds.
#[derive(Debug, Serialize)]
pub struct Results<'a> {
    pub environment: &'a Environment,
    pub options: &'a Options,
    pub mpis: &'a [Competitor],
    pub failures: &'a [Failure],
    pub medians: &'a [Summary],
    pub samples: &'a [Sample],
}

/// Write the whole report into `dir` (created if needed). Paths inside
/// the workspace are written relative to its root, so that a report can
/// be shared or kept without naming the machine's directories.
pub fn write(dir: &Path, r: &Results, plots: &[Plot]) -> Result<(), String> {
    let json = serde_json::to_string_pretty(r).map_err(|e| format!("results.json: {e}"))?;
    write_files(
        dir,
        [
            ("results.json", json + "\n"),
            ("results.csv", medians_csv(r.medians)),
            ("samples.csv", samples_csv(r.samples)),
            ("report.md", markdown(r, plots)),
        ],
    )
}

/// Write `(name, text)` files into `dir`, with the workspace's root taken
/// out of every path the texts name.
pub fn write_files<const N: usize>(dir: &Path, files: [(&str, String); N]) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|p| format!("{}/", p.display()));
    for (name, text) in files {
        let text = match &root {
            Some(root) => text.replace(root.as_str(), ""),
            None => text,
        };
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))?;
    }
    Ok(())
}

/// `results.csv`: one line per median.
pub fn medians_csv(medians: &[Summary]) -> String {
    let mut out = String::from("mpi,bench,metric,keys,unit,median,min,max,n,oversubscribed\n");
    for s in medians {
        let k = &s.key;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            k.mpi,
            k.bench,
            k.metric,
            k.keys_text(),
            s.unit,
            s.median,
            s.min,
            s.max,
            s.n,
            s.oversubscribed
        );
    }
    out
}

/// `samples.csv`: one line per sample.
pub fn samples_csv(samples: &[Sample]) -> String {
    let mut out = String::from("mpi,bench,metric,keys,unit,value,rep,procs,oversubscribed\n");
    for s in samples {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            s.mpi,
            s.bench,
            s.metric,
            keys_text(&s.keys),
            s.unit,
            s.value,
            s.rep,
            s.procs,
            s.oversubscribed
        );
    }
    out
}

/// How to read a summary row's ratios.
fn direction(unit: &str, better: Better) -> String {
    match better {
        Better::Higher => format!("{unit}: > 1 Tessel faster"),
        Better::Lower if unit.ends_with("iB") || unit == "B" => {
            format!("{unit}: < 1 Tessel smaller")
        }
        Better::Lower => format!("{unit}: < 1 Tessel faster"),
    }
}

/// A number with about four significant digits.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// Order for rows: numbers by value, words by text.
fn row_order(keys: &BTreeMap<String, String>) -> Vec<(String, f64, String)> {
    keys.iter()
        .map(|(k, v)| (k.clone(), v.parse().unwrap_or(f64::INFINITY), v.clone()))
        .collect()
}

fn cmp_rows(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> std::cmp::Ordering {
    let (a, b) = (row_order(a), row_order(b));
    for (x, y) in a.iter().zip(&b) {
        let o =
            x.0.cmp(&y.0)
                .then(x.1.total_cmp(&y.1))
                .then_with(|| x.2.cmp(&y.2));
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Medians by (bench, metric) then keys then MPI.
type Table<'a> = BTreeMap<(String, String), BTreeMap<String, BTreeMap<String, &'a Summary>>>;

fn tables(medians: &[Summary]) -> Table<'_> {
    let mut t: Table = BTreeMap::new();
    for s in medians {
        t.entry((s.key.bench.clone(), s.key.metric.clone()))
            .or_default()
            .entry(s.key.keys_text())
            .or_default()
            .insert(s.key.mpi.clone(), s);
    }
    t
}

/// One row of the summary: one comparison of Tessel with each competitor.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// `pingpong latency`, `startup init_time mode=sparse`, ...
    pub what: String,
    pub oversubscribed: bool,
    pub unit: String,
    pub better: Better,
    /// Per competitor: ratios Tessel/other with the keys they are at.
    pub ratios: BTreeMap<String, Vec<(f64, String)>>,
}

/// Ratios of Tessel's medians to each competitor's, grouped by benchmark,
/// metric, the keys that are words (mode, variant) and oversubscription;
/// numeric keys (size, np, edge) are the points of a row.
pub fn summary_rows(medians: &[Summary], competitors: &[&str]) -> Vec<SummaryRow> {
    let mut rows: BTreeMap<(String, String, String, bool), SummaryRow> = BTreeMap::new();
    let by_key: BTreeMap<(&str, &str, String), BTreeMap<&str, &Summary>> =
        medians.iter().fold(BTreeMap::new(), |mut m, s| {
            m.entry((
                s.key.bench.as_str(),
                s.key.metric.as_str(),
                s.key.keys_text(),
            ))
            .or_default()
            .insert(s.key.mpi.as_str(), s);
            m
        });
    for ((bench, metric, keys), per_mpi) in &by_key {
        let Some(t) = per_mpi.get(Kind::Tessel.name()) else {
            continue;
        };
        let Some(better) = Better::of_unit(&t.unit) else {
            continue;
        };
        let words: Vec<String> = t
            .key
            .keys
            .iter()
            .filter(|(_, v)| v.parse::<f64>().is_err())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for &c in competitors {
            let Some(o) = per_mpi.get(c) else { continue };
            let Some(r) = ratio(t.median, o.median) else {
                continue;
            };
            let oversub = t.oversubscribed || o.oversubscribed;
            let id = (
                bench.to_string(),
                metric.to_string(),
                words.join(" "),
                oversub,
            );
            let row = rows.entry(id).or_insert_with(|| SummaryRow {
                what: [bench.to_string(), metric.to_string()]
                    .into_iter()
                    .chain(words.clone())
                    .collect::<Vec<_>>()
                    .join(" "),
                oversubscribed: oversub,
                unit: t.unit.clone(),
                better,
                ratios: BTreeMap::new(),
            });
            row.ratios
                .entry(c.to_string())
                .or_default()
                .push((r, keys.clone()));
        }
    }
    rows.into_values().collect()
}

fn markdown(r: &Results, plots: &[Plot]) -> String {
    let mut md = String::new();
    let env = r.environment;
    let o = r.options;
    let _ = writeln!(md, "# Tessel against other MPIs\n");
    let _ = writeln!(
        md,
        "{} on {} ({} cores{}), Linux {}. Processes: {:?} (ping-pong: 2), start-up: {:?}; \
         {} repetition(s), run alternately; medians{}.\n",
        env.date,
        env.cpu,
        env.machine.cores,
        if env.machine.root { ", as root" } else { "" },
        env.kernel,
        o.np,
        o.startup_np,
        o.reps,
        if o.quick {
            "; **--quick: tiny sizes, the numbers prove only that the harness works**"
        } else {
            ""
        },
    );

    mpis_section(&mut md, r.mpis);
    let competitors: Vec<&str> = r
        .mpis
        .iter()
        .filter(|c| c.ready() && c.kind != Kind::Tessel)
        .map(|c| c.name)
        .collect();
    summary(&mut md, r.medians, &competitors);
    reference(&mut md, r.medians);
    per_benchmark(&mut md, r.medians, r.mpis, &competitors);

    if !plots.is_empty() {
        md.push_str("\n## Plots\n\n");
        for p in plots {
            let _ = writeln!(md, "- [{}]({})", p.title, p.file);
        }
        md.push('\n');
        for p in plots {
            let _ = writeln!(md, "![{}]({})\n", p.title, p.file);
        }
    }
    failures_section(&mut md, r.failures);
    md.push_str(
        "\nRaw samples: `samples.csv`, `results.json`; medians with min and max: `results.csv`.\n",
    );
    md
}

/// The `## MPIs` section: version, compiler, library and launch settings
/// of each competitor that ran, and why the others were skipped.
pub fn mpis_section(md: &mut String, mpis: &[Competitor]) {
    md.push_str(
        "## MPIs\n\n| MPI | version | compiler | library loaded | launch, processes ≤ cores | launch, processes > cores |\n|---|---|---|---|---|---|\n",
    );
    for c in mpis.iter().filter(|c| c.ready()) {
        let cc =
            c.cc.iter()
                .chain(&c.cc_after)
                .cloned()
                .collect::<Vec<_>>()
                .join(" ");
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | `{}` | `{}` | `{}` |",
            c.name,
            c.version,
            cc,
            c.library.as_deref().unwrap_or("?"),
            c.settings_fit,
            c.settings_oversubscribed
        );
    }
    md.push_str(
        "\nEvery run has `LD_LIBRARY_PATH` and `LD_PRELOAD` unset: each program loads the \
         library it was linked with.\n",
    );
    for c in mpis.iter().filter(|c| !c.ready()) {
        let _ = writeln!(
            md,
            "\n**{} skipped**: {}",
            c.name,
            c.skipped.as_deref().unwrap_or("")
        );
    }
}

/// The `## Failed runs` table (nothing when none failed).
pub fn failures_section(md: &mut String, failures: &[Failure]) {
    if !failures.is_empty() {
        md.push_str("\n## Failed runs\n\n| MPI | run | rep | reason |\n|---|---|---|---|\n");
        for f in failures {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                f.mpi,
                f.job,
                if f.rep == 0 {
                    "–".to_string()
                } else {
                    f.rep.to_string()
                },
                f.reason.replace('|', "/")
            );
        }
    }
}

fn summary(md: &mut String, medians: &[Summary], competitors: &[&str]) {
    md.push_str("\n## Summary: Tessel vs each competitor\n\n");
    md.push_str(
        "Ratios of medians, always **Tessel / other**. For times and memory, below 1 means Tessel \
         is faster (smaller); for bandwidths, above 1 means Tessel is faster. Each cell is the \
         geometric mean over the row's sizes and process counts, with the range in brackets. \
         Rows marked *oversubscribed* ran more processes than cores.\n\n",
    );
    if competitors.is_empty() {
        md.push_str("No competitor ran: nothing to compare.\n");
        return;
    }
    let rows = summary_rows(medians, competitors);
    if rows.is_empty() {
        md.push_str("No ratios: Tessel and the competitors have no measurement in common.\n");
        return;
    }
    let _ = write!(md, "| benchmark | direction |");
    for c in competitors {
        let _ = write!(md, " vs {c} |");
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(competitors.len()));
    md.push('\n');
    let mut worst: BTreeMap<&str, (f64, f64, String)> = BTreeMap::new();
    for row in &rows {
        let dir = direction(&row.unit, row.better);
        let what = if row.oversubscribed {
            format!("{} (*oversubscribed*)", row.what)
        } else {
            row.what.clone()
        };
        let _ = write!(md, "| {what} | {dir} |");
        for c in competitors {
            let cell = row.ratios.get(*c).map_or("–".to_string(), |rs| {
                let vals: Vec<f64> = rs.iter().map(|(r, _)| *r).collect();
                let g = geomean(&vals).unwrap_or(f64::NAN);
                let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for (r, keys) in rs {
                    let b = badness(*r, row.better);
                    if worst.get(c).is_none_or(|w| b > w.0) {
                        worst.insert(c, (b, *r, format!("{} {keys}", row.what)));
                    }
                }
                let mark = if badness(g, row.better) > 1.0 {
                    " ⚠"
                } else {
                    ""
                };
                if format!("{lo:.2}") == format!("{hi:.2}") {
                    format!("{g:.2}{mark}")
                } else {
                    format!("{g:.2} ({lo:.2}–{hi:.2}){mark}")
                }
            });
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    md.push_str("\n⚠: Tessel is worse (slower, or more memory) on that row's geometric mean.\n\n");
    for (c, (b, r, what)) in &worst {
        let verdict = if *b > 1.0 {
            format!("Tessel {b:.2}× worse")
        } else {
            format!("Tessel still {:.2}× better", 1.0 / b)
        };
        let _ = writeln!(
            md,
            "- Worst ratio vs {c}: {r:.2} ({verdict}) at {}",
            what.trim()
        );
    }
}

fn reference(md: &mut String, medians: &[Summary]) {
    let find = |mpi: &str, bench: &str, metric: &str, size: Option<&str>| {
        medians.iter().find(|s| {
            s.key.mpi == mpi
                && s.key.bench == bench
                && s.key.metric == metric
                && size.is_none_or(|z| s.key.keys.get("size").map(String::as_str) == Some(z))
        })
    };
    md.push_str("\n## Physical reference\n\n");
    let Some(line) = find("reference", "reference", "cacheline_pingpong", None) else {
        md.push_str("No reference measurements (see failed runs).\n");
        return;
    };
    let _ = writeln!(
        md,
        "Cache-line ping-pong between two cores: {} ns (half round trip).",
        num(line.median)
    );
    if let Some(t) = find("tessel", "pingpong", "latency", Some("0")) {
        let _ = writeln!(
            md,
            "Tessel's 0-byte latency: {} us = **{:.1}×** the cache-line ping-pong.",
            num(t.median),
            t.median * 1000.0 / line.median
        );
    }
    if let Some(h) = find("reference", "reference", "yield_handover", None) {
        let _ = writeln!(
            md,
            "\nTwo processes on one core handing a counter back and forth, each \
             yielding (`sched_yield`) until it is its turn: {} us per hand-over (one \
             context switch), the least a process waiting for another on its own core \
             pays.",
            num(h.median)
        );
        // Barriers at more processes than this machine's 2 cores, in
        // hand-overs, for every MPI that ran them.
        for np in ["4", "8"] {
            let barriers: Vec<String> = medians
                .iter()
                .filter(|s| {
                    s.key.bench == "colls"
                        && s.key.metric == "barrier"
                        && s.key.keys.get("np").map(String::as_str) == Some(np)
                        && s.key.keys.len() == 2
                })
                .map(|b| {
                    format!(
                        "{} {} us = **{:.1}**",
                        b.key.mpi,
                        num(b.median),
                        b.median / h.median
                    )
                })
                .collect();
            if !barriers.is_empty() {
                let _ = writeln!(
                    md,
                    "Barrier at {np} processes, in hand-overs: {}.",
                    barriers.join("; ")
                );
            }
        }
    }
    md.push_str(
        "\n| size | memcpy (MB/s) | Tessel bw_uni (MB/s) | bw_uni / memcpy | Tessel bw_bi (MB/s) | bw_bi / memcpy |\n|---|---|---|---|---|---|\n",
    );
    let mut copies: Vec<&Summary> = medians
        .iter()
        .filter(|s| s.key.mpi == "reference" && s.key.metric == "memcpy")
        .collect();
    copies.sort_by(|a, b| cmp_rows(&a.key.keys, &b.key.keys));
    for m in copies {
        let size = m.key.keys.get("size").cloned().unwrap_or_default();
        let _ = write!(md, "| {size} | {} |", num(m.median));
        for metric in ["bw_uni", "bw_bi"] {
            match find("tessel", "pingpong", metric, Some(&size)) {
                Some(t) => {
                    let _ = write!(md, " {} | {:.2} |", num(t.median), t.median / m.median);
                }
                None => md.push_str(" – | – |"),
            }
        }
        md.push('\n');
    }
}

fn per_benchmark(md: &mut String, medians: &[Summary], mpis: &[Competitor], competitors: &[&str]) {
    md.push_str("\n## Per benchmark (medians)\n");
    let names: Vec<&str> = mpis.iter().filter(|c| c.ready()).map(|c| c.name).collect();
    for ((bench, metric), rows) in tables(medians) {
        if bench == "reference" {
            continue;
        }
        let unit = rows
            .values()
            .flat_map(|m| m.values())
            .next()
            .map_or("", |s| s.unit.as_str())
            .to_string();
        let shown: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| rows.values().any(|m| m.contains_key(*n)))
            .collect();
        let ratio_of: Vec<&str> = if shown.contains(&"tessel") && Better::of_unit(&unit).is_some() {
            competitors
                .iter()
                .copied()
                .filter(|c| shown.contains(c))
                .collect()
        } else {
            Vec::new()
        };
        let _ = write!(md, "\n### {bench} {metric} ({unit})\n\n| keys |");
        for n in &shown {
            let _ = write!(md, " {n} |");
        }
        for c in &ratio_of {
            let _ = write!(md, " tessel/{c} |");
        }
        let _ = writeln!(md, "\n|---|{}", "---|".repeat(shown.len() + ratio_of.len()));
        let mut ordered: Vec<(&String, &BTreeMap<String, &Summary>)> = rows.iter().collect();
        ordered.sort_by(|a, b| {
            let ka = &a.1.values().next().expect("row has a value").key.keys;
            let kb = &b.1.values().next().expect("row has a value").key.keys;
            cmp_rows(ka, kb)
        });
        for (keys, per_mpi) in ordered {
            let over = per_mpi.values().any(|s| s.oversubscribed);
            let _ = write!(
                md,
                "| {}{} |",
                if keys.is_empty() { "–" } else { keys },
                if over { " (*oversubscribed*)" } else { "" }
            );
            for n in &shown {
                let cell = per_mpi.get(*n).map_or("–".into(), |s| num(s.median));
                let _ = write!(md, " {cell} |");
            }
            for c in &ratio_of {
                let r = per_mpi
                    .get("tessel")
                    .zip(per_mpi.get(*c))
                    .and_then(|(t, o)| ratio(t.median, o.median));
                let _ = write!(md, " {} |", r.map_or("–".into(), |r| format!("{r:.2}")));
            }
            md.push('\n');
        }
    }
    let unsupported: BTreeSet<&str> = medians
        .iter()
        .filter(|s| s.key.metric == "unsupported")
        .map(|s| s.key.mpi.as_str())
        .collect();
    if !unsupported.is_empty() {
        let _ = writeln!(
            md,
            "\n`unsupported` rows: {} has no Sessions (MPI < 4) for that start-up mode.",
            unsupported.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
}

/// The current time in UTC as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::competitors::Kind;
    use crate::compare::stats::summarize;

    fn s(
        mpi: &str,
        bench: &str,
        metric: &str,
        keys: &[(&str, &str)],
        value: f64,
        unit: &str,
        procs: u32,
    ) -> Sample {
        Sample {
            mpi: mpi.into(),
            bench: bench.into(),
            metric: metric.into(),
            keys: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            unit: unit.into(),
            rep: 1,
            procs,
            oversubscribed: procs > 2,
        }
    }

    #[test]
    fn summary_rows_group_words_and_oversubscription() {
        let samples = [
            s(
                "tessel",
                "pingpong",
                "latency",
                &[("size", "0")],
                1.0,
                "us",
                2,
            ),
            s(
                "mpich",
                "pingpong",
                "latency",
                &[("size", "0")],
                2.0,
                "us",
                2,
            ),
            s(
                "tessel",
                "pingpong",
                "latency",
                &[("size", "8")],
                3.0,
                "us",
                2,
            ),
            s(
                "mpich",
                "pingpong",
                "latency",
                &[("size", "8")],
                1.0,
                "us",
                2,
            ),
            s(
                "tessel",
                "pingpong",
                "bw_uni",
                &[("size", "8")],
                10.0,
                "MB/s",
                2,
            ),
            s(
                "mpich",
                "pingpong",
                "bw_uni",
                &[("size", "8")],
                5.0,
                "MB/s",
                2,
            ),
            s(
                "tessel",
                "startup",
                "init_time",
                &[("mode", "init"), ("np", "2")],
                4.0,
                "ms",
                2,
            ),
            s(
                "mpich",
                "startup",
                "init_time",
                &[("mode", "init"), ("np", "2")],
                8.0,
                "ms",
                2,
            ),
            s(
                "tessel",
                "startup",
                "init_time",
                &[("mode", "init"), ("np", "8")],
                4.0,
                "ms",
                8,
            ),
            s(
                "mpich",
                "startup",
                "init_time",
                &[("mode", "init"), ("np", "8")],
                2.0,
                "ms",
                8,
            ),
            s(
                "mpich",
                "startup",
                "unsupported",
                &[("mode", "session"), ("np", "2")],
                0.0,
                "none",
                2,
            ),
            s(
                "tessel",
                "startup",
                "unsupported",
                &[("mode", "session"), ("np", "2")],
                0.0,
                "none",
                2,
            ),
        ];
        let rows = summary_rows(&summarize(&samples), &["mpich", "openmpi"]);
        let find = |what: &str, over: bool| {
            rows.iter()
                .find(|r| r.what == what && r.oversubscribed == over)
                .unwrap()
        };
        let lat = find("pingpong latency", false);
        assert_eq!(lat.better, Better::Lower);
        let vals: Vec<f64> = lat.ratios["mpich"].iter().map(|r| r.0).collect();
        assert_eq!(vals, [0.5, 3.0]);
        assert_eq!(find("pingpong bw_uni", false).ratios["mpich"][0].0, 2.0);
        assert_eq!(
            find("startup init_time mode=init", false).ratios["mpich"][0].0,
            0.5
        );
        assert_eq!(
            find("startup init_time mode=init", true).ratios["mpich"][0].0,
            2.0
        );
        assert!(rows.iter().all(|r| !r.what.contains("unsupported")));
        assert!(rows.iter().all(|r| !r.ratios.contains_key("openmpi")));
        assert_eq!(rows.len(), 4);
    }

    #[test]
    fn writes_every_file_and_names_every_competitor() {
        let mut samples = Vec::new();
        for (mpi, f) in [("tessel", 1.0), ("mpich", 2.0), ("openmpi", 3.0)] {
            for size in ["0", "8", "4096"] {
                samples.push(s(mpi, "pingpong", "latency", &[("size", size)], f, "us", 2));
                samples.push(s(
                    mpi,
                    "pingpong",
                    "bw_uni",
                    &[("size", size)],
                    100.0 / f,
                    "MB/s",
                    2,
                ));
            }
            for np in [2, 4] {
                let n = np.to_string();
                let keys = [("np", n.as_str()), ("edge", "64"), ("variant", "total")];
                samples.push(s(mpi, "stencil", "exchange", &keys, f * 10.0, "us", np));
            }
            let keys = [("np", "4"), ("size", "0")];
            samples.push(s(mpi, "colls", "barrier", &keys, f * 5.0, "us", 4));
        }
        samples.push(s(
            "reference",
            "reference",
            "cacheline_pingpong",
            &[],
            70.0,
            "ns",
            1,
        ));
        samples.push(s(
            "reference",
            "reference",
            "yield_handover",
            &[],
            2.5,
            "us",
            1,
        ));
        samples.push(s(
            "reference",
            "reference",
            "memcpy",
            &[("size", "4096")],
            9000.0,
            "MB/s",
            1,
        ));
        let mut mpis: Vec<Competitor> = [Kind::Tessel, Kind::Mpich, Kind::OpenMpi]
            .into_iter()
            .map(Competitor::stand_in)
            .collect();
        let mut skipped = Competitor::stand_in(Kind::MpichPypi);
        skipped.skipped = Some("no network".into());
        mpis.push(skipped);
        let dir = std::env::temp_dir().join(format!("tessel-compare-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let medians = summarize(&samples);
        let plots = crate::compare::plot::write_all(&dir, &medians).unwrap();
        let env = Environment::this(Machine {
            cores: 2,
            root: false,
        });
        let options = Options {
            np: vec![2, 4],
            startup_np: vec![1],
            reps: 1,
            quick: true,
            timeout_secs: 1,
        };
        let results = Results {
            environment: &env,
            options: &options,
            mpis: &mpis,
            failures: &[],
            medians: &medians,
            samples: &samples,
        };
        write(&dir, &results, &plots).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        for file in [
            "results.json",
            "results.csv",
            "samples.csv",
            "pingpong_latency.svg",
            "stencil.svg",
        ] {
            assert!(dir.join(file).is_file(), "{file}");
            assert!(
                file.ends_with(".svg") == md.contains(&format!("]({file})")),
                "{file}"
            );
        }
        assert!(md.contains("| vs mpich | vs openmpi |"), "{md}");
        assert!(md.contains("**mpich-pypi skipped**: no network"));
        assert!(md.contains("(*oversubscribed*)"));
        // Tessel's 1 us against 70 ns.
        assert!(md.contains("**14.3×** the cache-line ping-pong"), "{md}");
        assert!(md.contains("2.500 us per hand-over"), "{md}");
        assert!(
            md.contains("Barrier at 4 processes, in hand-overs: ")
                && md.contains("tessel 5.000 us = **2.0**")
                && md.contains("openmpi 15.0 us = **6.0**"),
            "{md}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap())
                .unwrap();
        assert_eq!(json["samples"].as_array().unwrap().len(), samples.len());
        assert_eq!(json["mpis"][3]["skipped"], "no network");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rows_sort_numerically() {
        let k = |v: &str| BTreeMap::from([("size".to_string(), v.to_string())]);
        let mut v = vec![k("1024"), k("16"), k("0"), k("4")];
        v.sort_by(cmp_rows);
        assert_eq!(v, [k("0"), k("4"), k("16"), k("1024")]);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
    }

    #[test]
    fn csv_has_one_line_per_median() {
        let samples = [s(
            "tessel",
            "colls",
            "bcast",
            &[("np", "2"), ("size", "8")],
            2.0,
            "us",
            2,
        )];
        let csv = medians_csv(&summarize(&samples));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1], "tessel,colls,bcast,np=2 size=8,us,2,2,2,1,false");
    }
}
