//! `cargo run --release -p benches --bin protocols -- --help`: Tessel's
//! large-message protocols side by side (see `benches::protocols`).

fn main() -> std::process::ExitCode {
    benches::protocols::main()
}
