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
