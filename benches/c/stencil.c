/* Halo exchange of a 3-D 7-point stencil: each process owns a block of E^3
 * doubles (plus one halo layer on each side) of a periodic Cartesian grid
 * from MPI_Dims_create, and exchanges its six faces with its neighbours
 * (MPI_Cart_shift) through subarray datatypes, MPI_Irecv/MPI_Isend and
 * MPI_Waitall.  The first exchange is checked against the global
 * coordinates; then the program reports the median over iterations of the
 * slowest rank's exchange time. */
#include "bench.h"

static int E;                    /* block edge */
static int dims[3], coords[3];   /* process grid and this process's place */
static int lo[3], hi[3];         /* neighbours below and above along each dimension */
static MPI_Datatype layer[3][4]; /* along d, the layer at index 0, 1, E, E + 1 */
static MPI_Comm cart;

static size_t at(int i, int j, int k)
{
    return ((size_t)i * (size_t)(E + 2) + (size_t)j) * (size_t)(E + 2) + (size_t)k;
}

/* The E x E layer at index `pos` along dimension d (interior along the others). */
static MPI_Datatype layer_type(int d, int pos)
{
    int sizes[3] = {E + 2, E + 2, E + 2}, sub[3] = {E, E, E}, start[3] = {1, 1, 1};
    sub[d] = 1;
    start[d] = pos;
    MPI_Datatype t;
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    return t;
}

/* One halo exchange.  Tags name the direction of travel (2d: down, 2d + 1:
 * up), so that the two faces stay apart when both neighbours are the same
 * process. */
static void exchange(double *a)
{
    MPI_Request req[12];
    for (int d = 0; d < 3; d++) {
        MPI_Irecv(a, 1, layer[d][0], lo[d], 2 * d + 1, cart, &req[2 * d]);
        MPI_Irecv(a, 1, layer[d][3], hi[d], 2 * d, cart, &req[2 * d + 1]);
    }
    for (int d = 0; d < 3; d++) {
        MPI_Isend(a, 1, layer[d][1], lo[d], 2 * d, cart, &req[6 + 2 * d]);
        MPI_Isend(a, 1, layer[d][2], hi[d], 2 * d + 1, cart, &req[6 + 2 * d + 1]);
    }
    waitall(12, req);
}

/* The value of the cell at local index (i, j, k) (halos wrap around the
 * periodic global grid). */
static double value(int i, int j, int k)
{
    int idx[3] = {i, j, k};
    double v = 0.0;
    for (int d = 0; d < 3; d++) {
        long g = (long)dims[d] * E;
        v = v * (double)g + (double)(((long)coords[d] * E + idx[d] - 1 + g) % g);
    }
    return v;
}

/* Fills the interior, exchanges once and counts the wrong face-halo cells
 * (edges and corners of the halo are not exchanged and stay -1). */
static long check(double *a)
{
    for (int i = 0; i < E + 2; i++)
        for (int j = 0; j < E + 2; j++)
            for (int k = 0; k < E + 2; k++) {
                int halo = (i == 0 || i == E + 1) + (j == 0 || j == E + 1) + (k == 0 || k == E + 1);
                a[at(i, j, k)] = halo ? -1.0 : value(i, j, k);
            }
    exchange(a);
    long wrong = 0;
    for (int i = 0; i < E + 2; i++)
        for (int j = 0; j < E + 2; j++)
            for (int k = 0; k < E + 2; k++) {
                int halo = (i == 0 || i == E + 1) + (j == 0 || j == E + 1) + (k == 0 || k == E + 1);
                double want = halo <= 1 ? value(i, j, k) : -1.0;
                wrong += a[at(i, j, k)] != want;
            }
    return wrong;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    MPI_Init(&argc, &argv);
    int np, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    E = (int)(o.edge ? o.edge : o.quick ? 8 : 64);
    int iters = (int)(o.iters ? o.iters : o.quick ? 3 : 50), warmups = o.quick ? 1 : 3;
    int periods[3] = {1, 1, 1};
    MPI_Dims_create(np, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 3, coords);
    for (int d = 0; d < 3; d++) {
        MPI_Cart_shift(cart, d, 1, &lo[d], &hi[d]);
        int pos[4] = {0, 1, E, E + 1};
        for (int p = 0; p < 4; p++)
            layer[d][p] = layer_type(d, pos[p]);
    }
    double *a = xmalloc((size_t)(E + 2) * (size_t)(E + 2) * (size_t)(E + 2) * sizeof *a);

    long wrong = check(a), all_wrong;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, cart);
    if (all_wrong) {
        if (rank == 0)
            fprintf(stderr, "stencil: %ld halo cells wrong after the exchange\n", all_wrong);
        MPI_Finalize();
        return 1;
    }

    double start = MPI_Wtime();
    for (int w = 0; w < warmups; w++) {
        MPI_Barrier(cart);
        exchange(a);
    }
    if (!o.iters)
        iters = reps_within_budget(iters, (MPI_Wtime() - start) / warmups, cart);
    double *t = xmalloc((size_t)iters * sizeof *t);
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(cart);
        double t0 = MPI_Wtime();
        exchange(a);
        t[i] = MPI_Wtime() - t0;
    }
    double m = median_of_max(t, iters, cart);
    if (rank == 0)
        result("stencil", "exchange", m * 1e6, "us", "variant=total np=%d edge=%d", np, E);

    for (int d = 0; d < 3; d++)
        for (int p = 0; p < 4; p++)
            MPI_Type_free(&layer[d][p]);
    free(t);
    free(a);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
