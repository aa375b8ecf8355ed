//! `cargo run --release -p benches --bin internode -- --help`: jobs that
//! span nodes, the stencil's overlap and the network plugins' overhead
//! (see `benches::internode`).

fn main() -> std::process::ExitCode {
    benches::internode::main()
}
