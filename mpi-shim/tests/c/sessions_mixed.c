/* The world model and sessions in one process: a session before MPI_Init,
 * another during it, one more after MPI_Finalize; communicators of both
 * models side by side keep their messages apart. */
#include "sessions.h"

int main(int argc, char **argv) {
    int flag = -1, rank, size, n;
    MPI_Session before = open_session();
    MPI_Comm early = comm_of(before, "mpi://WORLD", "mixed.early");
    abort_comm = early;
    MPI_Initialized(&flag);
    CHECK(!flag, "a session made MPI_Initialized true");

    OK(MPI_Init(&argc, &argv));
    abort_comm = MPI_COMM_WORLD;
    MPI_Initialized(&flag);
    CHECK(flag, "MPI_Initialized false after MPI_Init");
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    report_library_as(rank);
    int erank, esize;
    OK(MPI_Comm_rank(early, &erank));
    OK(MPI_Comm_size(early, &esize));
    CHECK(erank == rank && esize == size, "mpi://WORLD %d/%d, world %d/%d", erank, esize,
          rank, size);
    OK(MPI_Comm_size(MPI_COMM_SELF, &n));
    CHECK(n == 1, "MPI_COMM_SELF of size %d", n);

    /* The same tag on MPI_COMM_WORLD and the session's communicator. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int a = 10 + rank, b = 20 + rank, ga = -1, gb = -1;
    MPI_Request r[2];
    OK(MPI_Irecv(&gb, 1, MPI_INT, prev, 3, early, &r[1]));
    OK(MPI_Irecv(&ga, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Send(&a, 1, MPI_INT, next, 3, MPI_COMM_WORLD));
    OK(MPI_Send(&b, 1, MPI_INT, next, 3, early));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK(ga == 10 + prev && gb == 20 + prev, "crossed messages %d %d", ga, gb);
    exercise(MPI_COMM_WORLD, 100);
    exercise(early, 200);

    /* Collectives outstanding at once on the session's communicator, on
     * the world and on a split of the session's communicator, completed
     * in reverse order; each communicator has its own flag board. */
    MPI_Comm parity;
    OK(MPI_Comm_split(early, rank % 2, rank, &parity));
    for (int round = 0; round < 20; round++) {
        int on_early = -1, on_world = -1, on_half = -1, v[3] = {rank, rank + round, 1};
        int big[300], sum[300];
        for (int i = 0; i < 300; i++) big[i] = rank + i;
        MPI_Request q[4];
        OK(MPI_Iallreduce(&v[0], &on_early, 1, MPI_INT, MPI_SUM, early, &q[0]));
        OK(MPI_Iallreduce(&v[1], &on_world, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q[1]));
        OK(MPI_Iallreduce(&v[2], &on_half, 1, MPI_INT, MPI_SUM, parity, &q[2]));
        OK(MPI_Iallreduce(big, sum, 300, MPI_INT, MPI_SUM, early, &q[3]));
        for (int k = 3; k >= 0; k--) OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
        CHECK(on_early == size * (size - 1) / 2, "session allreduce %d", on_early);
        CHECK(on_world == size - 1 + round, "world allreduce %d", on_world);
        CHECK(on_half == (size + 1 - rank % 2) / 2, "split allreduce %d", on_half);
        for (int i = 0; i < 300; i++)
            CHECK(sum[i] == size * (size - 1) / 2 + size * i, "session allreduce [%d]", i);
    }
    OK(MPI_Comm_free(&parity));

    /* A session opened inside the world model outlives it. */
    MPI_Session during = open_session();
    MPI_Comm late = comm_of(during, "mpi://WORLD", "mixed.late");
    exercise(late, 300);
    OK(MPI_Comm_free(&early));
    OK(MPI_Session_finalize(&before));

    OK(MPI_Finalize());
    abort_comm = late;
    MPI_Finalized(&flag);
    CHECK(flag, "MPI_Finalized false after MPI_Finalize");
    MPI_Initialized(&flag);
    CHECK(flag, "MPI_Initialized false after MPI_Finalize");
    OK(MPI_Session_set_errhandler(during, MPI_ERRORS_RETURN));
    EXPECT(MPI_Comm_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);
    exercise(late, 400);

    /* A new session after MPI_Finalize. */
    MPI_Session after = open_session();
    MPI_Comm last = comm_of(after, "mpi://world", "mixed.last");
    exercise(last, 500);
    OK(MPI_Comm_free(&last));
    OK(MPI_Session_finalize(&after));
    abort_comm = MPI_COMM_NULL;
    OK(MPI_Comm_free(&late));
    OK(MPI_Session_finalize(&during));
    printf("sessions_mixed: rank %d ok\n", rank);
    return 0;
}
