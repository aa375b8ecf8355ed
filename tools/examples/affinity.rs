//! Prints the CPUs this process may run on, for the launcher's binding
//! tests: `mpiexec --bind core -n 2 affinity` prints one line per rank,
//! `rank R: C1,C2,... place=P` (CPU numbers increasing; P the
//! `TESSEL_PLACE` the launcher set, or `unset`), and exits 0.

use std::process::ExitCode;

fn main() -> ExitCode {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, a live local the kernel
    // writes the mask into.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        eprintln!(
            "affinity: sched_getaffinity: {}",
            std::io::Error::last_os_error()
        );
        return ExitCode::FAILURE;
    }
    let cpus: Vec<String> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE, inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .map(|cpu| cpu.to_string())
        .collect();
    let rank = std::env::var("PMI_RANK").unwrap_or_else(|_| "?".into());
    let place = std::env::var("TESSEL_PLACE").unwrap_or_else(|_| "unset".into());
    println!("rank {rank}: {} place={place}", cpus.join(","));
    ExitCode::SUCCESS
}
