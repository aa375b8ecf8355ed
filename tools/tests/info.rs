//! The `tessel-info` binary: its sections, and every variable of the
//! README's Configuration table with the value in force.

use std::process::{Command, Output};

fn tessel_info(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessel-info"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("tessel-info runs")
}

/// The variables named in the first column of the README's Configuration
/// table.
fn readme_variables() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("\n## Configuration")
        .nth(1)
        .expect("the README has a Configuration section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let vars: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `TESSEL_"))
        .filter_map(|l| l.split('`').next())
        .map(|v| format!("TESSEL_{v}"))
        .collect();
    assert!(vars.len() >= 9, "README table: {vars:?}");
    vars
}

#[test]
fn report_names_its_sections_and_every_setting() {
    let out = tessel_info(&[], &[("TESSEL_SPIN", "7")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for section in [
        "Topology",
        "packages:",
        "NUMA nodes:",
        "cores:",
        "caches:",
        "Copy mechanisms",
        "process_vm_readv",
        "peers can map the shared heap",
        "Configuration",
    ] {
        assert!(text.contains(section), "no {section:?} in:\n{text}");
    }
    for var in readme_variables() {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{var} "))),
            "no {var} in:\n{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["TESSEL_SPIN", "7"])),
        "TESSEL_SPIN=7 not shown:\n{text}"
    );
}

#[test]
fn invalid_setting_is_reported_not_printed_as_valid() {
    let out = tessel_info(&[], &[("TESSEL_CMA", "sometimes")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TESSEL_CMA"), "{err}");
}

#[test]
fn help_describes_the_report() {
    let out = tessel_info(&["--help"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["topology", "NUMA", "copy mechanisms", "TESSEL_"] {
        assert!(text.contains(word), "--help lacks {word}:\n{text}");
    }
}
