//! `shm_engine::copy::bytes` against one `memcpy`
//! (`std::ptr::copy_nonoverlapping`) at the distances between destination
//! and source (within a page) that the engine meets: 0 and 64 (both start
//! on a cache line), and 16 (a board or cell piece on a page copied into
//! a buffer from `malloc`, which starts 16 bytes past one). On processors
//! whose `rep movsb` is slow at short distances the 16-byte case is where
//! the two differ; elsewhere they should take the same time.
//!
//! `cargo bench -p benches --bench copy`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use shm_engine::copy;

const PAGE: usize = 4096;

fn copies(c: &mut Criterion) {
    let mut g = c.benchmark_group("copy");
    let src = vec![1u8; (1 << 20) + 2 * PAGE];
    let mut dst = vec![0u8; (1 << 20) + 2 * PAGE];
    // A page-aligned start in each vector.
    let s0 = src.as_ptr().align_offset(PAGE);
    let d0 = dst.as_ptr().align_offset(PAGE);
    for len in [16 << 10, 128 << 10, 1 << 20] {
        g.throughput(Throughput::Bytes(len as u64));
        for distance in [0, 16, 64] {
            let s = &src[s0..s0 + len];
            let at = d0 + distance;
            let id = format!("{len}B_at_{distance}");
            g.bench_function(BenchmarkId::new("memcpy", &id), |b| {
                let d = &mut dst[at..at + len];
                // SAFETY: two distinct vectors' ranges of `len` bytes.
                b.iter(|| unsafe {
                    std::ptr::copy_nonoverlapping(black_box(s.as_ptr()), d.as_mut_ptr(), len)
                })
            });
            g.bench_function(BenchmarkId::new("copy_bytes", &id), |b| {
                let d = &mut dst[at..at + len];
                b.iter(|| copy::slice(d, black_box(s)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, copies);
criterion_main!(benches);
