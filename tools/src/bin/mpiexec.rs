//! `mpiexec`: start N processes of a program as one Tessel job.
//!
//! See `mpiexec --help`, and the `tools` library for the parts.

use clap::{CommandFactory, Parser};

fn main() {
    let cli = tools::cli::Cli::parse();
    if let Err(e) = cli.validate() {
        tools::cli::Cli::command()
            .error(clap::error::ErrorKind::ValueValidation, e)
            .exit();
    }
    std::process::exit(tools::launch::run(&cli.job_spec()));
}
