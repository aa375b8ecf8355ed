/* Collectives: barrier, bcast from every root, reduce and allreduce with
 * every applicable predefined operation, MPI_IN_PLACE. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int queried;
    MPI_Query_thread(&queried);
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE && queried == provided,
          "provided %d, queried %d", provided, queried);
    report_library();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);

    enum { N = 5000 };
    static int v[N];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < N; i++) v[i] = rank == root ? root * 31 + i : -1;
        MPI_Bcast(v, N, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) CHECK(v[i] == root * 31 + i, "bcast root %d", root);
    }

    long mine[3] = {rank + 1, -rank, 1L << rank % 60}, r[3];
    MPI_Allreduce(mine, r, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long s = (long)size * (size + 1) / 2;
    CHECK(r[0] == s && r[1] == -(s - size), "sum %ld %ld", r[0], r[1]);
    MPI_Allreduce(mine, r, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(r[0] == size, "max %ld", r[0]);
    MPI_Allreduce(mine, r, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    CHECK(r[0] == 1, "min %ld", r[0]);
    MPI_Allreduce(&mine[2], r, 1, MPI_LONG, MPI_BOR, MPI_COMM_WORLD);
    CHECK(r[0] == (size >= 60 ? -1 : (1L << size) - 1), "bor %lx", r[0]);

    double d = rank + 0.5, dsum = 0;
    for (int root = 0; root < size; root++) {
        MPI_Reduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        if (rank == root) CHECK(dsum == size * size / 2.0, "reduce to %d: %f", root, dsum);
    }
    float prod = rank == 0 ? 3.0f : 1.0f;
    MPI_Allreduce(MPI_IN_PLACE, &prod, 1, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD);
    CHECK(prod == 3.0f, "in-place prod %f", prod);

    /* Every rank holds the same bits after a floating-point allreduce. */
    double x = 1.0 / (rank + 3), y, y0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    y0 = y;
    MPI_Bcast(&y0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(&y, &y0, sizeof y) == 0, "allreduce differs across ranks");

    MPI_Finalize();
    printf("coll: rank %d ok\n", rank);
    return 0;
}
