/* Multithreaded ping-pong under MPI_THREAD_MULTIPLE, between ranks 0 and 1
 * (run it on 2 processes; further ranks wait in the final barrier).
 * Each rank runs T threads (T = 1, 2, 4); thread t of rank 0 ping-pongs
 * 8-byte messages with thread t of rank 1 on a communicator of its own
 * (a duplicate of MPI_COMM_WORLD per thread), all pairs at once.
 *   mt_rate threads=T: round trips per second, summed over the T pairs;
 *   mt_latency threads=T: the half round trip each pair sees, in us.
 * A library that serializes its calls behind one lock held across waits
 * cannot run this at all (a thread blocked in MPI_Recv would keep its
 * sibling from sending); one that releases it shows here what the
 * threads' contention costs. Each value is the median of 7 timed batches
 * (3 with --quick) after a warm-up batch. */
#include "bench.h"

#include <pthread.h>

#define MAX_THREADS 4
#define SIZE 8
#define TAG 7

static int me, peer;
static MPI_Comm comms[MAX_THREADS];

struct pair_arg {
    MPI_Comm comm;
    long rounds;
    pthread_barrier_t *start;
};

static void *pair_loop(void *p)
{
    struct pair_arg *a = p;
    char sbuf[SIZE] = {0}, rbuf[SIZE];
    pthread_barrier_wait(a->start);
    for (long i = 0; i < a->rounds; i++) {
        if (me == 0) {
            MPI_Send(sbuf, SIZE, MPI_CHAR, peer, TAG, a->comm);
            MPI_Recv(rbuf, SIZE, MPI_CHAR, peer, TAG, a->comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, SIZE, MPI_CHAR, peer, TAG, a->comm, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, SIZE, MPI_CHAR, peer, TAG, a->comm);
        }
    }
    return NULL;
}

/* Seconds for `rounds` round trips on each of `nthreads` pairs at once. */
static double batch(int nthreads, long rounds, MPI_Comm pair)
{
    pthread_t t[MAX_THREADS];
    struct pair_arg a[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    for (int k = 0; k < nthreads; k++) {
        a[k] = (struct pair_arg){comms[k], rounds, &start};
        pthread_create(&t[k], NULL, pair_loop, &a[k]);
    }
    /* Both ranks start together, then each starts its threads. */
    MPI_Barrier(pair);
    double t0 = MPI_Wtime();
    pthread_barrier_wait(&start);
    for (int k = 0; k < nthreads; k++)
        pthread_join(t[k], NULL);
    double dt = MPI_Wtime() - t0;
    pthread_barrier_destroy(&start);
    return dt;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o) != 0)
        return 2;
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "threads: needs 2 processes and MPI_THREAD_MULTIPLE (provided %d)\n",
                    provided);
        MPI_Finalize();
        return size < 2 ? 2 : 0;
    }
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (rank < 2) {
        me = rank;
        peer = 1 - rank;
        for (int k = 0; k < MAX_THREADS; k++)
            MPI_Comm_dup(pair, &comms[k]);
        int batches = o.quick ? 3 : 7;
        long rounds = o.iters ? o.iters : o.quick ? 200 : 5000;
        for (int nthreads = 1; nthreads <= MAX_THREADS; nthreads *= 2) {
            batch(nthreads, rounds / 10 + 1, pair); /* warm-up */
            double t[7];
            for (int b = 0; b < batches; b++)
                t[b] = batch(nthreads, rounds, pair);
            double m = median(t, batches);
            if (me == 0) {
                result("threads", "mt_rate", (double)rounds * nthreads / m, "round_trips/s",
                       "threads=%d size=%d", nthreads, SIZE);
                result("threads", "mt_latency", m / (double)rounds / 2 * 1e6, "us",
                       "threads=%d size=%d", nthreads, SIZE);
            }
        }
        for (int k = 0; k < MAX_THREADS; k++)
            MPI_Comm_free(&comms[k]);
        MPI_Comm_free(&pair);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
