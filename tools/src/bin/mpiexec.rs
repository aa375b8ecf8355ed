//! `mpiexec`: start N processes of a program as one Tessel job.
//!
//! See `mpiexec --help`, and the `tools` library for the parts.

use clap::Parser;

fn main() {
    let cli = tools::cli::Cli::parse();
    std::process::exit(tools::launch::run(&cli.job_spec()));
}
