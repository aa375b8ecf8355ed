/* The program the profiling test wraps (pmpi_wrapper.c): 3 sends and
 * receives around a ring, 2 sendrecvs, 1 allreduce, 1 barrier, 2
 * nonblocking pairs completed by MPI_Waitall (not wrapped), and calls
 * whose implementation could use the wrapped functions inside (a
 * broadcast, an alltoall). */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    report_library();
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int x = rank, y = -1;
    for (int i = 0; i < 3; i++) {
        if (rank % 2 == 0) {
            OK(MPI_Send(&x, 1, MPI_INT, next, i, MPI_COMM_WORLD));
            OK(MPI_Recv(&y, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Recv(&y, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            OK(MPI_Send(&x, 1, MPI_INT, next, i, MPI_COMM_WORLD));
        }
        CHECK(y == prev, "got %d from %d", y, prev);
    }
    for (int i = 0; i < 2; i++) {
        y = -1;
        OK(MPI_Sendrecv(&x, 1, MPI_INT, next, 7, &y, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        CHECK(y == prev, "got %d from %d", y, prev);
    }
    int sum = 0;
    OK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request reqs[4];
    int a[2] = {x, x}, b[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        OK(MPI_Isend(&a[i], 1, MPI_INT, next, 9, MPI_COMM_WORLD, &reqs[2 * i]));
        OK(MPI_Irecv(&b[i], 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &reqs[2 * i + 1]));
    }
    MPI_Status statuses[4];
    OK(MPI_Waitall(4, reqs, statuses));
    CHECK(b[0] == prev && b[1] == prev, "nonblocking: %d %d", b[0], b[1]);
    int root_value = rank == 0 ? 42 : 0;
    OK(MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(root_value == 42, "bcast %d", root_value);
    int out[64], in[64];
    for (int i = 0; i < size; i++)
        out[i] = rank * 100 + i;
    OK(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(in[i] == i * 100 + rank, "alltoall from %d: %d", i, in[i]);
    MPI_Finalize();
    printf("pmpi_app: rank %d ok\n", rank);
    return 0;
}
