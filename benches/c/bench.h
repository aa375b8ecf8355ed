/* Shared helpers of the benchmark programs: options, medians, `result` lines.
 *
 * Include this header first (it sets the feature-test macro the programs need
 * for clock_gettime, nanosleep and thread affinity).  It includes <mpi.h>
 * unless BENCH_NO_MPI is defined (reference.c is not an MPI program). */
#ifndef BENCH_H
#define BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BENCH_NO_MPI
#include <mpi.h>
#endif

#define KIB 1024L
#define MIB (1024L * 1024L)

/* Command-line options; each program uses the ones it needs. */
struct opts {
    int quick;        /* --quick: tiny sizes, few iterations */
    long edge;        /* --edge E (stencil block edge), 0 if not given */
    long iters;       /* --iters K (timed repetitions), 0 if not given */
    const char *mode; /* --mode M (startup), NULL if not given */
    long max;         /* --max BYTES (largest message; K and M suffixes), 0 if not given */
    const char *alloc; /* --alloc malloc|mpi (where buffers come from), NULL if not given */
    int managed;      /* --managed: receives into library-managed buffers */
    int multiple;     /* --thread-multiple: MPI_Init_thread(MPI_THREAD_MULTIPLE) */
};

static inline int bench_usage(const char *prog, const char *what)
{
    fprintf(stderr,
            "%s: %s\nusage: %s [--quick] [--edge E] [--iters K] [--mode M] [--max BYTES]\n"
            "       [--alloc malloc|mpi] [--managed] [--thread-multiple]\n",
            prog, what, prog);
    return -1;
}

/* A positive integer, with an optional K or M suffix (KiB, MiB) when
 * suffix is set; 0 if v is not one. */
static inline long bench_number(const char *v, int suffix)
{
    char *end;
    long n = strtol(v, &end, 10);
    long unit = 1;
    if (suffix && (*end == 'K' || *end == 'M'))
        unit = *end++ == 'K' ? KIB : MIB;
    return *end == '\0' && n > 0 ? n * unit : 0;
}

/* Parses the options into *o; returns 0, or -1 after a message on stderr. */
static inline int bench_parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
            continue;
        }
        if (strcmp(a, "--managed") == 0) {
            o->managed = 1;
            continue;
        }
        if (strcmp(a, "--thread-multiple") == 0) {
            o->multiple = 1;
            continue;
        }
        int is_max = strcmp(a, "--max") == 0;
        const char **word = strcmp(a, "--mode") == 0    ? &o->mode
                            : strcmp(a, "--alloc") == 0 ? &o->alloc
                                                        : NULL;
        long *number = strcmp(a, "--edge") == 0    ? &o->edge
                       : strcmp(a, "--iters") == 0 ? &o->iters
                       : is_max                    ? &o->max
                                                   : NULL;
        if (!word && !number)
            return bench_usage(argv[0], "unknown option");
        if (i + 1 >= argc)
            return bench_usage(argv[0], "option needs a value");
        const char *v = argv[++i];
        if (word) {
            *word = v;
            continue;
        }
        *number = bench_number(v, is_max);
        if (*number == 0)
            return bench_usage(argv[0], is_max ? "--max must be a positive size (like 65536, 64K, 4M)"
                                               : "value must be a positive integer");
    }
    return 0;
}

/* Prints one `result` line: keys is a printf format for the key=value pairs
 * between the metric and the value (may be ""). */
__attribute__((format(printf, 5, 6))) static inline void
result(const char *bench, const char *metric, double value, const char *unit,
       const char *keys, ...)
{
    char kv[256];
    va_list ap;
    va_start(ap, keys);
    vsnprintf(kv, sizeof kv, keys, ap);
    va_end(ap);
    printf("result bench=%s metric=%s%s%s value=%.6g unit=%s\n", bench, metric,
           kv[0] ? " " : "", kv, value, unit);
    fflush(stdout);
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds on the monotonic clock (usable before MPI_Init and without MPI). */
static inline double mono_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

#ifndef BENCH_NO_MPI
/* Rank 0 gets the median over t[0..n) of the maximum over the ranks of comm
 * (t holds this rank's time of each repetition); other ranks get 0. */
static inline double median_of_max(double *t, int n, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    double *max = xmalloc((size_t)n * sizeof *max);
    MPI_Reduce(t, max, n, MPI_DOUBLE, MPI_MAX, 0, comm);
    double m = rank == 0 ? median(max, n) : 0.0;
    free(max);
    return m;
}

/* Seconds a measurement (all its repetitions) should take at most: when
 * processes outnumber cores, one repetition of a busy-polling MPI can take
 * milliseconds, and the default repetition counts would take minutes. */
#define BUDGET 0.5

/* Timed repetitions: want, or fewer (but at least 5) if each takes per_rep
 * seconds (this rank's warm-up estimate; the slowest rank decides) and want
 * of them would exceed BUDGET.  Collective over comm. */
static inline int reps_within_budget(int want, double per_rep, MPI_Comm comm)
{
    double worst;
    MPI_Allreduce(&per_rep, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (worst * want <= BUDGET)
        return want;
    int fit = (int)(BUDGET / worst);
    return fit > 5 ? fit : want < 5 ? want : 5;
}

/* MPI_Waitall on n requests.  (A status array instead of MPI_STATUSES_IGNORE,
 * which GCC 12 mistakes for a zero-sized array and warns about.) */
static inline void waitall(int n, MPI_Request *req)
{
    MPI_Status st[n > 0 ? n : 1];
    MPI_Waitall(n, req, st);
}
#endif

#endif
