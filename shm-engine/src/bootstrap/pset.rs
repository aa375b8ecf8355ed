//! Named process sets a launcher gives the job (MPI-4.0 §11.3.2), as they
//! travel through the bootstrap's key-value store.
//!
//! A launcher that knows named sets publishes, before starting the ranks,
//! [`COUNT_KEY`] (the number of sets, in decimal) and for each set `i`
//! the key [`key(i)`](key) with the value `NAME RANKS`: the set's name and
//! its ranks as a list like `0-3,6` (see [`parse_ranks`]). Values are
//! stored in the PMI client's wire encoding ([`wire_value`]), so a
//! process reads them with [`Bootstrap::get`] like any other key. A
//! process manager that publishes no sets (MPICH's Hydra, a process
//! started alone) answers the count's `get` with a missing key: the job
//! then has no named sets.

use super::{Bootstrap, BootstrapError};

/// Key of the number of named process sets.
pub const COUNT_KEY: &str = "tessel.psets";

/// Key of the `i`-th named process set.
pub fn key(i: usize) -> String {
    format!("tessel.pset.{i}")
}

/// `text` as a launcher must store it for [`Bootstrap::get`] to return it.
pub fn wire_value(text: &str) -> String {
    super::pmi::hex_encode(text.as_bytes())
}

/// The value of set `name` with `ranks`, as published under [`key`].
pub fn entry(name: &str, ranks: &[u32]) -> String {
    format!("{name} {}", format_ranks(ranks))
}

/// Parse a rank list: comma-separated ranks and inclusive ranges `a-b`
/// (`0-3,6` is 0, 1, 2, 3, 6), in the order written. Refuses empty lists,
/// reversed ranges and repeated ranks.
pub fn parse_ranks(text: &str) -> Result<Vec<u32>, String> {
    let mut ranks = Vec::new();
    for part in text.split(',') {
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{s:?} in rank list {text:?} is not a rank"))
        };
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(part)?, number(part)?),
        };
        if last < first {
            return Err(format!("range {part:?} in rank list {text:?} is reversed"));
        }
        ranks.extend(first..=last);
    }
    let mut sorted = ranks.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("rank {} appears twice in rank list {text:?}", w[0]));
    }
    Ok(ranks)
}

/// The shortest list [`parse_ranks`] reads back as `ranks`.
pub fn format_ranks(ranks: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j].wrapping_add(1) {
            j += 1;
        }
        parts.push(if j == i {
            ranks[i].to_string()
        } else {
            format!("{}-{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The named sets published for the job, as `(name, ranks)`; none when the
/// launcher published none. Every rank is checked against the job size.
pub fn read(boot: &mut dyn Bootstrap) -> Result<Vec<(String, Vec<u32>)>, BootstrapError> {
    let count = match boot.get(COUNT_KEY) {
        Ok(v) => v,
        Err(BootstrapError::MissingKey(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let bad = |what: String| BootstrapError::Protocol(format!("process sets: {what}"));
    let count: usize = std::str::from_utf8(&count)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("{COUNT_KEY} is not a number: {count:?}")))?;
    (0..count)
        .map(|i| {
            let value = boot.get(&key(i))?;
            let text = String::from_utf8(value).map_err(|_| bad(format!("set {i} is not text")))?;
            let (name, ranks) = text
                .split_once(' ')
                .ok_or_else(|| bad(format!("set {i} is not `NAME RANKS`: {text:?}")))?;
            let ranks = parse_ranks(ranks).map_err(bad)?;
            if let Some(r) = ranks.iter().find(|&&r| r >= boot.size()) {
                return Err(bad(format!(
                    "set {name} names rank {r} in a job of {} processes",
                    boot.size()
                )));
            }
            Ok((name.to_owned(), ranks))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::Singleton;

    #[test]
    fn rank_lists_round_trip() {
        assert_eq!(parse_ranks("0-3,6").unwrap(), [0, 1, 2, 3, 6]);
        assert_eq!(parse_ranks("5,1").unwrap(), [5, 1]);
        assert_eq!(format_ranks(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_ranks(&[5, 1, 2]), "5,1-2");
        for ranks in [vec![7], vec![0, 2, 4], vec![3, 4, 5, 0, 1]] {
            assert_eq!(parse_ranks(&format_ranks(&ranks)).unwrap(), ranks);
        }
    }

    #[test]
    fn bad_rank_lists_are_refused() {
        for text in ["", "a", "1,,2", "3-1", "0-2,1", "-1", "1-"] {
            assert!(parse_ranks(text).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn sets_are_read_back_and_checked_against_the_job_size() {
        let mut boot = Singleton::default();
        assert!(read(&mut boot).unwrap().is_empty());
        boot.put(COUNT_KEY, b"1").unwrap();
        boot.put(&key(0), entry("app://a", &[0]).as_bytes())
            .unwrap();
        assert_eq!(read(&mut boot).unwrap(), [("app://a".to_owned(), vec![0])]);
        boot.put(&key(0), entry("app://a", &[0, 1]).as_bytes())
            .unwrap();
        assert!(read(&mut boot).is_err());
    }

    #[test]
    fn wire_values_are_what_the_pmi_client_decodes() {
        assert_eq!(wire_value("a 0"), "612030");
    }
}
