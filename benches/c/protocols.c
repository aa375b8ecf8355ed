/* Large-message bandwidth between ranks 0 and 1, for the protocols an MPI
 * uses above its rendezvous threshold (on Tessel: GET, COOP, work stealing
 * and the adaptive choice among them, forced with TESSEL_RNDV).
 *
 * Pattern: rank 0 sends a window of WINDOW nonblocking messages, rank 1
 * receives them into distinct buffers and answers with a zero-byte message
 * (the unidirectional bandwidth of pingpong.c).  A window rather than a
 * ping-pong because it is how an application streams data: several large
 * transfers in flight keep the receiver, the sender and any helper busy at
 * once (copies of successive messages overlap, and a work-stealing engine
 * has chunks queued for its stealers), where a ping-pong would measure one
 * transfer at a time plus a turn-around.  A window's receive buffers take
 * at most WINDOW_BYTES, so at 64 MiB the window is 2 messages.
 *
 * Ranks 2 and up are idle helpers: each sits in a blocking MPI_Recv from
 * rank 0 for the stop message sent at the end.  An engine whose waiting
 * processes copy for others (work stealing) finds them there.
 *
 * Buffers come from malloc (private to the process) or MPI_Alloc_mem (on
 * Tessel, the shared heap that every local process can copy into), at both
 * ends: --alloc malloc|mpi (default malloc).
 *
 * Sizes: 64 KiB to 64 MiB in powers of 4; --max BYTES stops earlier,
 * --quick stops at 256 KiB and takes fewer batches.  Per size: WARMUP
 * untimed windows (an adaptive protocol learns on the first transfer of a
 * size class), the first of them checked byte by byte (the program exits
 * with 1 on a wrong byte), then the median over timed batches of rank 0's
 * time, each batch about BATCH_BYTES.
 *
 *   result bench=protocols metric=bw alloc=A np=N size=S value=MB/s unit=MB/s
 *
 * MB/s is 10^6 bytes per second. */
#include "bench.h"

#define WINDOW 4                 /* messages in flight per window */
#define WINDOW_BYTES (128 * MIB) /* receive buffers of one window, at most */
#define MIN_SIZE (64 * KIB)
#define MAX_SIZE (64 * MIB)
#define QUICK_MAX (256 * KIB)
#define BATCH_BYTES (64 * MIB) /* bytes moved per timed batch, about */
#define WARMUP 2               /* untimed windows per size */
#define TAG_DATA 1
#define TAG_ACK 2
#define TAG_STOP 3

static MPI_Comm pair; /* ranks 0 and 1 of MPI_COMM_WORLD */
static int me, mpi_alloc;

static void *buffer(long bytes)
{
    if (!mpi_alloc)
        return xmalloc((size_t)bytes);
    void *p = NULL;
    /* Errors are fatal (MPI_COMM_WORLD's default handler). */
    MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p);
    return p;
}

static void release(void *p)
{
    if (mpi_alloc)
        MPI_Free_mem(p);
    else
        free(p);
}

/* Messages per window at this size. */
static int window_of(long size)
{
    long fit = WINDOW_BYTES / size;
    return fit >= WINDOW ? WINDOW : fit > 0 ? (int)fit : 1;
}

/* Byte i of a size-byte message: differs between neighbouring 1 KiB chunks
 * and between sizes, so a chunk copied to the wrong place or left over
 * from the previous size shows. */
static unsigned char pattern(long i, long size)
{
    return (unsigned char)((i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24)) * 31 + size / MIN_SIZE);
}

/* n windows of size-byte messages from rank 0 (buf: the message) to rank 1
 * (buf: window_of(size) receive buffers), each acknowledged. */
static void windows(char *buf, long size, long n)
{
    MPI_Request req[WINDOW];
    int w = window_of(size);
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++) {
            if (me == 0)
                MPI_Isend(buf, (int)size, MPI_CHAR, 1, TAG_DATA, pair, &req[k]);
            else
                MPI_Irecv(buf + k * size, (int)size, MPI_CHAR, 0, TAG_DATA, pair, &req[k]);
        }
        waitall(w, req);
        if (me == 0)
            MPI_Recv(NULL, 0, MPI_CHAR, 1, TAG_ACK, pair, MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_CHAR, 0, TAG_ACK, pair);
    }
}

/* Rank 1: wrong bytes among the w messages just received into buf. */
static long wrong_bytes(const char *buf, long size, int w)
{
    long wrong = 0;
    for (int k = 0; k < w; k++)
        for (long i = 0; i < size; i++)
            wrong += (unsigned char)buf[k * size + i] != pattern(i, size);
    return wrong;
}

/* One size: prepared buffers, the checked warm-up, timed batches. Returns
 * 0, or 1 after a message when rank 1 received wrong bytes. */
static int measure(char *buf, long size, int quick, int np, const char *alloc)
{
    int w = window_of(size);
    if (me == 0)
        for (long i = 0; i < size; i++)
            buf[i] = (char)pattern(i, size);
    else
        for (long i = 0; i < size * w; i++)
            buf[i] = (char)~pattern(i % size, size);
    windows(buf, size, 1);
    long wrong = me == 1 ? wrong_bytes(buf, size, w) : 0;
    MPI_Bcast(&wrong, 1, MPI_LONG, 1, pair);
    if (wrong) {
        if (me == 1)
            fprintf(stderr, "protocols: %ld wrong bytes at size %ld\n", wrong, size);
        return 1;
    }
    windows(buf, size, (quick ? 1 : WARMUP) - 1);

    long n = BATCH_BYTES / (size * w);
    n = quick ? 2 : n < 1 ? 1 : n;
    int batches = quick ? 3 : 5;
    double t[5];
    for (int b = 0; b < batches; b++) {
        MPI_Barrier(pair);
        double t0 = MPI_Wtime();
        windows(buf, size, n);
        t[b] = MPI_Wtime() - t0;
    }
    double m = median(t, batches);
    if (me == 0)
        result("protocols", "bw", (double)(size * w * n) / m / 1e6, "MB/s",
               "alloc=%s np=%d size=%ld", alloc, np, size);
    return 0;
}

/* Ranks 0 and 1: every size up to max. Returns the exit status. */
static int run_pair(long max, int quick, int np, const char *alloc)
{
    long bytes = me == 0 ? max : max * window_of(max);
    char *buf = buffer(bytes);
    memset(buf, 0, (size_t)bytes); /* touch every page before timing */
    int status = 0;
    for (long s = MIN_SIZE; s <= max && status == 0; s *= 4)
        status = measure(buf, s, quick, np, alloc);
    release(buf);
    return status;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    const char *alloc = o.alloc ? o.alloc : "malloc";
    long max = o.max ? o.max : o.quick ? QUICK_MAX : MAX_SIZE;
    const char *bad = strcmp(alloc, "malloc") != 0 && strcmp(alloc, "mpi") != 0
                          ? "--alloc must be malloc or mpi"
                      : max < MIN_SIZE || max > MAX_SIZE ? "--max must be within 64K..64M"
                                                         : NULL;
    if (bad) {
        bench_usage(argv[0], bad);
        return 2;
    }
    mpi_alloc = strcmp(alloc, "mpi") == 0;

    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (rank == 0)
            fprintf(stderr, "protocols needs 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    int status = 0;
    if (pair != MPI_COMM_NULL) {
        me = rank;
        status = run_pair(max, o.quick, np, alloc);
        MPI_Comm_free(&pair);
    }
    /* Rank 0 releases the helpers; they wait, idle, in a blocking receive. */
    if (rank == 0)
        for (int r = 2; r < np; r++)
            MPI_Send(NULL, 0, MPI_CHAR, r, TAG_STOP, MPI_COMM_WORLD);
    else if (rank >= 2)
        MPI_Recv(NULL, 0, MPI_CHAR, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return status;
}
