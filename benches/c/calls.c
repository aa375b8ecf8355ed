/* The cost of the small-message calls themselves, between ranks 0 and 1
 * (run it on 2 processes).
 *
 * --mode stream (the default): rank 0 sends `n` 8-byte messages with
 * MPI_Send, rank 1 receives them with MPI_Recv; a sender ahead of its
 * receiver makes most receives find their message arrived. Reports the
 * median over 5 batches (3 with --quick) of the time per message, in ns;
 * n is 100000 (--iters K sets it, --quick 1000).
 *
 * --mode mix: a fixed mix of calls that never waits for a message in
 * flight, for counting instructions per call under callgrind (see
 * README.md): each of K rounds (--iters K, default 500) sends 32
 * messages with MPI_Send that rank 1 receives with MPI_Recv after a
 * barrier (arrived), then rank 1 posts 32 MPI_Irecv, rank 0 sends 32
 * with MPI_Isend and both complete theirs with MPI_Waitall. Reports the
 * rounds run.
 *
 * --mode colls: each of K rounds (--iters K, default 500) runs
 * MPI_Barrier, an 8-byte MPI_Bcast from rank 0 and an 8-byte
 * MPI_Allreduce on MPI_COMM_WORLD, rank 1 sleeping 400 us before each:
 * it arrives last, so its calls never wait, and their counts under
 * callgrind are the path's own (rank 0's include its waiting). Reports
 * the rounds run. */
#include <unistd.h>

#include "bench.h"

enum { MIX = 32, SIZE = 8 };

static double stream(int rank, long n, int batches)
{
    char buf[SIZE] = {0};
    double *t = xmalloc((size_t)batches * sizeof *t);
    for (int b = 0; b < batches; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            if (rank == 0)
                MPI_Send(buf, SIZE, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            else if (rank == 1)
                MPI_Recv(buf, SIZE, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t[b] = (MPI_Wtime() - t0) / (double)n;
    }
    double m = median(t, batches);
    free(t);
    return m;
}

static void mix(int rank, long rounds)
{
    char buf[MIX * SIZE] = {0};
    MPI_Request req[MIX];
    for (long r = 0; r < rounds; r++) {
        if (rank == 0)
            for (int k = 0; k < MIX; k++)
                MPI_Send(buf + k * SIZE, SIZE, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            for (int k = 0; k < MIX; k++)
                MPI_Recv(buf + k * SIZE, SIZE, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 1)
            for (int k = 0; k < MIX; k++)
                MPI_Irecv(buf + k * SIZE, SIZE, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            for (int k = 0; k < MIX; k++)
                MPI_Isend(buf + k * SIZE, SIZE, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[k]);
            waitall(MIX, req);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            waitall(MIX, req);
    }
}

static void colls(int rank, long rounds)
{
    double x = 1, sum = 0;
    for (long r = 0; r < rounds; r++) {
        if (rank == 1)
            usleep(400);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            usleep(400);
        MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 1)
            usleep(400);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    const char *mode = o.mode ? o.mode : "stream";
    if (strcmp(mode, "stream") != 0 && strcmp(mode, "mix") != 0 && strcmp(mode, "colls") != 0) {
        bench_usage(argv[0], "--mode is stream, mix or colls");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (rank == 0)
            fprintf(stderr, "calls: run it on 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    if (strcmp(mode, "stream") == 0) {
        long n = o.iters ? o.iters : o.quick ? 1000 : 100000;
        double t = stream(rank, n, o.quick ? 3 : 5);
        if (rank == 0)
            result("calls", "stream", t * 1e9, "ns", "size=%d", SIZE);
    } else if (strcmp(mode, "mix") == 0) {
        long rounds = o.iters ? o.iters : 500;
        mix(rank, rounds);
        if (rank == 0)
            result("calls", "mix", (double)rounds, "rounds", "calls=%d", MIX);
    } else {
        long rounds = o.iters ? o.iters : 500;
        colls(rank, rounds);
        if (rank == 0)
            result("calls", "colls", (double)rounds, "rounds", "calls=3");
    }
    MPI_Finalize();
    return 0;
}
