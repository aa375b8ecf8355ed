//! SVG plots of the medians (plotters' SVG backend).
//!
//! Axes are logarithmic: sizes and process counts in powers of two, times
//! and bandwidths in powers of ten. Points at 0 (the 0-byte ping-pong) have
//! no place on a log axis and are left out of the plots (not the tables).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plotters::prelude::*;

use super::stats::Summary;

/// A plot written into the report directory.
#[derive(Debug, Clone)]
pub struct Plot {
    pub file: String,
    pub title: String,
}

/// What one plot shows: one line per MPI and value of the keys that vary
/// among the selected medians (other than x).
pub struct Spec<'a> {
    pub file: String,
    pub title: String,
    /// Key whose value is the x coordinate (`size` or `np`).
    pub x_key: &'a str,
    pub y_label: String,
    pub select: Box<dyn Fn(&Summary) -> bool + 'a>,
}

impl std::fmt::Debug for Spec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec")
            .field("file", &self.file)
            .field("x_key", &self.x_key)
            .finish_non_exhaustive()
    }
}

/// File-name prefixes of `compare`'s plots.
const PREFIXES: [&str; 5] = ["pingpong_", "rma_", "stencil", "colls_", "startup_"];

/// Write every plot the medians allow into `dir`; returns them in report
/// order. Plots without points are not written.
pub fn write_all(dir: &Path, medians: &[Summary]) -> Result<Vec<Plot>, String> {
    write_specs(dir, medians, specs(medians), &PREFIXES)
}

/// Write the plots of `specs` that have points into `dir`, after removing
/// the SVG files of an earlier run whose names start with one of
/// `prefixes`.
pub fn write_specs(
    dir: &Path,
    medians: &[Summary],
    specs: Vec<Spec>,
    prefixes: &[&str],
) -> Result<Vec<Plot>, String> {
    remove_old(dir, prefixes);
    let mut plots = Vec::new();
    for spec in specs {
        let series = series(medians, &spec);
        if series.is_empty() {
            continue;
        }
        draw(&dir.join(&spec.file), &spec, &series).map_err(|e| format!("{}: {e}", spec.file))?;
        plots.push(Plot {
            file: spec.file,
            title: spec.title,
        });
    }
    Ok(plots)
}

/// Plots of an earlier run in `dir` (by their file-name prefixes only), so
/// that none outlives the data it showed.
fn remove_old(dir: &Path, prefixes: &[&str]) {
    let ours = |name: &str| name.ends_with(".svg") && prefixes.iter().any(|p| name.starts_with(p));
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_str().is_some_and(ours) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn is(s: &Summary, bench: &str, metric: &str) -> bool {
    s.key.bench == bench && s.key.metric == metric
}

fn specs(medians: &[Summary]) -> Vec<Spec<'static>> {
    let mut v = vec![Spec {
        file: "pingpong_latency.svg".into(),
        title: "Ping-pong latency (half round trip) vs message size".into(),
        x_key: "size",
        y_label: "latency (us)".into(),
        select: Box::new(|s| is(s, "pingpong", "latency")),
    }];
    for (metric, what) in [("bw_uni", "unidirectional"), ("bw_bi", "bidirectional")] {
        v.push(Spec {
            file: format!("pingpong_{metric}.svg"),
            title: format!("Ping-pong {what} bandwidth vs message size (memcpy for reference)"),
            x_key: "size",
            y_label: "bandwidth (MB/s)".into(),
            select: Box::new(move |s| is(s, "pingpong", metric) || is(s, "reference", "memcpy")),
        });
    }
    for (metric, what, y_label) in [
        (
            "put_latency",
            "MPI_Put + MPI_Win_flush latency",
            "latency (us)",
        ),
        (
            "get_latency",
            "MPI_Get + MPI_Win_flush latency",
            "latency (us)",
        ),
        ("put_bw", "MPI_Put bandwidth", "bandwidth (MB/s)"),
        ("get_bw", "MPI_Get bandwidth", "bandwidth (MB/s)"),
    ] {
        v.push(Spec {
            file: format!("rma_{metric}.svg"),
            title: format!("{what} vs message size"),
            x_key: "size",
            y_label: y_label.into(),
            select: Box::new(move |s| is(s, "rma", metric)),
        });
    }
    v.push(Spec {
        file: "stencil.svg".into(),
        title: "3-D stencil halo exchange time vs processes".into(),
        x_key: "np",
        y_label: "time per exchange (us)".into(),
        select: Box::new(|s| s.key.bench == "stencil"),
    });
    let colls: BTreeSet<String> = medians
        .iter()
        .filter(|s| s.key.bench == "colls")
        .map(|s| s.key.metric.clone())
        .collect();
    for metric in colls {
        v.push(Spec {
            file: format!("colls_{metric}.svg"),
            title: format!("{metric} time vs processes"),
            x_key: "np",
            y_label: "time (us)".into(),
            select: Box::new(move |s| is(s, "colls", &metric)),
        });
    }
    for (metric, what, unit) in [
        ("init_time", "Start-up time", "ms"),
        ("pss", "Memory (sum of PSS)", "MiB"),
    ] {
        v.push(Spec {
            file: format!("startup_{metric}.svg"),
            title: format!("{what} vs processes, per start-up mode"),
            x_key: "np",
            y_label: format!("{metric} ({unit})"),
            select: Box::new(move |s| is(s, "startup", metric)),
        });
    }
    v
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

/// Points per line: one line per MPI and value of the keys that vary
/// (other than x), sorted by x.
fn series(medians: &[Summary], spec: &Spec) -> Series {
    let chosen: Vec<&Summary> = medians.iter().filter(|s| (spec.select)(s)).collect();
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in &chosen {
        for (k, v) in &s.key.keys {
            values.entry(k).or_default().insert(v);
        }
    }
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in chosen {
        let x = s
            .key
            .keys
            .get(spec.x_key)
            .and_then(|x| x.parse::<f64>().ok());
        let Some(x) = x.filter(|x| *x > 0.0) else {
            continue;
        };
        if s.median <= 0.0 {
            continue;
        }
        let mut label = match s.key.bench.as_str() {
            "reference" => format!("{} (reference)", s.key.metric),
            _ => s.key.mpi.clone(),
        };
        for (k, v) in &s.key.keys {
            if k != spec.x_key && values[k.as_str()].len() > 1 {
                label.push_str(&format!(" {k}={v}"));
            }
        }
        lines
            .entry(label)
            .or_default()
            .push((x.log2(), s.median.log10()));
    }
    lines
        .into_iter()
        .map(|(label, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (label, pts)
        })
        .collect()
}

/// The range of `values` with some room, never empty.
fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let pad = ((hi - lo) * 0.05).max(0.25);
    (lo - pad)..(hi + pad)
}

/// `2^v` as a size or count, only at whole powers.
fn pow2_label(v: f64, bytes: bool) -> String {
    if (v - v.round()).abs() > 1e-6 || v.round() < 0.0 {
        return String::new();
    }
    let n = 2u64.pow(v.round() as u32);
    if !bytes {
        return n.to_string();
    }
    match n {
        _ if n >= 1 << 20 => format!("{} MiB", n >> 20),
        _ if n >= 1 << 10 => format!("{} KiB", n >> 10),
        _ => format!("{n} B"),
    }
}

/// `10^v` with three significant digits.
fn pow10_label(v: f64) -> String {
    let x = 10f64.powf(v);
    let digits = (2 - x.log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn draw(path: &Path, spec: &Spec, series: &Series) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let pts = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let (xr, yr) = (range(pts().map(|p| p.0)), range(pts().map(|p| p.1)));
    let mut chart = ChartBuilder::on(&root)
        .caption(&spec.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(xr, yr)?;
    let bytes = spec.x_key == "size";
    chart
        .configure_mesh()
        .x_desc(if bytes {
            "message size (bytes)"
        } else {
            "processes"
        })
        .y_desc(&spec.y_label)
        .x_label_formatter(&|v| pow2_label(*v, bytes))
        .y_label_formatter(&|v| pow10_label(*v))
        .draw()?;
    for (i, (label, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_only_at_whole_powers() {
        assert_eq!(pow2_label(10.0, true), "1 KiB");
        assert_eq!(pow2_label(24.0, true), "16 MiB");
        assert_eq!(pow2_label(3.0, false), "8");
        assert_eq!(pow2_label(2.5, false), "");
        assert_eq!(pow10_label(0.0), "1");
        assert_eq!(pow10_label(3.0), "1000");
        assert_eq!(pow10_label(-1.0), "0.1");
        assert_eq!(pow10_label(1.5), "31.6");
        assert_eq!(pow10_label(2.5), "316");
    }
}
