//! The library answers to MPICH's soname, so that binaries linked against
//! MPICH (or Intel MPI, or MVAPICH) load it unchanged.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
}
