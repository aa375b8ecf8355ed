/* Ping-pong between ranks 0 and 1: latency (half round trip), unidirectional
 * bandwidth (a window of nonblocking sends, then a zero-byte ack) and
 * bidirectional bandwidth (both ranks send a window at once).  Each value is
 * the median of several timed batches after one warm-up batch.  Ranks beyond
 * the first two wait, sleeping, in a nonblocking barrier. */
#include "bench.h"

#define WINDOW 64               /* messages in flight per window */
#define WINDOW_BYTES (64 * MIB) /* receive buffer of one window, at most */
#define TAG_DATA 1
#define TAG_ACK 2

static const long sizes[] = {0,       1,       4,        16,      64,      256,     KIB,
                             4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB};

static MPI_Comm pair; /* ranks 0 and 1 of MPI_COMM_WORLD */
static int me, peer;
static char *sbuf, *rbuf;

/* Messages in flight per window: WINDOW, fewer if their receive buffers
 * (distinct, as MPI requires) would exceed WINDOW_BYTES. */
static int window_of(long size)
{
    return size * WINDOW <= WINDOW_BYTES ? WINDOW : (int)(WINDOW_BYTES / size);
}

static long clamp(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Time of n round trips of size bytes. */
static double latency_batch(long size, long n)
{
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        if (me == 0) {
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair);
        }
    }
    return MPI_Wtime() - t0;
}

/* Time of n windows from rank 0 to rank 1, each acknowledged by a zero-byte
 * message. */
static double bw_uni_batch(long size, long n)
{
    MPI_Request req[WINDOW];
    int w = window_of(size);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++) {
            if (me == 0)
                MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair, &req[k]);
            else
                MPI_Irecv(rbuf + k * size, (int)size, MPI_CHAR, peer, TAG_DATA, pair, &req[k]);
        }
        waitall(w, req);
        if (me == 0)
            MPI_Recv(rbuf, 0, MPI_CHAR, peer, TAG_ACK, pair, MPI_STATUS_IGNORE);
        else
            MPI_Send(sbuf, 0, MPI_CHAR, peer, TAG_ACK, pair);
    }
    return MPI_Wtime() - t0;
}

/* Time of n windows sent by both ranks at once. */
static double bw_bi_batch(long size, long n)
{
    MPI_Request req[2 * WINDOW];
    int w = window_of(size);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++)
            MPI_Irecv(rbuf + k * size, (int)size, MPI_CHAR, peer, TAG_DATA, pair, &req[k]);
        for (int k = 0; k < w; k++)
            MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, pair, &req[w + k]);
        waitall(2 * w, req);
    }
    return MPI_Wtime() - t0;
}

/* Median over batches of rank 0's time of batch(size, n), after a warm-up. */
static double median_time(double (*batch)(long, long), long size, long n, int batches)
{
    double t[16];
    batch(size, n);
    for (int b = 0; b < batches; b++) {
        MPI_Barrier(pair);
        t[b] = batch(size, n);
    }
    return median(t, batches);
}

static void run_pair(int quick)
{
    long max = quick ? 64 * KIB : 16 * MIB;
    int batches = quick ? 3 : 5;
    sbuf = xmalloc((size_t)max);
    rbuf = xmalloc((size_t)(max * window_of(max)));
    memset(sbuf, 1, (size_t)max); /* touch every page before timing */
    memset(rbuf, 0, (size_t)(max * window_of(max)));

    for (size_t i = 0; i < sizeof sizes / sizeof *sizes && sizes[i] <= max; i++) {
        long s = sizes[i];
        long n = quick ? 10 : clamp(8 * MIB / (s + 1), 4, 1000);
        double t = median_time(latency_batch, s, n, batches);
        if (me == 0)
            result("pingpong", "latency", t / (2.0 * n) * 1e6, "us", "size=%ld", s);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes && sizes[i] <= max; i++) {
        long s = sizes[i];
        if (s == 0)
            continue; /* no bandwidth without bytes */
        long bytes = s * window_of(s);
        long n = quick ? 2 : clamp(32 * MIB / bytes, 2, 100);
        double t = median_time(bw_uni_batch, s, n, batches);
        if (me == 0)
            result("pingpong", "bw_uni", (double)(bytes * n) / t / 1e6, "MB/s", "size=%ld", s);
        t = median_time(bw_bi_batch, s, n, batches);
        if (me == 0)
            result("pingpong", "bw_bi", 2.0 * (double)(bytes * n) / t / 1e6, "MB/s", "size=%ld", s);
    }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong needs 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL) {
        me = rank;
        peer = 1 - rank;
        run_pair(o.quick);
        MPI_Comm_free(&pair);
    }

    /* Idle ranks sleep here instead of polling for the pair's CPU time. */
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    if (rank < 2) {
        MPI_Wait(&done, MPI_STATUS_IGNORE);
    } else {
        int flag = 0;
        for (MPI_Test(&done, &flag, MPI_STATUS_IGNORE); !flag;
             MPI_Test(&done, &flag, MPI_STATUS_IGNORE))
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    MPI_Finalize();
    return 0;
}
