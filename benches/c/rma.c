/* One-sided communication between ranks 0 and 1 (run it on 2 processes;
 * further ranks only take part in the window's creation and the barriers).
 * Rank 0 holds MPI_Win_lock_all on a window of 16 MiB per process made by
 * MPI_Win_allocate; rank 1 waits in MPI_Barrier meanwhile, so that an MPI
 * whose target must enter the library to progress gets to.
 *   put_latency, get_latency: one MPI_Put (MPI_Get) of size bytes to rank 1
 *     and MPI_Win_flush, in us;
 *   put_bw, get_bw: a window of 64 operations (fewer above 256 KiB, so that
 *     they fit in the window's 16 MiB) and one flush, in MB/s;
 *   acc: one MPI_Accumulate of a double with MPI_SUM, in a batch of 1000
 *     ended by one flush: us per operation;
 *   fetch_op: one MPI_Fetch_and_op (MPI_SUM on a long) and flush, in us.
 * Sizes 8 B, 4 KiB, 64 KiB and 1 MiB (--quick: 8 B and 4 KiB). Each value
 * is the median of 7 timed batches (3 with --quick), after a warm-up. */
#include "bench.h"

enum { WINDOW = 64, ACC_BATCH = 1000 };
static const long WIN_BYTES = 16 * MIB;

static MPI_Win win;
static char *local;

/* One batch of `ops` operations of `size` bytes ending with a flush;
 * seconds. */
static double batch(const char *what, long size, int ops)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < ops; i++) {
        MPI_Aint disp = (MPI_Aint)((long)i * size % WIN_BYTES);
        if (what[0] == 'p')
            MPI_Put(local + disp, (int)size, MPI_BYTE, 1, disp, (int)size, MPI_BYTE, win);
        else
            MPI_Get(local + disp, (int)size, MPI_BYTE, 1, disp, (int)size, MPI_BYTE, win);
    }
    MPI_Win_flush(1, win);
    return MPI_Wtime() - t0;
}

static double median_batches(int batches, double (*f)(void *), void *arg)
{
    double t[16];
    f(arg); /* warm-up */
    for (int b = 0; b < batches; b++)
        t[b] = f(arg);
    return median(t, batches);
}

struct xfer {
    const char *what;
    long size;
    int ops;
};

static double run_xfer(void *p)
{
    struct xfer *x = p;
    return batch(x->what, x->size, x->ops);
}

static double run_acc(void *p)
{
    (void)p;
    double one = 1.0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < ACC_BATCH; i++)
        MPI_Accumulate(&one, 1, MPI_DOUBLE, 1, (MPI_Aint)(8 * (i % 1024)), 1, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_flush(1, win);
    return (MPI_Wtime() - t0) / ACC_BATCH;
}

static double run_fetch(void *p)
{
    (void)p;
    long one = 1, old = 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < 100; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 0, MPI_SUM, win);
        MPI_Win_flush(1, win);
    }
    return (MPI_Wtime() - t0) / 100;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (rank == 0)
            fprintf(stderr, "rma needs 2 processes\n");
        MPI_Finalize();
        return 2;
    }
    char *base;
    MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, (size_t)WIN_BYTES);
    local = xmalloc((size_t)WIN_BYTES);
    memset(local, 1, (size_t)WIN_BYTES);
    const long full[] = {8, 4 * KIB, 64 * KIB, MIB}, quick[] = {8, 4 * KIB};
    const long *sizes = o.quick ? quick : full;
    int nsizes = o.quick ? 2 : 4, batches = o.quick ? 3 : 7;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        for (int s = 0; s < nsizes; s++) {
            long size = sizes[s];
            int window = size <= 256 * KIB ? WINDOW : (int)(WIN_BYTES / size);
            for (int k = 0; k < 2; k++) {
                const char *what = k == 0 ? "put" : "get";
                struct xfer one = {what, size, 1}, many = {what, size, window};
                double lat = median_batches(batches, run_xfer, &one);
                double bw = median_batches(batches, run_xfer, &many);
                char metric[32];
                snprintf(metric, sizeof metric, "%s_latency", what);
                result("rma", metric, lat * 1e6, "us", "size=%ld np=%d", size, np);
                snprintf(metric, sizeof metric, "%s_bw", what);
                result("rma", metric, (double)size * window / bw / 1e6, "MB/s", "size=%ld np=%d",
                       size, np);
            }
        }
        result("rma", "acc", median_batches(batches, run_acc, NULL) * 1e6, "us", "size=8 np=%d", np);
        result("rma", "fetch_op", median_batches(batches, run_fetch, NULL) * 1e6, "us",
               "size=8 np=%d", np);
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* The puts landed: rank 1's window holds the 1s rank 0 sent. */
    int bad = rank == 1 && base[100 * KIB] != 1;
    MPI_Win_free(&win);
    free(local);
    MPI_Finalize();
    if (bad)
        fprintf(stderr, "rma: the puts did not land\n");
    return bad;
}
