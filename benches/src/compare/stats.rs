//! Samples, medians and ratios.
//!
//! A [`Sample`] is one `result` line of one run; [`summarize`] groups the
//! samples of the same MPI, benchmark, metric and keys and takes their
//! median, minimum and maximum; [`ratio`] compares two medians with the
//! direction the unit implies.

use std::collections::BTreeMap;

use serde::Serialize;

/// One measurement as a program printed it, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// Competitor name (`tessel`, `mpich`, ...; `reference` for `reference.c`).
    pub mpi: String,
    pub bench: String,
    pub metric: String,
    /// The line's other `key=value` pairs, in key order.
    pub keys: BTreeMap<String, String>,
    pub value: f64,
    pub unit: String,
    /// Repetition (1-based).
    pub rep: u32,
    /// Processes in the job that printed it.
    pub procs: u32,
    /// More processes than cores in that job.
    pub oversubscribed: bool,
}

/// What a `result` line says, before the harness adds where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultLine {
    pub bench: String,
    pub metric: String,
    pub keys: BTreeMap<String, String>,
    pub value: f64,
    pub unit: String,
}

/// Parse one line of a program's output: `Ok(None)` for lines that are not
/// `result ...` lines (ignored by contract), an error for malformed ones.
pub fn parse_line(line: &str) -> Result<Option<ResultLine>, String> {
    let Some(rest) = line.trim_end().strip_prefix("result ") else {
        return Ok(None);
    };
    let mut fields = BTreeMap::new();
    for word in rest.split_whitespace() {
        let (k, v) = word
            .split_once('=')
            .ok_or_else(|| format!("`{word}` is not key=value in: {line}"))?;
        if k.is_empty() || v.is_empty() {
            return Err(format!("empty key or value `{word}` in: {line}"));
        }
        if fields.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("key `{k}` twice in: {line}"));
        }
    }
    let mut take = |k: &str| {
        fields
            .remove(k)
            .ok_or_else(|| format!("no `{k}=` in: {line}"))
    };
    let bench = take("bench")?;
    let metric = take("metric")?;
    let unit = take("unit")?;
    let raw = take("value")?;
    let value = raw
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("value `{raw}` is not a finite number in: {line}"))?;
    Ok(Some(ResultLine {
        bench,
        metric,
        keys: fields,
        value,
        unit,
    }))
}

/// Median of `values` (mean of the two middle ones for an even count);
/// `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Identifies one measured quantity of one MPI across repetitions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SeriesKey {
    pub mpi: String,
    pub bench: String,
    pub metric: String,
    pub keys: BTreeMap<String, String>,
}

impl SeriesKey {
    /// The keys as `k=v k=v` (empty when there are none).
    pub fn keys_text(&self) -> String {
        keys_text(&self.keys)
    }
}

/// `k=v k=v` in key order.
pub fn keys_text(keys: &BTreeMap<String, String>) -> String {
    keys.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Median, minimum and maximum of one [`SeriesKey`]'s samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    #[serde(flatten)]
    pub key: SeriesKey,
    pub unit: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
    pub oversubscribed: bool,
}

/// Group samples by MPI, benchmark, metric and keys; one [`Summary`] per
/// group, in key order.
pub fn summarize(samples: &[Sample]) -> Vec<Summary> {
    let mut groups: BTreeMap<SeriesKey, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        let key = SeriesKey {
            mpi: s.mpi.clone(),
            bench: s.bench.clone(),
            metric: s.metric.clone(),
            keys: s.keys.clone(),
        };
        groups.entry(key).or_default().push(s);
    }
    groups
        .into_iter()
        .filter_map(|(key, group)| {
            let values: Vec<f64> = group.iter().map(|s| s.value).collect();
            Some(Summary {
                unit: group[0].unit.clone(),
                median: median(&values)?,
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                n: values.len(),
                oversubscribed: group.iter().any(|s| s.oversubscribed),
                key,
            })
        })
        .collect()
}

/// Which way a unit is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Better {
    /// Times and memory: less is better.
    Lower,
    /// Bandwidths: more is better.
    Higher,
}

impl Better {
    /// From the unit of a `result` line; `None` for units without an order
    /// (like `none` of an unsupported mode).
    pub fn of_unit(unit: &str) -> Option<Better> {
        match unit {
            "ns" | "us" | "ms" | "s" | "B" | "KiB" | "MiB" | "GiB" => Some(Better::Lower),
            _ if unit.ends_with("/s") => Some(Better::Higher),
            _ => None,
        }
    }

    /// How to read a ratio Tessel/other of this direction.
    pub fn reading(self) -> &'static str {
        match self {
            Better::Lower => "Tessel/other; below 1: Tessel better",
            Better::Higher => "Tessel/other; above 1: Tessel better",
        }
    }
}

/// Tessel's median over the other's: always Tessel/other, so its reading
/// depends on [`Better::of_unit`]. `None` when either is not positive.
pub fn ratio(tessel: f64, other: f64) -> Option<f64> {
    (tessel > 0.0 && other > 0.0).then(|| tessel / other)
}

/// Geometric mean (the mean of ratios that treats 2x and 0.5x alike).
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let logs: f64 = values.iter().map(|v| v.ln()).sum();
    Some((logs / values.len() as f64).exp())
}

/// The ratio as "how much worse Tessel is", ≥ 1 when Tessel is worse: used
/// to find the worst ratio of a comparison whatever its direction.
pub fn badness(ratio: f64, better: Better) -> f64 {
    match better {
        Better::Lower => ratio,
        Better::Higher => 1.0 / ratio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_result_line_with_keys() {
        let l = parse_line("result bench=pingpong metric=latency size=1024 value=0.52 unit=us\n")
            .unwrap()
            .unwrap();
        assert_eq!(l.bench, "pingpong");
        assert_eq!(l.metric, "latency");
        assert_eq!(l.unit, "us");
        assert_eq!(l.value, 0.52);
        assert_eq!(keys_text(&l.keys), "size=1024");
    }

    #[test]
    fn keys_are_ordered_whatever_the_line_order() {
        let l = parse_line("result unit=us np=4 value=3 bench=colls size=8 metric=bcast")
            .unwrap()
            .unwrap();
        assert_eq!(keys_text(&l.keys), "np=4 size=8");
        assert_eq!(l.value, 3.0);
    }

    #[test]
    fn ignores_other_lines() {
        for line in [
            "",
            "results are in",
            "rank 0 ok",
            " result bench=x",
            "# result",
        ] {
            assert_eq!(parse_line(line), Ok(None), "{line:?}");
        }
    }

    #[test]
    fn rejects_malformed_result_lines() {
        for line in [
            "result bench=x metric=y value=1",              // no unit
            "result bench=x metric=y unit=us",              // no value
            "result metric=y value=1 unit=us",              // no bench
            "result bench=x metric=y value=fast unit=us",   // not a number
            "result bench=x metric=y value=nan unit=us",    // not finite
            "result bench=x metric=y value=1 unit=us oops", // not key=value
            "result bench=x metric=y size= value=1 unit=us",
            "result bench=x metric=y size=1 size=2 value=1 unit=us",
        ] {
            assert!(parse_line(line).is_err(), "{line:?}");
        }
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[4.0]), Some(4.0));
        assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    fn sample(mpi: &str, size: &str, value: f64, rep: u32) -> Sample {
        Sample {
            mpi: mpi.into(),
            bench: "pingpong".into(),
            metric: "latency".into(),
            keys: [("size".to_string(), size.to_string())].into(),
            value,
            unit: "us".into(),
            rep,
            procs: 2,
            oversubscribed: rep == 2,
        }
    }

    #[test]
    fn summarize_groups_by_mpi_and_keys() {
        let samples = [
            sample("tessel", "8", 3.0, 1),
            sample("mpich", "8", 10.0, 1),
            sample("tessel", "8", 1.0, 2),
            sample("tessel", "8", 2.0, 3),
            sample("tessel", "64", 7.0, 1),
        ];
        let s = summarize(&samples);
        assert_eq!(s.len(), 3);
        let t8 = s
            .iter()
            .find(|s| s.key.mpi == "tessel" && s.key.keys["size"] == "8")
            .unwrap();
        assert_eq!((t8.median, t8.min, t8.max, t8.n), (2.0, 1.0, 3.0, 3));
        assert!(t8.oversubscribed);
        let m8 = s.iter().find(|s| s.key.mpi == "mpich").unwrap();
        assert_eq!((m8.median, m8.n), (10.0, 1));
        assert!(!m8.oversubscribed);
    }

    #[test]
    fn ratio_direction_follows_the_unit() {
        assert_eq!(Better::of_unit("us"), Some(Better::Lower));
        assert_eq!(Better::of_unit("ms"), Some(Better::Lower));
        assert_eq!(Better::of_unit("MiB"), Some(Better::Lower));
        assert_eq!(Better::of_unit("MB/s"), Some(Better::Higher));
        assert_eq!(Better::of_unit("none"), None);
        let r = ratio(2.0, 4.0).unwrap();
        assert_eq!(r, 0.5);
        assert_eq!(badness(r, Better::Lower), 0.5); // Tessel twice as fast
        assert_eq!(badness(r, Better::Higher), 2.0);
        assert_eq!(ratio(0.0, 4.0), None);
        assert_eq!(ratio(1.0, 0.0), None);
    }

    #[test]
    fn geomean_of_reciprocal_ratios_is_one() {
        let g = geomean(&[2.0, 0.5]).unwrap();
        assert!((g - 1.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }
}
