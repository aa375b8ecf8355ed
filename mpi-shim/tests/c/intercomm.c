/* Intercommunicators: the even and the odd ranks of MPI_COMM_WORLD as two
 * groups, made by MPI_Intercomm_create and by
 * MPI_Intercomm_create_from_groups; sizes and the remote group;
 * point-to-point with wildcard receives; every collective with its
 * intercommunicator meaning (MPI_ROOT and MPI_PROC_NULL roots, data from
 * the other group), blocking, nonblocking and persistent; dup, split,
 * create and merge; the scans refused; disconnect. The two groups differ
 * in size when the job size is odd. On one process there is no second
 * group: the program only checks that. */
#include <string.h>
#include "check.h"

static int wrank, wsize;
static int color;          /* 0: even world ranks, 1: odd */
static int lrank, lsize;   /* in the local group */
static int rsize;          /* of the remote group */
static MPI_Comm local_comm; /* the local group */

/* The world rank of rank k of group c. */
static int world_of(int c, int k) { return 2 * k + c; }

/* The sum of the world ranks of group c. */
static int group_sum(int c, int n) {
    int s = 0;
    for (int k = 0; k < n; k++) s += world_of(c, k);
    return s;
}

static void check_sizes(MPI_Comm inter) {
    int flag = 0, n = -1;
    OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "not an intercommunicator");
    OK(MPI_Comm_size(inter, &n));
    CHECK(n == lsize, "local size %d, expected %d", n, lsize);
    OK(MPI_Comm_rank(inter, &n));
    CHECK(n == lrank, "rank %d, expected %d", n, lrank);
    OK(MPI_Comm_remote_size(inter, &n));
    CHECK(n == rsize, "remote size %d, expected %d", n, rsize);
}

static void check_remote_group(MPI_Comm inter) {
    MPI_Group wgroup, remote, expected;
    int ranks[64], cmp = -1;
    for (int k = 0; k < rsize; k++) ranks[k] = world_of(1 - color, k);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wgroup));
    OK(MPI_Group_incl(wgroup, rsize, ranks, &expected));
    OK(MPI_Comm_remote_group(inter, &remote));
    OK(MPI_Group_compare(remote, expected, &cmp));
    CHECK(cmp == MPI_IDENT, "remote group compares %d", cmp);
    OK(MPI_Group_free(&remote));
    OK(MPI_Group_free(&expected));
    OK(MPI_Group_free(&wgroup));
}

/* Each process sends its world rank to every remote process and receives
 * one message from each with MPI_ANY_SOURCE: the status names the remote
 * rank. */
static void check_p2p(MPI_Comm inter) {
    MPI_Request reqs[64];
    for (int k = 0; k < rsize; k++)
        OK(MPI_Isend(&wrank, 1, MPI_INT, k, lrank, inter, &reqs[k]));
    int seen[64] = {0};
    for (int k = 0; k < rsize; k++) {
        int v = -1;
        MPI_Status st;
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "source %d", st.MPI_SOURCE);
        CHECK(v == world_of(1 - color, st.MPI_SOURCE), "value %d from %d", v, st.MPI_SOURCE);
        CHECK(st.MPI_TAG == st.MPI_SOURCE, "tag %d from %d", st.MPI_TAG, st.MPI_SOURCE);
        CHECK(!seen[st.MPI_SOURCE]++, "two messages from %d", st.MPI_SOURCE);
    }
    MPI_Status sts[64];
    OK(MPI_Waitall(rsize, reqs, sts));
    /* A send to a rank of the remote group's size is out of range. */
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    EXPECT(MPI_Send(&wrank, 1, MPI_INT, rsize, 0, inter), MPI_ERR_RANK);
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Send(&wrank, 1, MPI_INT, MPI_PROC_NULL, 0, inter));
}

/* The root argument for a rooted collective whose root is rank `root` of
 * group `rc`. */
static int root_arg(int rc, int root) {
    if (color != rc) return root;
    return lrank == root ? MPI_ROOT : MPI_PROC_NULL;
}

/* Rooted collectives with the root in group rc at its rank `root`. */
static void check_rooted(MPI_Comm inter, int rc, int root) {
    int arg = root_arg(rc, root), at_root = color == rc && lrank == root;
    int in_root_group = color == rc;
    int v = at_root ? 4242 + rc : -1;
    OK(MPI_Bcast(&v, 1, MPI_INT, arg, inter));
    if (!in_root_group) CHECK(v == 4242 + rc, "bcast gave %d", v);
    if (in_root_group && !at_root) CHECK(v == -1, "bcast touched a bystander: %d", v);

    int sum = -1;
    OK(MPI_Reduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, arg, inter));
    if (at_root) CHECK(sum == group_sum(1 - rc, rsize), "reduce gave %d", sum);

    int all[64];
    for (int k = 0; k < 64; k++) all[k] = -1;
    OK(MPI_Gather(&wrank, 1, MPI_INT, all, 1, MPI_INT, arg, inter));
    if (at_root)
        for (int k = 0; k < rsize; k++)
            CHECK(all[k] == world_of(1 - rc, k), "gather block %d: %d", k, all[k]);

    /* Gatherv: remote rank k sends k + 1 copies of its world rank. */
    int mine[64], counts[64], displs[64], got[64 * 65];
    for (int i = 0; i <= lrank; i++) mine[i] = wrank;
    for (int k = 0, d = 0; k < rsize; k++) {
        counts[k] = k + 1;
        displs[k] = d;
        d += k + 1;
    }
    OK(MPI_Gatherv(mine, lrank + 1, MPI_INT, got, counts, displs, MPI_INT, arg, inter));
    if (at_root)
        for (int k = 0; k < rsize; k++)
            for (int i = 0; i <= k; i++)
                CHECK(got[displs[k] + i] == world_of(1 - rc, k), "gatherv %d.%d", k, i);

    /* Scatter: remote rank k gets 10 k + rc. */
    int out[64], in = -1;
    for (int k = 0; k < rsize; k++) out[k] = 10 * k + rc;
    OK(MPI_Scatter(out, 1, MPI_INT, &in, 1, MPI_INT, arg, inter));
    if (!in_root_group) CHECK(in == 10 * lrank + rc, "scatter gave %d", in);
}

static void check_all(MPI_Comm inter) {
    int sum = -1;
    OK(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(sum == group_sum(1 - color, rsize), "allreduce gave %d", sum);

    int all[64];
    OK(MPI_Allgather(&wrank, 1, MPI_INT, all, 1, MPI_INT, inter));
    for (int k = 0; k < rsize; k++)
        CHECK(all[k] == world_of(1 - color, k), "allgather block %d: %d", k, all[k]);

    /* Alltoall: to remote rank k, 100 * my world rank + k. */
    int out[64], in[64];
    for (int k = 0; k < rsize; k++) out[k] = 100 * wrank + k;
    OK(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter));
    for (int k = 0; k < rsize; k++)
        CHECK(in[k] == 100 * world_of(1 - color, k) + lrank, "alltoall block %d: %d", k, in[k]);

    /* Alltoallw: the arrays of types have one entry per remote rank. */
    int ones[64], displs[64];
    MPI_Datatype types[64];
    for (int k = 0; k < rsize; k++) {
        ones[k] = 1;
        displs[k] = k * (int)sizeof(int);
        types[k] = MPI_INT;
        in[k] = -1;
    }
    OK(MPI_Alltoallw(out, ones, displs, types, in, ones, displs, types, inter));
    for (int k = 0; k < rsize; k++)
        CHECK(in[k] == 100 * world_of(1 - color, k) + lrank, "alltoallw block %d: %d", k, in[k]);

    /* Reduce_scatter: vectors of 12 elements in both groups, spread over
     * the local ranks; element i of each is world rank + i. */
    enum { T = 12 };
    int vec[T], counts[64], res[T], off = 0;
    for (int i = 0; i < T; i++) vec[i] = wrank + i;
    for (int r = 0; r < lsize; r++) counts[r] = T / lsize + (r < T % lsize);
    for (int r = 0; r < lrank; r++) off += counts[r];
    OK(MPI_Reduce_scatter(vec, res, counts, MPI_INT, MPI_SUM, inter));
    for (int i = 0; i < counts[lrank]; i++)
        CHECK(res[i] == group_sum(1 - color, rsize) + rsize * (off + i), "reduce_scatter %d: %d",
              i, res[i]);
    if (lsize == rsize) {
        int block[64], one = -1;
        for (int r = 0; r < lsize; r++) block[r] = wrank * r;
        OK(MPI_Reduce_scatter_block(block, &one, 1, MPI_INT, MPI_SUM, inter));
        CHECK(one == group_sum(1 - color, rsize) * lrank, "reduce_scatter_block: %d", one);
    }
    OK(MPI_Barrier(inter));
}

/* Nonblocking collectives, two at once, and a persistent one started
 * twice. */
static void check_nonblocking(MPI_Comm inter) {
    int v = color == 0 && lrank == 0 ? 77 : -1, sum = -1;
    MPI_Request reqs[2];
    MPI_Status sts[2];
    OK(MPI_Ibcast(&v, 1, MPI_INT, root_arg(0, 0), inter, &reqs[0]));
    OK(MPI_Iallreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, inter, &reqs[1]));
    OK(MPI_Waitall(2, reqs, sts));
    if (color == 1) CHECK(v == 77, "ibcast gave %d", v);
    CHECK(sum == group_sum(1 - color, rsize), "iallreduce gave %d", sum);

    int in = wrank, out = -1;
    MPI_Request p;
    OK(MPI_Allreduce_init(&in, &out, 1, MPI_INT, MPI_MAX, inter, MPI_INFO_NULL, &p));
    for (int round = 0; round < 2; round++) {
        in = wrank + round;
        OK(MPI_Start(&p));
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
        CHECK(out == world_of(1 - color, rsize - 1) + round, "persistent allreduce gave %d", out);
    }
    OK(MPI_Request_free(&p));

    int all[64];
    OK(MPI_Ibarrier(inter, &reqs[0]));
    OK(MPI_Iallgather(&wrank, 1, MPI_INT, all, 1, MPI_INT, inter, &reqs[1]));
    OK(MPI_Waitall(2, reqs, sts));
    for (int k = 0; k < rsize; k++)
        CHECK(all[k] == world_of(1 - color, k), "iallgather block %d: %d", k, all[k]);
}

/* The communicator calls on intercommunicators. */
static void check_constructors(MPI_Comm inter) {
    MPI_Comm dup, split, sub, merged;
    int cmp = -1, n = -1, flag = 0;
    OK(MPI_Comm_dup(inter, &dup));
    check_sizes(dup);
    OK(MPI_Comm_compare(inter, dup, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "compare of a dup: %d", cmp);
    check_all(dup);

    /* Split by local rank parity: the remote side of a colour holds the
     * remote ranks of that parity, if any. */
    int c = lrank % 2;
    OK(MPI_Comm_split(inter, c, -lrank, &split));
    int remote_n = (rsize - c + 1) / 2;
    if (remote_n == 0) {
        CHECK(split == MPI_COMM_NULL, "split with no remote partner");
    } else {
        OK(MPI_Comm_test_inter(split, &flag));
        CHECK(flag, "a split intercommunicator is one");
        OK(MPI_Comm_remote_size(split, &n));
        CHECK(n == remote_n, "split remote size %d, expected %d", n, remote_n);
        OK(MPI_Comm_size(split, &n));
        CHECK(n == (lsize - c + 1) / 2, "split size %d", n);
        OK(MPI_Comm_rank(split, &n));
        CHECK(n == (lsize - c + 1) / 2 - 1 - lrank / 2, "split rank %d (keys reverse)", n);
        int sum = -1;
        OK(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, split));
        int expect = 0;
        for (int k = c; k < rsize; k += 2) expect += world_of(1 - color, k);
        CHECK(sum == expect, "allreduce over a split gave %d, expected %d", sum, expect);
        OK(MPI_Comm_free(&split));
    }
    OK(MPI_Comm_split(inter, MPI_UNDEFINED, 0, &split));
    CHECK(split == MPI_COMM_NULL, "split with MPI_UNDEFINED");

    /* Split by node: each group's processes of this node, against the
     * other group's processes of this node (if any). */
    MPI_Comm shared, node;
    int node_size = -1;
    OK(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    OK(MPI_Comm_split_type(local_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_size(node, &node_size));
    if (shared != MPI_COMM_NULL) {
        OK(MPI_Comm_size(shared, &n));
        CHECK(n == node_size, "shared split local size %d, node %d", n, node_size);
        OK(MPI_Comm_remote_size(shared, &n));
        CHECK(n >= 1 && n <= rsize, "shared split remote size %d", n);
        OK(MPI_Barrier(shared));
        OK(MPI_Comm_free(&shared));
    }
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_split_type(inter, MPI_UNDEFINED, 0, MPI_INFO_NULL, &shared));
    CHECK(shared == MPI_COMM_NULL, "split type MPI_UNDEFINED");

    /* Create: each group keeps its rank 0 only. */
    MPI_Group local, first;
    int zero = 0;
    OK(MPI_Comm_group(inter, &local));
    OK(MPI_Group_incl(local, 1, &zero, &first));
    OK(MPI_Comm_create(inter, first, &sub));
    if (lrank == 0) {
        OK(MPI_Comm_remote_size(sub, &n));
        CHECK(n == 1, "created remote size %d", n);
        int other = -1;
        OK(MPI_Sendrecv(&wrank, 1, MPI_INT, 0, 5, &other, 1, MPI_INT, 0, 5, sub, MPI_STATUS_IGNORE));
        CHECK(other == 1 - color, "rank 0 of the other group is world rank %d", other);
        OK(MPI_Comm_free(&sub));
    } else {
        CHECK(sub == MPI_COMM_NULL, "a process left out got a communicator");
    }
    OK(MPI_Group_free(&first));
    OK(MPI_Group_free(&local));

    /* Merge: the odd group says high, so the even group comes first. */
    OK(MPI_Intercomm_merge(inter, color, &merged));
    OK(MPI_Comm_test_inter(merged, &flag));
    CHECK(!flag, "a merged communicator is an intracommunicator");
    OK(MPI_Comm_size(merged, &n));
    CHECK(n == wsize, "merged size %d", n);
    OK(MPI_Comm_rank(merged, &n));
    CHECK(n == (color == 0 ? lrank : rsize + lrank), "merged rank %d", n);
    OK(MPI_Comm_free(&merged));
    /* The same high value on both sides: some order, each rank once. */
    OK(MPI_Intercomm_merge(inter, 1, &merged));
    int r = -1, sum = -1;
    OK(MPI_Comm_rank(merged, &r));
    OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == wsize * (wsize - 1) / 2, "merged ranks sum to %d", sum);
    OK(MPI_Comm_free(&merged));

    /* A nonblocking duplicate of a duplicate (which has no reserved ids:
     * its members agree on one), with a collective on another
     * intercommunicator while they do. */
    MPI_Comm idup;
    MPI_Request req;
    OK(MPI_Comm_idup(dup, &idup, &req));
    OK(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, inter));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_sizes(idup);
    check_all(idup);
    OK(MPI_Comm_free(&idup));

    /* The scans need an intracommunicator. */
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    EXPECT(MPI_Scan(&wrank, &r, 1, MPI_INT, MPI_SUM, dup), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(&r, 1, MPI_INT, rsize, dup), MPI_ERR_ROOT);
    OK(MPI_Comm_disconnect(&dup));
    CHECK(dup == MPI_COMM_NULL, "disconnect nulls the handle");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(wsize <= 64, "at most 64 processes");
    MPI_Comm local, inter;
    int flag = 1;
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK(!flag, "MPI_COMM_WORLD is an intracommunicator");
    if (wsize == 1) {
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int n;
        EXPECT(MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);
        EXPECT(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &inter), MPI_ERR_COMM);
        printf("intercomm: rank 0 ok\n");
        MPI_Finalize();
        return 0;
    }
    color = wrank % 2;
    OK(MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local));
    local_comm = local;
    OK(MPI_Comm_rank(local, &lrank));
    OK(MPI_Comm_size(local, &lsize));
    rsize = color == 0 ? wsize / 2 : (wsize + 1) / 2;
    /* The leaders are world ranks 0 and 1. */
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 42, &inter));
    check_sizes(inter);
    check_remote_group(inter);
    check_p2p(inter);
    for (int rc = 0; rc < 2; rc++) {
        int n = rc == color ? lsize : rsize;
        check_rooted(inter, rc, 0);
        check_rooted(inter, rc, n - 1);
    }
    check_all(inter);
    check_nonblocking(inter);
    check_constructors(inter);
    OK(MPI_Comm_free(&inter));

    /* The same two groups, from groups alone. */
    MPI_Group wgroup, even, odd;
    int ranks[64];
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wgroup));
    for (int k = 0; k < (wsize + 1) / 2; k++) ranks[k] = world_of(0, k);
    OK(MPI_Group_incl(wgroup, (wsize + 1) / 2, ranks, &even));
    for (int k = 0; k < wsize / 2; k++) ranks[k] = world_of(1, k);
    OK(MPI_Group_incl(wgroup, wsize / 2, ranks, &odd));
    OK(MPI_Intercomm_create_from_groups(color ? odd : even, 0, color ? even : odd, 0,
                                        "tessel-test-intercomm", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &inter));
    check_sizes(inter);
    check_p2p(inter);
    check_all(inter);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Group_free(&even));
    OK(MPI_Group_free(&odd));
    OK(MPI_Group_free(&wgroup));
    OK(MPI_Comm_free(&local));

    (void)flag;
    printf("intercomm: rank %d ok\n", wrank);
    MPI_Finalize();
    return 0;
}
