/* Collectives within a node, where they run on shared-memory flag boards:
 * several nonblocking collectives outstanding at once and completed out of
 * order, with point-to-point traffic in between; blocking calls while a
 * nonblocking one runs; a root that runs ahead through many broadcasts
 * while a member is late; order-keeping (non-commutative) reductions,
 * small and large, and scans; many communicators at once, and
 * communicators made and freed again and again (their boards' areas are
 * reused), also right after a gather whose root still reads; and the same
 * collectives run blocking at some processes and nonblocking at others,
 * in one piece and in several, contiguous and strided, and large blocks
 * that the members copy straight out of each other's buffers, described
 * contiguous at some ranks and strided at others. The same program passes with
 * TESSEL_COLL=p2p. */
#include <string.h>
#include <unistd.h>
#include "check.h"

/* in op inout = in: associative, not commutative. Any reduction in rank
 * order gives the lowest rank's vector. */
static void left(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* in op inout = inout: the highest rank's vector. */
static void right(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in, (void)inout, (void)len, (void)dt;
}

/* `left` on elements of `big_ints` ints. */
static int big_ints;
static void left_big(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    memcpy(inout, in, (size_t)*len * big_ints * sizeof(int));
}

/* A large reduction of fewer elements than members (one element of many
 * ints, one type): the members whose share is no whole element reduce
 * nothing, and every member still gets the result. An element of 8192
 * ints (32 KiB) fits a member's data buffer, so the board splits the
 * work by whole elements; one of 70000 (280 KiB) does not, and goes by
 * messages. */
static void whole_elements(MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int sizes[] = {8192, 70000};
    for (int z = 0; z < 2; z++) {
        big_ints = sizes[z];
        MPI_Datatype big;
        MPI_Type_contiguous(big_ints, MPI_INT, &big);
        MPI_Type_commit(&big);
        MPI_Op lb;
        MPI_Op_create(left_big, 0, &lb);
        int *a = malloc(big_ints * sizeof *a), *b = malloc(big_ints * sizeof *b);
        for (int i = 0; i < big_ints; i++) a[i] = rank * 1000003 + i;
        for (int k = 0; k < 2; k++) {
            memset(b, 0, big_ints * sizeof *b);
            MPI_Request q;
            if (k == 0) {
                MPI_Allreduce(a, b, 1, big, lb, comm);
            } else {
                MPI_Iallreduce(a, b, 1, big, lb, comm, &q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            }
            for (int i = 0; i < big_ints; i++)
                CHECK(b[i] == i, "one-element allreduce of %d ints (%s) [%d]=%d", big_ints,
                      k ? "nonblocking" : "blocking", i, b[i]);
        }
        free(a);
        free(b);
        MPI_Op_free(&lb);
        MPI_Type_free(&big);
    }
}

static void reductions(MPI_Comm comm, MPI_Op l, MPI_Op r) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Small (whole vectors) and large (reduce-scatter) paths. */
    const int counts[] = {1, 12, 5000, 300000};
    for (int k = 0; k < 4; k++) {
        int n = counts[k];
        int *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
        for (int i = 0; i < n; i++) a[i] = rank * 1000003 + i;
        MPI_Allreduce(a, b, n, MPI_INT, l, comm);
        for (int i = 0; i < n; i++) CHECK(b[i] == i, "left allreduce n=%d [%d]=%d", n, i, b[i]);
        MPI_Allreduce(a, b, n, MPI_INT, r, comm);
        for (int i = 0; i < n; i++)
            CHECK(b[i] == (size - 1) * 1000003 + i, "right allreduce n=%d [%d]", n, i);
        /* The same as schedules, at every rank. */
        MPI_Request q;
        MPI_Iallreduce(a, b, n, MPI_INT, l, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) CHECK(b[i] == i, "left iallreduce n=%d [%d]=%d", n, i, b[i]);
        MPI_Iallreduce(a, b, n, MPI_INT, r, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            CHECK(b[i] == (size - 1) * 1000003 + i, "right iallreduce n=%d [%d]", n, i);
        int root = size - 1;
        memset(b, 0, (size_t)n * sizeof *b);
        MPI_Reduce(a, b, n, MPI_INT, l, root, comm);
        if (rank == root)
            for (int i = 0; i < n; i++) CHECK(b[i] == i, "left reduce n=%d [%d]", n, i);
        /* In place at the root. */
        memcpy(b, a, (size_t)n * sizeof *b);
        MPI_Reduce(rank == root ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, root, comm);
        if (rank == root)
            for (int i = 0; i < n; i++) {
                long want = (long)1000003 * size * (size - 1) / 2 + (long)i * size;
                CHECK(b[i] == (int)want, "in-place reduce n=%d [%d]", n, i);
            }
        MPI_Scan(a, b, n, MPI_INT, l, comm);
        for (int i = 0; i < n; i++) CHECK(b[i] == i, "left scan n=%d", n);
        MPI_Scan(a, b, n, MPI_INT, r, comm);
        for (int i = 0; i < n; i++) CHECK(b[i] == a[i], "right scan n=%d", n);
        MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < n; i++) {
            long want = (long)1000003 * size * (size - 1) / 2 + (long)i * size;
            CHECK(a[i] == (int)want, "in-place sum n=%d [%d]", n, i);
        }
        free(a);
        free(b);
    }
}

/* Even ranks run each collective nonblocking (a schedule), odd ranks
 * blocking (straight on the board, without a schedule): the two must take
 * the same steps, in one piece and in several. */
static void mixed(MPI_Op l) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int nb = rank % 2 == 0;
    MPI_Request q = MPI_REQUEST_NULL;
#define EITHER(blocking, nonblocking)                                                              \
    do {                                                                                           \
        if (nb) {                                                                                  \
            nonblocking;                                                                           \
            MPI_Wait(&q, MPI_STATUS_IGNORE);                                                       \
        } else {                                                                                   \
            blocking;                                                                              \
        }                                                                                          \
    } while (0)
    const int counts[] = {5, 20000, 70000};
    for (int k = 0; k < 3; k++) {
        int n = counts[k], root = k % size;
        int *a = malloc((size_t)n * size * sizeof *a), *b = malloc((size_t)n * size * sizeof *b);
        for (int i = 0; i < n; i++) a[i] = rank == root ? 3 * i + 1 : -1;
        EITHER(MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD),
               MPI_Ibcast(a, n, MPI_INT, root, MPI_COMM_WORLD, &q));
        for (int i = 0; i < n; i++) CHECK(a[i] == 3 * i + 1, "mixed bcast n=%d [%d]=%d", n, i, a[i]);
        for (int i = 0; i < n; i++) a[i] = rank * 1000003 + i;
        EITHER(MPI_Allreduce(a, b, n, MPI_INT, l, MPI_COMM_WORLD),
               MPI_Iallreduce(a, b, n, MPI_INT, l, MPI_COMM_WORLD, &q));
        for (int i = 0; i < n; i++) CHECK(b[i] == i, "mixed allreduce n=%d [%d]=%d", n, i, b[i]);
        memset(b, 0, (size_t)n * sizeof *b);
        EITHER(MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD),
               MPI_Ireduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &q));
        if (rank == root)
            for (int i = 0; i < n; i++) {
                long want = (long)1000003 * size * (size - 1) / 2 + (long)i * size;
                CHECK(b[i] == (int)want, "mixed reduce n=%d [%d]", n, i);
            }
        EITHER(MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD),
               MPI_Iallgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD, &q));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(b[p * n + i] == p * 1000003 + i, "mixed allgather n=%d from %d", n, p);
        for (int i = 0; i < n; i++) b[rank * n + i] = -rank - i;
        EITHER(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, MPI_INT, MPI_COMM_WORLD),
               MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, MPI_INT, MPI_COMM_WORLD, &q));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(b[p * n + i] == -p - i, "mixed in-place allgather n=%d from %d", n, p);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++) a[p * n + i] = rank * 7 + p * 3 + i;
        EITHER(MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD),
               MPI_Ialltoall(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD, &q));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(b[p * n + i] == p * 7 + rank * 3 + i, "mixed alltoall n=%d from %d", n, p);
        free(a);
        free(b);
    }
    /* A strided buffer (every other int) in one piece (a blocking member
     * unpacks it straight off the board) and in several (gathered packed,
     * unpacked once): 12,000 bytes are two 8 KiB pieces where members are
     * no more than the CPUs, one piece otherwise; 160,000 are several
     * everywhere. */
    const int strided[] = {1000, 3000, 40000};
    for (int k = 0; k < 3; k++) {
        int n = strided[k], root = (k + 1) % size;
        MPI_Datatype every_other;
        MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        int *a = malloc(2 * (size_t)n * sizeof *a);
        for (int i = 0; i < 2 * n; i++) a[i] = rank == root ? i : -1;
        EITHER(MPI_Bcast(a, 1, every_other, root, MPI_COMM_WORLD),
               MPI_Ibcast(a, 1, every_other, root, MPI_COMM_WORLD, &q));
        for (int i = 0; i < 2 * n; i++) {
            int want = i % 2 == 0 || rank == root ? i : -1;
            CHECK(a[i] == want, "mixed strided bcast n=%d [%d]=%d", n, i, a[i]);
        }
        free(a);
        MPI_Type_free(&every_other);
    }
#undef EITHER
}

/* Blocks large enough that the members copy them straight out of each
 * other's buffers (from 32 KiB; 64 KiB for bcast, 64 to 128 KiB for
 * gather, and where members outnumber cores, more than one data buffer's
 * worth; 36, 80 and 160 KB here): odd ranks describe
 * their blocks with a strided type, so their blocking calls compile
 * schedules, and even ranks with plain ints, so theirs run straight on
 * the board; both must take the same steps. Also an allgatherv whose
 * blocks differ in length, one of them empty. */
static void layouts(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {9000, 20000, 40000};
    for (int k = 0; k < 3; k++) {
        int n = counts[k], odd = rank % 2;
        /* n ints, every other one of 2n: consecutive blocks 2n ints apart. */
        MPI_Datatype vec, strided;
        MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, 2 * (MPI_Aint)n * sizeof(int), &strided);
        MPI_Type_commit(&strided);
        MPI_Type_free(&vec);
        size_t span = odd ? 2 * (size_t)n : (size_t)n; /* ints a block spans */
        MPI_Datatype t = odd ? strided : MPI_INT;
        int c = odd ? 1 : n;
        int *s = malloc(span * size * sizeof *s), *d = malloc(span * size * sizeof *d);
#define AT(buf, p, i) (buf)[(size_t)(p) * span + (odd ? 2 * (size_t)(i) : (size_t)(i))]
        for (size_t i = 0; i < span * size; i++) s[i] = d[i] = -1;
        for (int i = 0; i < n; i++) AT(s, 0, i) = rank * 1000003 + i;
        MPI_Allgather(s, c, t, d, c, t, MPI_COMM_WORLD);
        /* The send buffer is the application's again at once: a member
         * still copying from it would get these. */
        for (size_t i = 0; i < span * size; i++) s[i] = -2;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(AT(d, p, i) == p * 1000003 + i, "strided allgather n=%d from %d [%d]=%d", n,
                      p, i, AT(d, p, i));
        if (odd)
            for (size_t i = 1; i < span * size; i += 2) CHECK(d[i] == -1, "allgather gap %zu", i);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++) AT(s, p, i) = rank * 7 + p * 3 + i;
        MPI_Alltoall(s, c, t, d, c, t, MPI_COMM_WORLD);
        for (size_t i = 0; i < span * size; i++) s[i] = -2;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(AT(d, p, i) == p * 7 + rank * 3 + i, "strided alltoall n=%d from %d [%d]=%d",
                      n, p, i, AT(d, p, i));
        int root = k % size;
        for (int i = 0; i < n; i++) AT(d, 0, i) = rank == root ? 5 * i : -1;
        MPI_Bcast(d, c, t, root, MPI_COMM_WORLD);
        int *kept = malloc((size_t)n * sizeof *kept);
        for (int i = 0; i < n; i++) kept[i] = AT(d, 0, i);
        if (rank == root)
            for (int i = 0; i < n; i++) AT(d, 0, i) = -2;
        for (int i = 0; i < n; i++) CHECK(kept[i] == 5 * i, "strided bcast n=%d [%d]", n, i);
        free(kept);
        /* Gather and scatter: odd ranks start theirs nonblocking, so the
         * blocking members run straight on the board and the others run
         * the schedule; the root takes MPI_IN_PLACE after the first time. */
        root = (k + 1) % size;
        int in_place = k >= 1 && rank == root;
        for (size_t i = 0; i < span * size; i++) s[i] = d[i] = -1;
        for (int i = 0; i < n; i++) AT(in_place ? d : s, in_place ? rank : 0, i) = rank * 1000003 + i;
        const void *gs = in_place ? MPI_IN_PLACE : s;
        MPI_Request q = MPI_REQUEST_NULL;
        if (odd)
            MPI_Igather(gs, c, t, d, c, t, root, MPI_COMM_WORLD, &q);
        else
            MPI_Gather(gs, c, t, d, c, t, root, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) AT(s, 0, i) = -2;
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < n; i++)
                    CHECK(AT(d, p, i) == p * 1000003 + i, "gather n=%d from %d [%d]=%d", n, p, i,
                          AT(d, p, i));
        for (size_t i = 0; i < span * size; i++) s[i] = d[i] = -1;
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < n; i++) AT(s, p, i) = p * 1000003 + 7 * i;
        void *sd = in_place ? MPI_IN_PLACE : d;
        if (odd)
            MPI_Iscatter(s, c, t, sd, c, t, root, MPI_COMM_WORLD, &q);
        else
            MPI_Scatter(s, c, t, sd, c, t, root, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (in_place)
            for (int i = 0; i < n; i++)
                CHECK(AT(s, rank, i) == rank * 1000003 + 7 * i, "in-place scatter n=%d [%d]=%d", n,
                      i, AT(s, rank, i));
        if (rank == root)
            for (size_t i = 0; i < span * size; i++) s[i] = -2;
        if (!in_place)
            for (int i = 0; i < n; i++)
                CHECK(AT(d, 0, i) == rank * 1000003 + 7 * i, "scatter n=%d [%d]=%d", n, i,
                      AT(d, 0, i));
#undef AT
        /* Rank p sends p * n / 2 ints: rank 0 none. */
        int *rc = malloc(size * sizeof *rc), *dis = malloc(size * sizeof *dis), at = 0;
        for (int p = 0; p < size; p++) rc[p] = p * n / 2, dis[p] = at, at += rc[p];
        int *v = malloc(((size_t)at + 1) * sizeof *v);
        /* Odd ranks nonblocking, in place after the first time. */
        int *own = k >= 1 ? v + dis[rank] : s;
        for (int i = 0; i < rc[rank]; i++) own[i] = rank * 1000003 + i;
        const void *as = k >= 1 ? MPI_IN_PLACE : s;
        if (odd)
            MPI_Iallgatherv(as, rc[rank], MPI_INT, v, rc, dis, MPI_INT, MPI_COMM_WORLD, &q);
        else
            MPI_Allgatherv(as, rc[rank], MPI_INT, v, rc, dis, MPI_INT, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < rc[rank]; i++) s[i] = -2;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < rc[p]; i++)
                CHECK(v[dis[p] + i] == p * 1000003 + i, "allgatherv n=%d from %d [%d]", n, p, i);
        free(v);
        /* Gatherv: rank p sends (p + 1) * n ints (from 160 KB, more than a
         * data buffer holds, exposed); odd ranks nonblocking, the root in
         * place after the first time. */
        root = k % size;
        at = 0;
        for (int p = 0; p < size; p++) rc[p] = (p + 1) * n, dis[p] = at, at += rc[p];
        v = malloc(((size_t)at + 1) * sizeof *v);
        in_place = k >= 1 && rank == root;
        own = in_place ? v + dis[rank] : s;
        for (int i = 0; i < rc[rank]; i++) own[i] = rank * 1000003 + 3 * i;
        as = in_place ? MPI_IN_PLACE : s;
        if (odd)
            MPI_Igatherv(as, rc[rank], MPI_INT, v, rc, dis, MPI_INT, root, MPI_COMM_WORLD, &q);
        else
            MPI_Gatherv(as, rc[rank], MPI_INT, v, rc, dis, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < rc[rank]; i++) s[i] = -2;
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < rc[p]; i++)
                    CHECK(v[dis[p] + i] == p * 1000003 + 3 * i, "gatherv n=%d from %d [%d]", n, p,
                          i);
        /* Scatterv of those blocks back (placed in the root's data buffer
         * or exposed, by length and process count). */
        for (int i = 0; i < at; i++) v[i] = -3;
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < rc[p]; i++) v[dis[p] + i] = p * 1000003 + 5 * i;
        for (int i = 0; i < rc[rank]; i++) s[i] = -1;
        void *sv = in_place ? MPI_IN_PLACE : s;
        if (odd)
            MPI_Iscatterv(v, rc, dis, MPI_INT, sv, rc[rank], MPI_INT, root, MPI_COMM_WORLD, &q);
        else
            MPI_Scatterv(v, rc, dis, MPI_INT, sv, rc[rank], MPI_INT, root, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (in_place)
            for (int i = 0; i < rc[rank]; i++)
                CHECK(v[dis[rank] + i] == rank * 1000003 + 5 * i, "in-place scatterv n=%d [%d]=%d",
                      n, i, v[dis[rank] + i]);
        for (int i = 0; i < at; i++) v[i] = -2;
        if (!in_place)
            for (int i = 0; i < rc[rank]; i++)
                CHECK(s[i] == rank * 1000003 + 5 * i, "scatterv n=%d [%d]=%d", n, i, s[i]);
        free(v);
        free(rc);
        free(dis);
        free(s);
        free(d);
        MPI_Type_free(&strided);
    }
}

/* The other nonblocking collectives outstanding together with
 * point-to-point messages and with collectives on a duplicate and on a
 * split of the world, completed in an order that differs by rank: reduce
 * (rotating root), gather, scatter, alltoall, reduce_scatter_block, scan
 * and exscan, small and (every other round) large. */
static void interleaved(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    enum { R = 12, MAXN = 5000 };
    int *in = malloc((size_t)MAXN * size * sizeof *in), *red = malloc((size_t)MAXN * size * sizeof *red),
        *gat = malloc((size_t)MAXN * size * sizeof *gat), *sca = malloc((size_t)MAXN * sizeof *sca),
        *a2a = malloc((size_t)MAXN * size * sizeof *a2a), *rsb = malloc((size_t)MAXN * sizeof *rsb),
        *scn = malloc((size_t)MAXN * sizeof *scn), *exs = malloc((size_t)MAXN * sizeof *exs),
        *msg = malloc((size_t)MAXN * sizeof *msg), *got = malloc((size_t)MAXN * sizeof *got);
    for (int round = 0; round < 2 * R; round++) {
        int n = round % 2 ? MAXN : 3, root = round % size;
        for (int i = 0; i < n * size; i++) in[i] = rank * 1000 + i + round;
        for (int i = 0; i < n; i++) msg[i] = rank * 7 + i;
        int dsum = -1, hmax = -1;
        MPI_Request r[11];
        MPI_Ireduce(in, red, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(got, n, MPI_INT, prev, round, MPI_COMM_WORLD, &r[1]);
        MPI_Igather(in, n, MPI_INT, gat, n, MPI_INT, root, MPI_COMM_WORLD, &r[2]);
        MPI_Iallreduce(&rank, &dsum, 1, MPI_INT, MPI_SUM, dup, &r[3]);
        MPI_Iscatter(in, n, MPI_INT, sca, n, MPI_INT, root, MPI_COMM_WORLD, &r[4]);
        MPI_Ialltoall(in, n, MPI_INT, a2a, n, MPI_INT, MPI_COMM_WORLD, &r[5]);
        MPI_Isend(msg, n, MPI_INT, next, round, MPI_COMM_WORLD, &r[6]);
        MPI_Ireduce_scatter_block(in, rsb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[7]);
        MPI_Iallreduce(&rank, &hmax, 1, MPI_INT, MPI_MAX, half, &r[8]);
        MPI_Iscan(in, scn, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[9]);
        MPI_Iexscan(in, exs, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[10]);
        /* Complete them in an order of this rank's own (1 + rank % 10 is
         * prime to 11: a permutation). */
        for (int k = 0; k < 11; k++)
            MPI_Wait(&r[(k * (1 + rank % 10) + round) % 11], MPI_STATUS_IGNORE);
        for (int k = 0; k < 11; k++) CHECK(r[k] == MPI_REQUEST_NULL, "request %d left", k);
        /* Element i of rank p's input is p * 1000 + i + round. */
#define IN(p, i) ((p) * 1000 + (i) + round)
        long ranks = (long)size * (size - 1) / 2;
        if (rank == root)
            for (int i = 0; i < n; i++) {
                CHECK(red[i] == 1000 * ranks + (long)size * (i + round), "ireduce [%d]=%d", i, red[i]);
                for (int p = 0; p < size; p++)
                    CHECK(gat[p * n + i] == IN(p, i), "igather from %d [%d]", p, i);
            }
        for (int i = 0; i < n; i++) {
            CHECK(got[i] == prev * 7 + i, "message [%d]=%d", i, got[i]);
            CHECK(sca[i] == IN(root, rank * n + i), "iscatter [%d]=%d", i, sca[i]);
            CHECK(rsb[i] == 1000 * ranks + (long)size * (rank * n + i + round), "ireduce_scatter_block [%d]=%d", i, rsb[i]);
            long upto = (long)rank * (rank + 1) / 2, before = (long)rank * (rank - 1) / 2;
            CHECK(scn[i] == 1000 * upto + (long)(rank + 1) * (i + round), "iscan [%d]=%d", i, scn[i]);
            if (rank > 0)
                CHECK(exs[i] == 1000 * before + (long)rank * (i + round), "iexscan [%d]=%d", i, exs[i]);
        }
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                CHECK(a2a[p * n + i] == IN(p, rank * n + i), "ialltoall from %d [%d]", p, i);
#undef IN
        CHECK(dsum == ranks, "iallreduce on a duplicate %d", dsum);
        int top = size - 1 - ((size - 1) % 2 != rank % 2);
        CHECK(hmax == top && hsize == (size + 1 - rank % 2) / 2 && hrank == rank / 2,
              "iallreduce on a half: %d", hmax);
    }
    free(in), free(red), free(gat), free(sca), free(a2a), free(rsb), free(scn), free(exs),
        free(msg), free(got);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
}

/* No rank leaves a barrier before every rank entered it: each rank
 * stamps its slot of a shared window with the round before the barrier
 * and reads every slot after it. Rank 0 enters with a nonblocking
 * broadcast outstanding (its barrier then runs as a schedule, the
 * others' as direct calls, and the two must mix), and the last rank is
 * late every fourth round. */
static void barrier_holds(void) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int rank, size;
    MPI_Comm_rank(node, &rank);
    MPI_Comm_size(node, &size);
    int *mine, *slots;
    MPI_Win win;
    OK(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win));
    MPI_Aint len;
    int unit;
    OK(MPI_Win_shared_query(win, 0, &len, &unit, &slots));
    *mine = 0;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(node);
    for (int round = 1; round <= 40; round++) {
        int v = round;
        MPI_Request req;
        MPI_Ibcast(&v, 1, MPI_INT, size - 1, node, &req);
        if (rank != 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == size - 1 && round % 4 == 0) usleep(3000);
        __atomic_store_n(&slots[rank], round, __ATOMIC_RELEASE);
        MPI_Win_sync(win);
        MPI_Barrier(node);
        MPI_Win_sync(win);
        for (int j = 0; j < size; j++) {
            int seen = __atomic_load_n(&slots[j], __ATOMIC_ACQUIRE);
            CHECK(seen >= round, "round %d: rank %d left the barrier before rank %d entered (%d)",
                  round, rank, j, seen);
        }
        if (rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(v == round, "ibcast %d", v);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Nonblocking collectives outstanding together, point-to-point
     * between them, completed in reverse order. */
    for (int round = 0; round < 20; round++) {
        enum { N = 40000 };
        static double big[N], gathered[8 * 64];
        int x = rank + round, sum = -1, token = -1, sent = rank;
        double mine[64];
        for (int i = 0; i < 64; i++) mine[i] = rank * 100 + i;
        if (rank == round % size)
            for (int i = 0; i < N; i++) big[i] = round + i;
        MPI_Request r[6];
        MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
        MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(&token, 1, MPI_INT, prev, round, MPI_COMM_WORLD, &r[2]);
        MPI_Ibcast(big, N, MPI_DOUBLE, round % size, MPI_COMM_WORLD, &r[3]);
        MPI_Isend(&sent, 1, MPI_INT, next, round, MPI_COMM_WORLD, &r[4]);
        MPI_Iallgather(mine, 64, MPI_DOUBLE, gathered, 64, MPI_DOUBLE, MPI_COMM_WORLD, &r[5]);
        if (round % 3 == 1) {
            /* A blocking collective while the others run. */
            int y = 1, z = 0;
            MPI_Allreduce(&y, &z, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(z == size, "blocking allreduce among nonblocking ones: %d", z);
        }
        if (round % 3 == 2) {
            /* A blocking barrier while the others run: a member whose
             * nonblocking ones happen to be done runs it on the board
             * directly (released by rank 0 where processes outnumber
             * cores), one whose are not compiles the flat one, and the
             * two must mix. */
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (int i = 5; i >= 0; i--) MPI_Wait(&r[i], MPI_STATUS_IGNORE);
        CHECK(sum == size * (size - 1) / 2 + size * round, "iallreduce %d", sum);
        CHECK(token == prev, "token %d", token);
        for (int i = 0; i < N; i++) CHECK(big[i] == round + i, "ibcast [%d]", i);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < 64; i++) CHECK(gathered[p * 64 + i] == p * 100 + i, "iallgather");
    }

    /* A root running ahead: rank 1 is late, the root's posts must wait
     * for it rather than overwrite what it has not read. 2 ints travel
     * in the flag line (the root may run several steps ahead), 20 in the
     * data buffer (one step ahead at most); every 7th step all members
     * post and read (an allreduce) between the broadcasts. */
    for (int n = 2; n <= 20; n += 18)
        for (int i = 0; i < 200; i++) {
            int v[20];
            for (int k = 0; k < n; k++) v[k] = rank == 0 ? i * 20 + k : -1;
            if (rank == 1 && i % 50 == 0) usleep(2000);
            MPI_Bcast(v, n, MPI_INT, 0, MPI_COMM_WORLD);
            for (int k = 0; k < n; k++) CHECK(v[k] == i * 20 + k, "bcast %d of %d", i, n);
            if (i % 7 == 3) {
                int one = i, sum = -1;
                MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                CHECK(sum == i * size, "allreduce between broadcasts %d", sum);
            }
        }

    interleaved();
    barrier_holds();

    MPI_Op l, r;
    MPI_Op_create(left, 0, &l);
    MPI_Op_create(right, 0, &r);
    reductions(MPI_COMM_WORLD, l, r);
    whole_elements(MPI_COMM_WORLD);

    /* Several communicators at once: a duplicate and halves. */
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    for (int i = 0; i < 10; i++) {
        int a = rank, b = -1, c = -1;
        MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_MAX, dup);
        MPI_Allreduce(&a, &c, 1, MPI_INT, MPI_MIN, half);
        CHECK(b == size - 1 && c == rank % 2, "dup %d half %d", b, c);
    }
    reductions(half, l, r);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    /* Communicators made and freed again and again. */
    for (int i = 0; i < 60; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int v = rank == i % size ? i : -1;
        MPI_Bcast(&v, 1, MPI_INT, i % size, c);
        CHECK(v == i, "bcast on dup %d: %d", i, v);
        MPI_Comm_free(&c);
    }

    /* Gathers on duplicates freed at once: the members that only send
     * leave the board while the root still reads their lines. */
    for (int i = 0; i < 100; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        for (int k = 0; k < 3; k++) {
            int root = (i + k) % size, mine[4] = {rank, i, k, -rank}, all[4 * 8];
            MPI_Request req;
            MPI_Igather(mine, 4, MPI_INT, all, rank == root ? 4 : 0, MPI_INT, root, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (rank == root)
                for (int p = 0; p < size; p++)
                    CHECK(all[4 * p] == p && all[4 * p + 1] == i && all[4 * p + 3] == -p,
                          "gather %d from %d", i, p);
        }
        MPI_Comm_free(&c);
    }

    /* Alltoall and scatter, small and in several pieces. */
    const int blocks[] = {1, 3000, 70000};
    for (int k = 0; k < 3; k++) {
        int n = blocks[k];
        int *s = malloc((size_t)n * size * sizeof *s), *d = malloc((size_t)n * size * sizeof *d);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++) s[p * n + i] = rank * 7 + p * 3 + i;
        MPI_Alltoall(s, n, MPI_INT, d, n, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i += 1 + n / 50)
                CHECK(d[p * n + i] == p * 7 + rank * 3 + i, "alltoall n=%d from %d", n, p);
        MPI_Scatter(s, n, MPI_INT, d, n, MPI_INT, size - 1, MPI_COMM_WORLD);
        for (int i = 0; i < n; i += 1 + n / 50)
            CHECK(d[i] == (size - 1) * 7 + rank * 3 + i, "scatter n=%d", n);
        MPI_Gather(d, n, MPI_INT, s, n, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int p = 0; p < size; p++)
                CHECK(s[p * n] == (size - 1) * 7 + p * 3, "gather n=%d from %d", n, p);
        free(s);
        free(d);
    }

    mixed(l);
    layouts();

    MPI_Op_free(&l);
    MPI_Op_free(&r);
    printf("boards: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
