//! `tessel-dynres PID add N|remove N`: ask a running `mpiexec` (process
//! PID, started with `--dynres`) for a resource change, as a batch
//! scheduler would. The change is proposed to the job before its policy's
//! next one; the job accepts it when it asks (`MPIX_Dynres_get`).

use std::io::{BufRead, BufReader, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};

use clap::Parser;

/// `tessel-dynres PID add N|remove N`
#[derive(Debug, Parser)]
#[command(
    name = "tessel-dynres",
    version,
    about = "Ask a running mpiexec (started with --dynres) to add processes to its job or \
             remove some; prints mpiexec's answer and exits with 1 if it refused"
)]
struct Cli {
    /// The process id of the job's mpiexec.
    pid: u32,
    /// `add` or `remove`.
    #[arg(value_parser = ["add", "remove"])]
    action: String,
    /// How many processes.
    #[arg(value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
}

fn main() {
    let cli = Cli::parse();
    let fail = |what: String| -> ! {
        eprintln!("tessel-dynres: {what}");
        std::process::exit(1);
    };
    let name = tools::dynres::control_name(cli.pid);
    let stream = SocketAddr::from_abstract_name(name.as_bytes())
        .and_then(|a| UnixStream::connect_addr(&a))
        .unwrap_or_else(|e| {
            fail(format!(
                "no mpiexec --dynres with pid {} takes requests here: {e}",
                cli.pid
            ))
        });
    if let Err(e) = writeln!(&stream, "{} {}", cli.action, cli.count) {
        fail(format!("sending the request: {e}"));
    }
    let mut reply = String::new();
    if let Err(e) = BufReader::new(&stream).read_line(&mut reply) {
        fail(format!("reading the answer: {e}"));
    }
    let reply = reply.trim();
    println!("{reply}");
    if !reply.starts_with("ok") {
        std::process::exit(1);
    }
}
