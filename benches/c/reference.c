/* Physical reference for the MPI numbers (not an MPI program; build with
 * `cc -O2 -pthread`):
 *   cacheline_pingpong  two threads, pinned to the first two CPUs this process
 *                       may use, pass one cache-line-aligned atomic counter
 *                       back and forth; half the round trip in ns
 *   memcpy              single-thread memcpy bandwidth between pre-faulted
 *                       buffers, 4 KiB .. 16 MiB (powers of 4), in MB/s
 * Each value is the median of several timed batches after a warm-up batch. */
#define BENCH_NO_MPI
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define BATCHES 7

/* The counter has its cache line to itself (the struct's size is rounded up
 * to its alignment). */
static struct {
    _Alignas(64) atomic_long value;
} line;
static long trips; /* round trips per batch */

/* Number of CPUs this process may run on. */
static int cpus_allowed(void)
{
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    return CPU_COUNT(&allowed);
}

/* Pins the calling thread to the n-th CPU of the process's affinity mask. */
static void pin(int n)
{
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof allowed, &allowed);
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &allowed) && n-- == 0) {
            CPU_SET(cpu, &one);
            break;
        }
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
        fprintf(stderr, "reference: could not pin a thread\n");
}

/* The thread on the second CPU: answers each odd value with the next even one. */
static void *pong(void *arg)
{
    (void)arg;
    pin(1);
    long n = trips;
    for (int b = 0; b <= BATCHES; b++)
        for (long i = 0; i < n; i++) {
            long want = 2 * (b * n + i) + 1;
            while (atomic_load_explicit(&line.value, memory_order_acquire) != want)
                ;
            atomic_store_explicit(&line.value, want + 1, memory_order_release);
        }
    return NULL;
}

/* Half the round trip of the counter between two cores, in ns. */
static double cacheline_pingpong(void)
{
    double t[BATCHES + 1];
    pthread_t thread;
    long n = trips;
    atomic_store(&line.value, 0);
    pthread_create(&thread, NULL, pong, NULL);
    pin(0);
    for (int b = 0; b <= BATCHES; b++) { /* batch 0 is the warm-up */
        double t0 = mono_seconds();
        for (long i = 0; i < n; i++) {
            long next = 2 * (b * n + i) + 1;
            atomic_store_explicit(&line.value, next, memory_order_release);
            while (atomic_load_explicit(&line.value, memory_order_acquire) != next + 1)
                ;
        }
        t[b] = mono_seconds() - t0;
    }
    pthread_join(thread, NULL);
    return median(t + 1, BATCHES) / (2.0 * (double)n) * 1e9;
}

/* memcpy bandwidth for size bytes, in MB/s (bytes copied per second). */
static double memcpy_bw(char *dst, const char *src, long size, long total)
{
    void *(*volatile copy)(void *, const void *, size_t) = memcpy; /* not elided */
    long n = total / size > 0 ? total / size : 1;
    double t[BATCHES + 1];
    for (int b = 0; b <= BATCHES; b++) {
        double t0 = mono_seconds();
        for (long i = 0; i < n; i++)
            copy(dst, src, (size_t)size);
        t[b] = mono_seconds() - t0;
    }
    return (double)(n * size) / median(t + 1, BATCHES) / 1e6;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    trips = o.quick ? 2000 : 200000;
    if (cpus_allowed() >= 2)
        result("reference", "cacheline_pingpong", cacheline_pingpong(), "ns", "%s", "");
    else
        fprintf(stderr, "reference: cache-line ping-pong needs two CPUs\n");

    long max = 16 * MIB, total = o.quick ? 4 * MIB : 256 * MIB;
    char *src = xmalloc((size_t)max), *dst = xmalloc((size_t)max);
    memset(src, 1, (size_t)max); /* fault every page in before timing */
    memset(dst, 2, (size_t)max);
    for (long size = 4 * KIB; size <= max; size *= 4)
        result("reference", "memcpy", memcpy_bw(dst, src, size, total), "MB/s", "size=%ld", size);
    free(src);
    free(dst);
    return 0;
}
