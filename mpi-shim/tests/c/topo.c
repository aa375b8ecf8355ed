/* Process topologies: dims_create, a periodic 3-D Cartesian grid with
 * halo-exchange style shifts and Sendrecv, a non-periodic grid's edges,
 * cart_sub rows and columns with an allreduce on each, graphs and
 * distributed graphs with their neighbours, bad arguments.
 * Optional argument: processes per node (the test then runs on the
 * node's communicator: the engine has no inter-node transport yet). */
#include <string.h>
#include "check.h"

/* Some checks are stricter than MPICH's own library: they run only on
 * Tessel's. */
static int is_tessel(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    return strncmp(lib, "Tessel", 6) == 0;
}

static MPI_Comm world;
static int rank, size;

static void dims(void) {
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0}, fixed[3] = {0, 3, 0};
    OK(MPI_Dims_create(6, 2, d2));
    CHECK(d2[0] == 3 && d2[1] == 2, "6 over 2: %d %d", d2[0], d2[1]);
    OK(MPI_Dims_create(size, 3, d3));
    CHECK(d3[0] * d3[1] * d3[2] == size && d3[0] >= d3[1] && d3[1] >= d3[2],
          "%d over 3: %d %d %d", size, d3[0], d3[1], d3[2]);
    OK(MPI_Dims_create(12, 3, fixed));
    CHECK(fixed[0] == 2 && fixed[1] == 3 && fixed[2] == 2, "12 with a 3: %d %d %d",
          fixed[0], fixed[1], fixed[2]);
    /* The most balanced factors, not the greedy ones (12 x 6). */
    int d72[2] = {0, 0};
    OK(MPI_Dims_create(72, 2, d72));
    CHECK(d72[0] == 9 && d72[1] == 8, "72 over 2: %d %d", d72[0], d72[1]);
    int bad[2] = {0, 3};
    EXPECT(MPI_Dims_create(7, 2, bad), MPI_ERR_DIMS);
    EXPECT(MPI_Dims_create(4, -1, bad), MPI_ERR_ARG);
}

/* A periodic 3-D grid: exchange ranks with both neighbours along every
 * dimension, as a halo exchange would. */
static void periodic_grid(void) {
    int d[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3], r, status, nd;
    MPI_Comm cart;
    OK(MPI_Dims_create(size, 3, d));
    OK(MPI_Cart_create(world, 3, d, periods, 0, &cart));
    OK(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "topology %d", status);
    OK(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == 3, "ndims %d", nd);
    int gd[3], gp[3], gc[3];
    OK(MPI_Cart_get(cart, 3, gd, gp, gc));
    OK(MPI_Cart_coords(cart, rank, 3, coords));
    for (int i = 0; i < 3; i++)
        CHECK(gd[i] == d[i] && gp[i] == 1 && gc[i] == coords[i], "cart_get dim %d", i);
    CHECK(coords[2] == rank % d[2], "last coordinate %d", coords[2]);
    for (int q = 0; q < size; q++) {
        OK(MPI_Cart_coords(cart, q, 3, coords));
        OK(MPI_Cart_rank(cart, coords, &r));
        CHECK(r == q, "rank of coordinates of %d: %d", q, r);
    }
    OK(MPI_Cart_coords(cart, rank, 3, coords));
    for (int dim = 0; dim < 3; dim++) {
        for (int disp = -1; disp <= 1; disp += 2) {
            int src, dst, got = -1;
            OK(MPI_Cart_shift(cart, dim, disp, &src, &dst));
            int c[3] = {coords[0], coords[1], coords[2]};
            c[dim] = (c[dim] + disp + d[dim]) % d[dim];
            OK(MPI_Cart_rank(cart, c, &r));
            CHECK(dst == r, "dim %d disp %d: dest %d, expected %d", dim, disp, dst, r);
            OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, dim, &got, 1, MPI_INT, src, dim, cart,
                            MPI_STATUS_IGNORE));
            CHECK(got == src, "halo from %d carried %d", src, got);
        }
    }
    /* Periodic coordinates wrap. */
    int wrapped[3] = {coords[0] + d[0], coords[1] - d[1], coords[2]};
    OK(MPI_Cart_rank(cart, wrapped, &r));
    CHECK(r == rank, "wrapped rank %d", r);
    EXPECT(MPI_Cart_shift(cart, 3, 1, &r, &r), MPI_ERR_ARG);
    EXPECT(MPI_Cart_coords(cart, size, 3, coords), MPI_ERR_RANK);
    EXPECT(MPI_Cart_coords(cart, rank, 2, coords), MPI_ERR_ARG);
    OK(MPI_Comm_free(&cart));
}

/* A non-periodic 2-D grid: rows and columns by cart_sub, an allreduce on
 * each; MPI_PROC_NULL off the edges. */
static void rows_and_columns(void) {
    int d[2] = {0, 0}, periods[2] = {0, 0}, coords[2], src, dst, sum, n;
    MPI_Comm cart, row, col;
    OK(MPI_Dims_create(size, 2, d));
    OK(MPI_Cart_create(world, 2, d, periods, 1, &cart));
    OK(MPI_Cart_coords(cart, rank, 2, coords));
    OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK((coords[0] == 0) == (src == MPI_PROC_NULL), "source %d at row %d", src,
          coords[0]);
    CHECK((coords[0] == d[0] - 1) == (dst == MPI_PROC_NULL), "dest %d at row %d", dst,
          coords[0]);
    int got = -5;
    OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 0, &got, 1, MPI_INT, src, 0, cart,
                    MPI_STATUS_IGNORE));
    CHECK(src == MPI_PROC_NULL ? got == -5 : got == src, "edge exchange got %d", got);
    int off[2] = {d[0], 0};
    EXPECT(MPI_Cart_rank(cart, off, &n), MPI_ERR_ARG);

    OK(MPI_Cart_sub(cart, (int[]){0, 1}, &row));
    OK(MPI_Cart_sub(cart, (int[]){1, 0}, &col));
    OK(MPI_Comm_size(row, &n));
    CHECK(n == d[1], "row of %d", n);
    OK(MPI_Comm_rank(row, &n));
    CHECK(n == coords[1], "rank in row %d", n);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row));
    int expect = 0;
    for (int j = 0; j < d[1]; j++) expect += coords[0] * d[1] + j;
    CHECK(sum == expect, "row sum %d, expected %d", sum, expect);
    OK(MPI_Comm_size(col, &n));
    CHECK(n == d[0], "column of %d", n);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, col));
    expect = 0;
    for (int i = 0; i < d[0]; i++) expect += i * d[1] + coords[1];
    CHECK(sum == expect, "column sum %d, expected %d", sum, expect);
    OK(MPI_Cartdim_get(row, &n));
    CHECK(n == 1, "row dims %d", n);
    OK(MPI_Comm_free(&row));
    OK(MPI_Comm_free(&col));
    OK(MPI_Comm_free(&cart));

    /* A grid smaller than the communicator leaves the last rank out. */
    int small = size > 1 ? size - 1 : 1, newrank;
    OK(MPI_Cart_create(world, 1, &small, periods, 0, &cart));
    CHECK((rank < small) == (cart != MPI_COMM_NULL), "small grid gave %x", (unsigned)cart);
    if (cart != MPI_COMM_NULL) OK(MPI_Comm_free(&cart));
    OK(MPI_Cart_map(world, 1, &small, periods, &newrank));
    CHECK(newrank == (rank < small ? rank : MPI_UNDEFINED), "cart_map %d", newrank);
    int big = size + 1;
    EXPECT(MPI_Cart_create(world, 1, &big, periods, 0, &cart), MPI_ERR_ARG);
    int neg = -1;
    if (is_tessel())
        EXPECT(MPI_Cart_create(world, 1, &neg, periods, 0, &cart), MPI_ERR_DIMS);
    EXPECT(MPI_Cartdim_get(world, &n), MPI_ERR_TOPOLOGY);
}

/* A ring as a graph, then as distributed graphs. */
static void graphs(void) {
    int left = (rank + size - 1) % size, right = (rank + 1) % size, status, n, e;
    MPI_Comm g, dg;
    OK(MPI_Topo_test(world, &status));
    CHECK(status == MPI_UNDEFINED, "world has topology %d", status);

    /* Node i's neighbours: i+1 (and i-1 when different). */
    int *index = malloc(size * sizeof(int)), *edges = malloc(2 * size * sizeof(int));
    int m = 0;
    for (int i = 0; i < size; i++) {
        if (size > 1) edges[m++] = (i + 1) % size;
        if (size > 2) edges[m++] = (i + size - 1) % size;
        index[i] = m;
    }
    OK(MPI_Graph_create(world, size, index, edges, 0, &g));
    OK(MPI_Topo_test(g, &status));
    CHECK(status == MPI_GRAPH, "graph topology %d", status);
    OK(MPI_Graphdims_get(g, &n, &e));
    CHECK(n == size && e == m, "graphdims %d %d", n, e);
    OK(MPI_Graph_neighbors_count(g, rank, &n));
    CHECK(n == (size > 2 ? 2 : size - 1), "neighbours %d", n);
    int nb[2] = {-1, -1};
    OK(MPI_Graph_neighbors(g, rank, 2, nb));
    CHECK(n == 0 || nb[0] == right, "first neighbour %d", nb[0]);
    int *gi = malloc(size * sizeof(int)), *ge = malloc(2 * size * sizeof(int));
    OK(MPI_Graph_get(g, size, 2 * size, gi, ge));
    CHECK(memcmp(gi, index, size * sizeof(int)) == 0 && memcmp(ge, edges, m * sizeof(int)) == 0,
          "graph_get");
    int newrank;
    OK(MPI_Graph_map(world, size, index, edges, &newrank));
    CHECK(newrank == rank, "graph_map %d", newrank);
    EXPECT(MPI_Graph_neighbors_count(g, size, &n), MPI_ERR_RANK);
    OK(MPI_Comm_free(&g));

    /* Adjacent form, weighted: in from the left, out to the right. */
    int lw = 10 + left, rw = 10 + rank;
    OK(MPI_Dist_graph_create_adjacent(world, 1, &left, &lw, 1, &right, &rw, MPI_INFO_NULL,
                                      0, &dg));
    OK(MPI_Topo_test(dg, &status));
    CHECK(status == MPI_DIST_GRAPH, "dist graph topology %d", status);
    int in, out, weighted, src = -1, sw = -1, dst = -1, dw = -1;
    OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
    CHECK(in == 1 && out == 1 && weighted, "counts %d %d %d", in, out, weighted);
    OK(MPI_Dist_graph_neighbors(dg, 1, &src, &sw, 1, &dst, &dw));
    CHECK(src == left && sw == lw && dst == right && dw == rw, "neighbours %d(%d) %d(%d)",
          src, sw, dst, dw);
    int got = -1;
    OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 0, &got, 1, MPI_INT, src, 0, dg,
                    MPI_STATUS_IGNORE));
    CHECK(got == left, "from the left %d", got);
    OK(MPI_Comm_free(&dg));

    /* Unweighted. */
    OK(MPI_Dist_graph_create_adjacent(world, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
    CHECK(in == 1 && out == 1 && !weighted, "unweighted counts %d %d %d", in, out,
          weighted);
    OK(MPI_Comm_free(&dg));
    if (is_tessel()) {
        EXPECT(MPI_Dist_graph_create_adjacent(world, 1, &size, MPI_UNWEIGHTED, 0, NULL,
                                              MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg),
               MPI_ERR_RANK);
        EXPECT(MPI_Dist_graph_create_adjacent(world, 1, &left, MPI_UNWEIGHTED, 0, NULL,
                                              MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg),
               MPI_ERR_ARG);
    }

    /* General form: each process names the edge to its right; every
     * process learns its own in and out edges. */
    int deg = 1;
    OK(MPI_Dist_graph_create(world, 1, &rank, &deg, &right, &rw, MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
    CHECK(in == 1 && out == 1 && weighted, "general counts %d %d %d", in, out, weighted);
    OK(MPI_Dist_graph_neighbors(dg, 1, &src, &sw, 1, &dst, &dw));
    CHECK(src == left && sw == lw && dst == right && dw == rw, "general %d(%d) %d(%d)",
          src, sw, dst, dw);
    OK(MPI_Comm_free(&dg));
    /* Rank 0 names every edge alone. */
    int *srcs = malloc(size * sizeof(int)), *degs = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) {
        srcs[i] = i;
        degs[i] = 1;
        edges[i] = (i + 1) % size;
    }
    OK(MPI_Dist_graph_create(world, rank == 0 ? size : 0, srcs, degs, edges, MPI_UNWEIGHTED,
                             MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
    CHECK(in == 1 && out == 1 && !weighted, "from rank 0: %d %d %d", in, out, weighted);
    OK(MPI_Dist_graph_neighbors(dg, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED));
    CHECK(src == left && dst == right, "from rank 0: %d %d", src, dst);
    OK(MPI_Comm_free(&dg));
    free(srcs);
    free(degs);
    free(index);
    free(edges);
    free(gi);
    free(ge);
}

int main(int argc, char **argv) {
    int ppn = argc > 1 ? atoi(argv[1]) : 0;
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    world = MPI_COMM_WORLD;
    if (ppn > 0) {
        OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                               &world));
        OK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
    }
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);

    dims();
    periodic_grid();
    rows_and_columns();
    graphs();

    OK(MPI_Barrier(world));
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    printf("topo: rank %d ok\n", world_rank);
    MPI_Finalize();
    return 0;
}
