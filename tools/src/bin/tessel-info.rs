//! `tessel-info`: what Tessel sees on this machine (topology, copy
//! mechanisms, settings in force, network plugins). See `tessel-info --help`.

use clap::Parser;

/// `tessel-info`
#[derive(Debug, Parser)]
#[command(
    name = "tessel-info",
    version,
    about = "Print the node's topology (packages, NUMA nodes with their PUs, caches, cores), \
             the copy mechanisms that work between processes of this user, every \
             engine setting in force with its TESSEL_* environment variable, and every \
             network plugin found (name, version, ABI, the transport's limits and costs, \
             or why it cannot run here)"
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
