/* Physical reference for the MPI numbers (not an MPI program; build with
 * `cc -O2 -pthread`):
 *   cacheline_pingpong  two threads, pinned to the first two CPUs this process
 *                       may use, pass one cache-line-aligned atomic counter
 *                       back and forth; half the round trip in ns
 *   yield_handover      two processes pinned to the first CPU this process
 *                       may use pass a counter in shared memory, each
 *                       yielding the CPU (sched_yield) until it is its
 *                       turn: one context switch per hand-over, in us (what
 *                       a process waiting for another on its own core pays
 *                       at least, as in an oversubscribed job)
 *   memcpy              single-thread memcpy bandwidth between pre-faulted
 *                       buffers, 4 KiB .. 16 MiB (powers of 4), in MB/s
 * Each value is the median of several timed batches after a warm-up batch. */
#define BENCH_NO_MPI
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Pins the calling thread to the n-th CPU of the process's affinity mask;
 * 0 on success. */
static int pin(int n)
{
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof allowed, &allowed);
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &allowed) && n-- == 0) {
            CPU_SET(cpu, &one);
            break;
        }
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
        fprintf(stderr, "reference: could not pin a thread\n");
        return -1;
    }
    return 0;
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

/* One hand-over of a counter between two processes on one CPU that yield
 * while they wait, in us; negative if that cannot be measured (no pinning,
 * no second process). */
static double yield_handover(void)
{
    long n = trips / 20;
    /* Pinned before the fork, the child inherits the one CPU. */
    if (pin(0) != 0)
        return -1;
    atomic_long *turn = mmap(NULL, sizeof *turn, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (turn == MAP_FAILED)
        return -1;
    atomic_store(turn, 0);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        munmap(turn, sizeof *turn);
        return -1;
    }
    if (child == 0) { /* answers each odd value with the next even one */
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the measurement */
        if (getppid() != parent)
            _exit(1);
        for (long k = 1; k <= 2 * n * (BATCHES + 1); k += 2) {
            while (atomic_load_explicit(turn, memory_order_acquire) != k)
                sched_yield();
            atomic_store_explicit(turn, k + 1, memory_order_release);
        }
        _exit(0);
    }
    double t[BATCHES + 1];
    long k = 0;
    for (int b = 0; b <= BATCHES; b++) { /* batch 0 is the warm-up */
        double t0 = mono_seconds();
        for (long i = 0; i < n; i++, k += 2) {
            atomic_store_explicit(turn, k + 1, memory_order_release);
            for (long spins = 1; atomic_load_explicit(turn, memory_order_acquire) != k + 2; spins++) {
                sched_yield();
                if (spins % 4096 == 0 && waitpid(child, NULL, WNOHANG) == child) {
                    munmap(turn, sizeof *turn); /* the child died */
                    return -1;
                }
            }
        }
        t[b] = mono_seconds() - t0;
    }
    waitpid(child, NULL, 0);
    munmap(turn, sizeof *turn);
    return median(t + 1, BATCHES) / (2.0 * (double)n) * 1e6;
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
    double handover = yield_handover();
    if (handover > 0)
        result("reference", "yield_handover", handover, "us", "%s", "");
    else
        fprintf(stderr, "reference: could not time a hand-over between two processes on one CPU\n");

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
