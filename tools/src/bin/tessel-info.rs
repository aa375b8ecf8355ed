//! `tessel-info`: what Tessel sees on this machine (topology, copy
//! mechanisms, settings in force). See `tessel-info --help`.

use clap::Parser;

/// `tessel-info`
#[derive(Debug, Parser)]
#[command(
    name = "tessel-info",
    version,
    about = "Print the node's topology (packages, NUMA nodes with their PUs, caches, cores), \
             the copy mechanisms that work between processes of this user, and every \
             engine setting in force with its TESSEL_* environment variable"
)]
struct Cli {}

fn main() {
    Cli::parse();
    match tools::info::report() {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("tessel-info: {e}");
            std::process::exit(1);
        }
    }
}
