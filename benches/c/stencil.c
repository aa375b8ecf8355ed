/* Halo exchange of a 3-D 7-point stencil: each process owns a block of E^3
 * doubles (plus one halo layer on each side) of a periodic Cartesian grid
 * from MPI_Dims_create, and exchanges its six faces with its neighbours
 * (MPI_Cart_shift) through subarray datatypes, MPI_Irecv/MPI_Isend and
 * MPI_Waitall.  The first exchange is checked against the global
 * coordinates; then the program reports the median over iterations of the
 * slowest rank's exchange time.
 *
 * --managed receives into library-managed buffers instead: each face is
 * received with MPI_Irecv(NULL, E*E, MPI_DOUBLE, ...), taken after the wait
 * with MPIX_Get_recv_buf, copied into its halo and handed back with
 * MPIX_Release_recv_buf (the copy is part of the timed exchange: both
 * variants end with the data in the halo).  Only an MPI whose mpi.h defines
 * MPIX_HAS_RECV_BUF has them; others print an `unsupported` line.
 *
 * --mode intra|inter|total (default total) times only the faces whose
 * neighbour is on the same node (MPI_COMM_TYPE_SHARED), only those whose
 * neighbour is on another node, or all: across nodes, the total should
 * take max(intra, inter) when the two kinds of transfer overlap (the
 * MVAPICH overlap study this benchmark comes from). */
#include "bench.h"

static int E;                    /* block edge */
static int dims[3], coords[3];   /* process grid and this process's place */
static int lo[3], hi[3];         /* neighbours below and above along each dimension */
static MPI_Datatype layer[3][4]; /* along d, the layer at index 0, 1, E, E + 1 */
static MPI_Comm cart;
static int managed; /* --managed: faces arrive in library-managed buffers */
static int lo_local[3], hi_local[3]; /* whether that neighbour shares our node */
static int only = -1; /* --mode: -1 all faces, 1 same-node faces only, 0 other-node faces only */

/* Whether the face towards a neighbour is exchanged under --mode. */
static int wanted(int local)
{
    return only < 0 || only == local;
}

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

#ifdef MPIX_HAS_RECV_BUF
/* Copies the E x E doubles of face into the halo layer at index pos along
 * dimension d (the interior along the others, in the subarray's order). */
static void unpack_face(double *a, const double *face, int d, int pos)
{
    for (int u = 1; u <= E; u++)
        for (int v = 1; v <= E; v++) {
            int idx[3];
            idx[d] = pos;
            idx[d == 0 ? 1 : 0] = u;
            idx[d == 2 ? 1 : 2] = v;
            a[at(idx[0], idx[1], idx[2])] = *face++;
        }
}

/* Takes the face that receive r delivered, puts it into its halo and
 * returns the buffer (receive 2d is from below, into layer 0 along d;
 * 2d + 1 from above, into layer E + 1). */
static void take_face(double *a, int r, MPI_Status st)
{
    void *buf = NULL;
    int d = r / 2, pos = r % 2 ? E + 1 : 0;
    if (MPIX_Get_recv_buf(st, &buf) != MPI_SUCCESS || buf == NULL) {
        fprintf(stderr, "stencil: MPIX_Get_recv_buf gave no buffer for face %d\n", r);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unpack_face(a, buf, d, pos);
    if (MPIX_Release_recv_buf(st, buf) != MPI_SUCCESS) {
        fprintf(stderr, "stencil: MPIX_Release_recv_buf failed for face %d\n", r);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#endif

/* One halo exchange.  Tags name the direction of travel (2d: down, 2d + 1:
 * up), so that the two faces stay apart when both neighbours are the same
 * process. */
static void exchange(double *a)
{
    MPI_Request req[12];
    for (int r = 0; r < 12; r++)
        req[r] = MPI_REQUEST_NULL;
    for (int d = 0; d < 3; d++) {
#ifdef MPIX_HAS_RECV_BUF
        if (managed) {
            if (wanted(lo_local[d]))
                MPI_Irecv(NULL, E * E, MPI_DOUBLE, lo[d], 2 * d + 1, cart, &req[2 * d]);
            if (wanted(hi_local[d]))
                MPI_Irecv(NULL, E * E, MPI_DOUBLE, hi[d], 2 * d, cart, &req[2 * d + 1]);
            continue;
        }
#endif
        if (wanted(lo_local[d]))
            MPI_Irecv(a, 1, layer[d][0], lo[d], 2 * d + 1, cart, &req[2 * d]);
        if (wanted(hi_local[d]))
            MPI_Irecv(a, 1, layer[d][3], hi[d], 2 * d, cart, &req[2 * d + 1]);
    }
    for (int d = 0; d < 3; d++) {
        if (wanted(lo_local[d]))
            MPI_Isend(a, 1, layer[d][1], lo[d], 2 * d, cart, &req[6 + 2 * d]);
        if (wanted(hi_local[d]))
            MPI_Isend(a, 1, layer[d][2], hi[d], 2 * d + 1, cart, &req[6 + 2 * d + 1]);
    }
    MPI_Status st[12];
    int posted[6];
    for (int r = 0; r < 6; r++)
        posted[r] = req[r] != MPI_REQUEST_NULL;
    MPI_Waitall(12, req, st);
#ifdef MPIX_HAS_RECV_BUF
    if (managed)
        for (int r = 0; r < 6; r++)
            if (posted[r])
                take_face(a, r, st[r]);
#endif
    (void)posted;
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
    managed = o.managed;
    const char *recv = managed ? "managed" : "normal";
    const char *mode = o.mode ? o.mode : "total";
    if (strcmp(mode, "total") != 0 && strcmp(mode, "intra") != 0 && strcmp(mode, "inter") != 0)
        return bench_usage(argv[0], "--mode must be intra, inter or total");
#ifndef MPIX_HAS_RECV_BUF
    if (managed) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            result("stencil", "unsupported", 0.0, "none", "variant=%s recv=managed np=%d edge=%d",
                   mode, np, E);
        MPI_Finalize();
        return 0;
    }
#endif
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
    /* Which neighbours share this node. */
    MPI_Comm node;
    MPI_Comm_split_type(cart, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Group cart_group, node_group;
    MPI_Comm_group(cart, &cart_group);
    MPI_Comm_group(node, &node_group);
    for (int d = 0; d < 3; d++) {
        int in[2] = {lo[d], hi[d]}, out[2];
        MPI_Group_translate_ranks(cart_group, 2, in, node_group, out);
        lo_local[d] = out[0] != MPI_UNDEFINED;
        hi_local[d] = out[1] != MPI_UNDEFINED;
    }
    MPI_Group_free(&cart_group);
    MPI_Group_free(&node_group);
    MPI_Comm_free(&node);

    long wrong = check(a), all_wrong;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, cart);
    if (all_wrong) {
        if (rank == 0)
            fprintf(stderr, "stencil: %ld halo cells wrong after the exchange\n", all_wrong);
        MPI_Finalize();
        return 1;
    }

    only = strcmp(mode, "intra") == 0 ? 1 : strcmp(mode, "inter") == 0 ? 0 : -1;
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
        result("stencil", "exchange", m * 1e6, "us", "variant=%s recv=%s np=%d edge=%d", mode, recv,
               np, E);

    for (int d = 0; d < 3; d++)
        for (int p = 0; p < 4; p++)
            MPI_Type_free(&layer[d][p]);
    free(t);
    free(a);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
