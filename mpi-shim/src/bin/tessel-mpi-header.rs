//! Print Tessel's `mpi.h` (the MPICH ABI) on standard output.
fn main() {
    print!("{}", mpi::abi::header());
}
