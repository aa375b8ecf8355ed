/* Collectives: MPI_Allreduce (MPI_SUM on doubles), MPI_Bcast (from rank 0),
 * MPI_Allgather (each process's block of `size` bytes), MPI_Alltoall
 * (`size` bytes from each process to each), MPI_Gather and MPI_Scatter (to
 * and from rank 0, blocks of `size` bytes) at 8 B, 64 KiB and 1 MiB, and
 * MPI_Barrier.  Each repetition starts after a barrier; the program reports
 * the median over repetitions of the slowest rank's time.
 *
 * MPI_Bcast and MPI_Gather run twice: on buffers that no process writes
 * between calls, as the common benchmarks measure them, and with every
 * process that sends writing its send buffer before each call, outside
 * the timing (`buffer=rewritten`), as an application sends what it just
 * computed.  The two differ where a process copies straight from
 * another's buffer: unwritten, its lines stay in the reader's caches from
 * the previous call. */
#include "bench.h"

enum coll { ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, GATHER, SCATTER, BARRIER };
static const char *names[] = {"allreduce", "bcast",   "allgather", "alltoall",
                              "gather",    "scatter", "barrier"};

static double *in, *out;
static int warmups = 3; /* untimed calls before each measurement */
static int rank;
static int rewritten; /* senders write their send buffers before each call */

/* Before a call of `c`: with `rewritten`, each process that sends writes
 * the `count` doubles it sends, new values each time. */
static void prepare(enum coll c, int count)
{
    static double stamp;
    if (!rewritten || (c == BCAST && rank != 0))
        return;
    stamp += 1;
    for (int i = 0; i < count; i++)
        in[i] = stamp + i;
}

static void run(enum coll c, int count)
{
    switch (c) {
    case ALLREDUCE:
        MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(in, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* Median over reps of the slowest rank's time of one collective of size
 * bytes (on rank 0), after a few warm-up calls.  If adapt, fewer repetitions
 * when they would take too long (see reps_within_budget). */
static double measure(enum coll c, long size, int reps, int adapt)
{
    int count = (int)(size / (long)sizeof(double));
    double start = MPI_Wtime();
    for (int w = 0; w < warmups; w++) {
        prepare(c, count);
        MPI_Barrier(MPI_COMM_WORLD);
        run(c, count);
    }
    if (adapt)
        reps = reps_within_budget(reps, (MPI_Wtime() - start) / warmups, MPI_COMM_WORLD);
    double *t = xmalloc((size_t)reps * sizeof *t);
    for (int r = 0; r < reps; r++) {
        prepare(c, count);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run(c, count);
        t[r] = MPI_Wtime() - t0;
    }
    double m = median_of_max(t, reps, MPI_COMM_WORLD);
    free(t);
    return m;
}

/* Repetitions of a measurement at `size` bytes. */
static int reps_of(const struct opts *o, long size)
{
    return (int)(o->iters ? o->iters : o->quick ? 3 : size < MIB ? 50 : 20);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    int provided = MPI_THREAD_SINGLE;
    if (o.multiple)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    if (o.multiple && provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "colls: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Under MPI_THREAD_MULTIPLE the results carry a key of their own. */
    const char *threads = o.multiple ? " threads=multiple" : "";
    int np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const long full[] = {8, 64 * KIB, MIB}, quick[] = {8, KIB};
    if (o.quick)
        warmups = 1;
    const long *sizes = o.quick ? quick : full;
    int nsizes = o.quick ? 2 : 3;
    /* All-to-all sends a block to every process, allgather and gather
     * receive one from every process, scatter sends one to each. */
    long max = sizes[nsizes - 1] * np;
    in = xmalloc((size_t)max);
    out = xmalloc((size_t)max);
    for (long i = 0; i < max / (long)sizeof(double); i++) /* touch every page */
        in[i] = out[i] = (double)i;

    for (enum coll c = ALLREDUCE; c <= SCATTER; c++) {
        for (int s = 0; s < nsizes; s++) {
            double m = measure(c, sizes[s], reps_of(&o, sizes[s]), !o.iters);
            if (rank == 0)
                result("colls", names[c], m * 1e6, "us", "size=%ld np=%d%s", sizes[s], np, threads);
        }
    }
    rewritten = 1;
    const enum coll again[] = {BCAST, GATHER};
    for (size_t a = 0; a < sizeof again / sizeof *again; a++) {
        enum coll c = again[a];
        for (int s = 0; s < nsizes; s++) {
            double m = measure(c, sizes[s], reps_of(&o, sizes[s]), !o.iters);
            if (rank == 0)
                result("colls", names[c], m * 1e6, "us", "size=%ld np=%d buffer=rewritten%s", sizes[s], np,
                       threads);
        }
    }
    rewritten = 0;
    double m = measure(BARRIER, 0, reps_of(&o, 0), !o.iters);
    if (rank == 0)
        result("colls", names[BARRIER], m * 1e6, "us", "size=0 np=%d%s", np, threads);

    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
