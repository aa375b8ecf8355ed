/* A flag board whose setup fails at one member. Rank 1 uses up its file
 * descriptors before the first collective on MPI_COMM_WORLD, so when that
 * collective sets up the board, rank 1 cannot take copies of its peers'
 * heap descriptors to map their areas (or, with an argument, cannot even
 * make a heap for its own area). Every member must then run
 * the communicator's collectives on messages, alike: the nonblocking ones
 * started before the setup settled, and the blocking and nonblocking ones
 * after it. Once rank 1 has its descriptors back, a duplicate of the
 * communicator sets up a board of its own. On virtual nodes the failing
 * board is one node's: the other nodes keep theirs. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "check.h"

enum { MAX_FDS = 4096, BIG = 20000 };
static int fds[MAX_FDS];

/* Every collective the board runs, with checked results. */
static void collectives(MPI_Comm comm, int round) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static double big[BIG];
    int x = rank + round, sum = -1, max = -1, scan = -1;
    int root = round % size;
    for (int i = 0; i < BIG; i++) big[i] = rank == root ? round + i : -1;

    /* Nonblocking ones outstanding together (before the setup settles,
     * the first time). */
    MPI_Request r[3];
    MPI_Ibarrier(comm, &r[0]);
    MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm, &r[1]);
    MPI_Ibcast(big, BIG, MPI_DOUBLE, root, comm, &r[2]);
    MPI_Status st[3];
    MPI_Waitall(3, r, st);
    CHECK(sum == size * (size - 1) / 2 + size * round, "iallreduce: %d", sum);
    for (int i = 0; i < BIG; i++) CHECK(big[i] == round + i, "ibcast [%d] = %g", i, big[i]);

    MPI_Barrier(comm);
    MPI_Allreduce(&x, &max, 1, MPI_INT, MPI_MAX, comm);
    CHECK(max == size - 1 + round, "allreduce max: %d", max);
    long v = rank;
    MPI_Bcast(&v, 1, MPI_LONG, root, comm);
    CHECK(v == root, "bcast: %ld", v);
    MPI_Scan(&x, &scan, 1, MPI_INT, MPI_SUM, comm);
    CHECK(scan == rank * (rank + 1) / 2 + (rank + 1) * round, "scan: %d", scan);

    int *all = malloc((size_t)size * sizeof *all), *mine = malloc((size_t)size * sizeof *mine);
    for (int i = 0; i < size; i++) mine[i] = rank * 100 + i;
    MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, comm);
    for (int i = 0; i < size; i++) CHECK(all[i] == i + round, "allgather [%d] = %d", i, all[i]);
    MPI_Alltoall(mine, 1, MPI_INT, all, 1, MPI_INT, comm);
    for (int i = 0; i < size; i++) CHECK(all[i] == i * 100 + rank, "alltoall [%d] = %d", i, all[i]);
    memset(all, 0xff, (size_t)size * sizeof *all);
    MPI_Gather(&x, 1, MPI_INT, all, 1, MPI_INT, root, comm);
    if (rank == root)
        for (int i = 0; i < size; i++) CHECK(all[i] == i + round, "gather [%d] = %d", i, all[i]);
    int got = -1;
    MPI_Scatter(mine, 1, MPI_INT, &got, 1, MPI_INT, root, comm);
    CHECK(got == root * 100 + rank, "scatter: %d", got);
    MPI_Reduce_scatter_block(mine, &got, 1, MPI_INT, MPI_SUM, comm);
    CHECK(got == 100 * size * (size - 1) / 2 + size * rank, "reduce_scatter_block: %d", got);
    free(all);
    free(mine);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Messages both ways between every pair first, small and large, so
     * that network connections between virtual nodes are made while
     * rank 1 still has descriptors. */
    enum { WARM = 1 << 20 };
    char *out = calloc(WARM, 1), *in = calloc(WARM, 1);
    const int lens[] = {8, WARM};
    for (int d = 1; d < size; d++) {
        int to = (rank + d) % size, from = (rank + size - d) % size;
        for (int k = 0; k < 2; k++)
            MPI_Sendrecv(out, lens[k], MPI_CHAR, to, d, in, lens[k], MPI_CHAR, from, d,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(out);
    free(in);

    /* With an argument, rank 1 has no shared heap yet, so it cannot
     * place its own area; without, its heap has room (MPI_Alloc_mem makes
     * it), and it fails to map its peers' areas. */
    void *mem = NULL;
    if (argc < 2) MPI_Alloc_mem(64, MPI_INFO_NULL, &mem);

    int n = 0, err = 0;
    if (rank == 1) {
        /* At most MAX_FDS descriptors in all, whatever the host allows. */
        struct rlimit lim;
        CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0, "getrlimit");
        if (lim.rlim_cur > MAX_FDS) lim.rlim_cur = MAX_FDS;
        CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
        int fd;
        while (n < MAX_FDS && (fd = dup(2)) >= 0) fds[n++] = fd;
        err = errno;
        CHECK(err == EMFILE, "dup stopped at %d descriptors with errno %d", n, err);
    }
    for (int round = 0; round < 3; round++) collectives(MPI_COMM_WORLD, round);
    while (n > 0) close(fds[--n]);

    /* Still on messages for MPI_COMM_WORLD; a board for the duplicate. */
    collectives(MPI_COMM_WORLD, 3);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int round = 0; round < 3; round++) collectives(dup, round);
    MPI_Comm_free(&dup);

    if (mem) MPI_Free_mem(mem);
    printf("boardfail: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
