//! `cargo run --release -p benches --bin compare -- --help`: Tessel against
//! other MPIs side by side (see `benches::compare`).

fn main() -> std::process::ExitCode {
    benches::compare::main()
}
