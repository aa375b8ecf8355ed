//! Print Tessel's `mpi.h` on standard output: for the MPICH ABI
//! (`libmpi.so.12`), or with `--abi standard` for the MPI-5 standard ABI
//! (`libmpi_abi.so.1`).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["--abi", "mpich"] => print!("{}", mpi::abi::header()),
        ["--abi", "standard"] => print!("{}", mpi::std_abi::header()),
        _ => {
            eprintln!("usage: tessel-mpi-header [--abi mpich|standard]");
            std::process::exit(2);
        }
    }
}
