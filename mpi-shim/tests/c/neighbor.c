/* Neighbourhood collectives (MPI-4.0 §8.6), blocking and nonblocking:
 * on a 2-D grid periodic in one dimension (a periodic dimension of two
 * processes has the same neighbour on both sides, so the direction a
 * block travels is checked), and on a distributed graph with a repeated
 * edge (repeated edges pair up in order) and self edges on few
 * processes. */
#include <string.h>
#include "check.h"

#define DEG 3

/* Rank `r + k` modulo `n`. */
static int wrap(int r, int k, int n) { return ((r + k) % n + n) % n; }

static void cartesian(void) {
    int size, dims[2] = {0, 0}, periods[2] = {1, 0}, me, nb[4];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &me);
    for (int d = 0; d < 2; d++) MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]);

    /* Allgather: every neighbour's rank; blocks of missing ones untouched. */
    int got[4] = {-1, -1, -1, -1};
    MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, cart);
    for (int k = 0; k < 4; k++) {
        int want = nb[k] == MPI_PROC_NULL ? -1 : nb[k];
        CHECK(got[k] == want, "allgather block %d: %d, want %d", k, got[k], want);
    }

    /* Alltoall: block k goes to neighbour k; what arrives from the
     * negative side was sent towards the positive side, and back. */
    int out[4], in[4];
    for (int k = 0; k < 4; k++) out[k] = me * 10 + k, in[k] = -1;
    MPI_Request rq;
    MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int d = 0; d < 2; d++) {
        int neg = nb[2 * d], pos = nb[2 * d + 1];
        int want_neg = neg == MPI_PROC_NULL ? -1 : neg * 10 + 2 * d + 1;
        int want_pos = pos == MPI_PROC_NULL ? -1 : pos * 10 + 2 * d;
        CHECK(in[2 * d] == want_neg && in[2 * d + 1] == want_pos,
              "dim %d: from below %d (want %d), from above %d (want %d)", d, in[2 * d],
              want_neg, in[2 * d + 1], want_pos);
    }
    MPI_Comm_free(&cart);
}

static void graph(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Two edges to the next rank, one to the one after. */
    int dst[DEG] = {wrap(rank, 1, size), wrap(rank, 1, size), wrap(rank, 2, size)};
    int src[DEG] = {wrap(rank, -1, size), wrap(rank, -1, size), wrap(rank, -2, size)};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, DEG, src, MPI_UNWEIGHTED, DEG, dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    int me;
    MPI_Comm_rank(g, &me);

    /* Alltoallv: destination j gets j + 1 copies of me * 100 + j. */
    int out[6], scounts[DEG], sdispls[DEG], in[6], rcounts[DEG], rdispls[DEG];
    for (int j = 0, at = 0; j < DEG; at += j + 1, j++) {
        scounts[j] = rcounts[j] = j + 1;
        sdispls[j] = rdispls[j] = at;
        for (int k = 0; k < j + 1; k++) out[at + k] = me * 100 + j;
    }
    memset(in, 0xff, sizeof in);
    MPI_Neighbor_alltoallv(out, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT, g);
    for (int i = 0; i < DEG; i++) {
        int from = wrap(me, i < 2 ? -1 : -2, size);
        for (int k = 0; k < rcounts[i]; k++)
            CHECK(in[rdispls[i] + k] == from * 100 + i, "alltoallv block %d[%d]: %d, want %d",
                  i, k, in[rdispls[i] + k], from * 100 + i);
    }

    /* Alltoallw with byte displacements, nonblocking. */
    MPI_Aint sd[DEG], rd[DEG];
    MPI_Datatype types[DEG] = {MPI_INT, MPI_INT, MPI_INT};
    for (int j = 0; j < DEG; j++) sd[j] = rd[j] = sdispls[j] * (MPI_Aint)sizeof(int);
    memset(in, 0xff, sizeof in);
    MPI_Request rq;
    MPI_Ineighbor_alltoallw(out, scounts, sd, types, in, rcounts, rd, types, g, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < DEG; i++) {
        int from = wrap(me, i < 2 ? -1 : -2, size);
        CHECK(in[rdispls[i]] == from * 100 + i, "alltoallw block %d: %d", i, in[rdispls[i]]);
    }

    /* Allgatherv: every source's rank, in source order, with gaps. */
    int got[2 * DEG], counts[DEG] = {1, 1, 1}, displs[DEG] = {0, 2, 4};
    for (int k = 0; k < 2 * DEG; k++) got[k] = -7;
    MPI_Neighbor_allgatherv(&me, 1, MPI_INT, got, counts, displs, MPI_INT, g);
    for (int i = 0; i < DEG; i++) {
        CHECK(got[displs[i]] == src[i], "allgatherv block %d: %d", i, got[displs[i]]);
        CHECK(got[displs[i] + 1] == -7, "allgatherv wrote past block %d", i);
    }
    MPI_Comm_free(&g);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    report_library();
    cartesian();
    graph();

    /* Without a topology: MPI_ERR_TOPOLOGY; MPI_IN_PLACE: MPI_ERR_BUFFER. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 0, y = 0, cls;
    MPI_Error_class(MPI_Neighbor_allgather(&x, 1, MPI_INT, &y, 1, MPI_INT, MPI_COMM_WORLD), &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "no topology: class %d", cls);
    int dims[1] = {0}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Comm_size(MPI_COMM_WORLD, &dims[0]);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    int two[2];
    MPI_Error_class(MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, two, 1, MPI_INT, ring), &cls);
    CHECK(cls == MPI_ERR_BUFFER, "in place: class %d", cls);
    MPI_Comm_free(&ring);

    MPI_Finalize();
    printf("neighbor: rank %d ok\n", rank);
    return 0;
}
