/* Every collective of MPI-4.0 chapter 6, blocking and nonblocking: every
 * root, MPI_IN_PLACE, sizes 0, 1, a few KiB and over 1 MiB (both
 * algorithm families), several nonblocking collectives outstanding and
 * completed in different orders at different ranks, user operations
 * (commutative and not), MINLOC/MAXLOC on the pair types, Reduce_local,
 * and error classes under MPI_ERRORS_RETURN. */
#include <complex.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static int rank, size;
/* 1: call the nonblocking form and wait for it. */
static int nb;

#define RUN(blocking, nonblocking, ...)                                       \
    do {                                                                      \
        if (nb) {                                                             \
            MPI_Request r_;                                                   \
            CHECK(nonblocking(__VA_ARGS__, &r_) == MPI_SUCCESS, #nonblocking); \
            CHECK(MPI_Wait(&r_, MPI_STATUS_IGNORE) == MPI_SUCCESS, #nonblocking); \
            CHECK(r_ == MPI_REQUEST_NULL, "request not freed");               \
        } else {                                                              \
            CHECK(blocking(__VA_ARGS__) == MPI_SUCCESS, #blocking);           \
        }                                                                     \
    } while (0)

enum { BIG = 300000 }; /* ints: 1.2 MB */
static int *a, *b, *c;

/* Counts: empty, one, a few KiB, over 1 MiB. */
static const int counts[] = {0, 1, 1000, BIG};
enum { NCOUNTS = sizeof counts / sizeof counts[0] };

static int val(int r, int i) { return r * 1000003 + i * 7; }

static void test_bcast(void) {
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        for (int root = 0; root < size; root++) {
            if (n == BIG && root != size - 1) continue; /* keep it quick */
            for (int i = 0; i < n; i++) a[i] = rank == root ? val(root, i) : -1;
            RUN(MPI_Bcast, MPI_Ibcast, a, n, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) CHECK(a[i] == val(root, i), "bcast n %d root %d [%d]", n, root, i);
        }
    }
}

static int sum_of(int i) { return (int)((long)size * (size - 1) / 2 * 1000003 + (long)size * i * 7); }

static void test_reduce(void) {
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        for (int root = 0; root < size; root++) {
            if (n == BIG && root != 0) continue;
            for (int i = 0; i < n; i++) a[i] = val(rank, i), b[i] = -1;
            int in_place = rank == root && (root % 2 == 1);
            if (in_place) memcpy(b, a, n * sizeof *a);
            RUN(MPI_Reduce, MPI_Ireduce, in_place ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, root,
                MPI_COMM_WORLD);
            if (rank == root)
                for (int i = 0; i < n; i++) CHECK(b[i] == sum_of(i), "reduce n %d root %d", n, root);
        }
    }
    /* The receive buffer is significant at the root only: NULL elsewhere,
     * or the send buffer itself. */
    for (int root = 0; root < size; root++) {
        int v = rank + 1, acc = rank == root ? v : -1;
        int *recv = rank == root ? &acc : rank % 2 ? NULL : &v;
        CHECK(MPI_Reduce(rank == root ? MPI_IN_PLACE : &v, recv, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "reduce, receive buffer insignificant");
        CHECK(rank != root || acc == size * (size + 1) / 2, "reduce in place root %d: %d", root, acc);
    }
}

static void test_allreduce(void) {
    for (int k = 0; k < NCOUNTS; k++) {
        int n = counts[k];
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n; i++) a[i] = val(rank, i), b[i] = in_place ? a[i] : -1;
            RUN(MPI_Allreduce, MPI_Iallreduce, in_place ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM,
                MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) CHECK(b[i] == sum_of(i), "allreduce n %d [%d] %d", n, i, b[i]);
        }
    }
    /* Doubles: every rank holds the same bits, short and long. */
    static double x[BIG / 2], y[BIG / 2], yref[BIG / 2];
    int dn[] = {3, BIG / 2};
    for (int k = 0; k < 2; k++) {
        int n = dn[k];
        for (int i = 0; i < n; i++) x[i] = 1.0 / (rank + 3 + i % 5);
        RUN(MPI_Allreduce, MPI_Iallreduce, x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        memcpy(yref, y, n * sizeof *y);
        MPI_Bcast(yref, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        CHECK(memcmp(y, yref, n * sizeof *y) == 0, "allreduce differs across ranks (n %d)", n);
    }
    /* Other predefined operations and types. */
    long l = rank + 1, lr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &l, &lr, 1, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
    long f = 1;
    for (int r = 1; r <= size; r++) f *= r;
    CHECK(lr == f, "prod %ld", lr);
    unsigned char bits = (unsigned char)(1u << (rank % 8)), br;
    RUN(MPI_Allreduce, MPI_Iallreduce, &bits, &br, 1, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    CHECK(br == (size >= 8 ? 0xff : (1u << size) - 1), "bor %x", br);
    float fl = (float)rank, fr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &fl, &fr, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(fr == size - 1, "fmax %f", fr);
    short s = (short)-rank, sr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &s, &sr, 1, MPI_SHORT, MPI_MIN, MPI_COMM_WORLD);
    CHECK(sr == 1 - size, "smin %d", sr);
    _Bool t = rank != 1, tr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &t, &tr, 1, MPI_C_BOOL, MPI_LAND, MPI_COMM_WORLD);
    CHECK(tr == (size < 2), "land %d", tr);
    long double ld = rank + 0.5L, ldr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &ld, &ldr, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(ldr == size * size / 2.0L, "long double sum %Lf", ldr);
#ifdef MPI_C_DOUBLE_COMPLEX /* MPICH's header names the complex types */
    double _Complex z = rank + 2.0 * I, zr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &z, &zr, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    CHECK(creal(zr) == size * (size - 1) / 2 && cimag(zr) == 2 * size, "complex sum");
    float _Complex w = I, wr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &w, &wr, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    float _Complex want = 1;
    for (int r = 0; r < size; r++) want *= I;
    CHECK(wr == want, "complex product");
#endif
}

/* MINLOC / MAXLOC on every pair type: ties go to the lower index. */
static void test_loc(void) {
    struct { double v; int i; } d = {rank % 2, rank}, dr;
    RUN(MPI_Allreduce, MPI_Iallreduce, &d, &dr, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(dr.v == 0 && dr.i == 0, "double minloc %f %d", dr.v, dr.i);
    RUN(MPI_Allreduce, MPI_Iallreduce, &d, &dr, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(dr.v == (size > 1) && dr.i == (size > 1), "double maxloc %f %d", dr.v, dr.i);
    struct { int v, i; } p[2] = {{rank / 2, rank}, {-rank, 100 - rank}}, pr[2];
    RUN(MPI_Allreduce, MPI_Iallreduce, p, pr, 2, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(pr[0].v == (size - 1) / 2 && pr[0].i == ((size - 1) / 2) * 2, "2int maxloc %d %d", pr[0].v, pr[0].i);
    CHECK(pr[1].v == 0 && pr[1].i == 100, "2int maxloc [1] %d %d", pr[1].v, pr[1].i);
    struct { float v; int i; } fi = {(float)(rank % 3), rank}, fir;
    RUN(MPI_Allreduce, MPI_Iallreduce, &fi, &fir, 1, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    int top = size >= 3 ? 2 : size - 1;
    CHECK(fir.v == top && fir.i == top, "float maxloc %f %d", fir.v, fir.i);
    struct { long v; int i; } li = {-(long)rank, rank}, lir;
    RUN(MPI_Allreduce, MPI_Iallreduce, &li, &lir, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(lir.v == 1 - size && lir.i == size - 1, "long minloc %ld %d", lir.v, lir.i);
    struct { short v; int i; } si = {7, size - rank}, sir;
    for (int root = 0; root < size; root++) {
        RUN(MPI_Reduce, MPI_Ireduce, &si, &sir, 1, MPI_SHORT_INT, MPI_MINLOC, root, MPI_COMM_WORLD);
        if (rank == root) CHECK(sir.v == 7 && sir.i == 1, "short minloc %d %d", sir.v, sir.i);
    }
    struct { long double v; int i; } ldi = {rank == 0 ? 5.0L : 1.0L, rank}, ldir;
    RUN(MPI_Allreduce, MPI_Iallreduce, &ldi, &ldir, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(ldir.v == 5.0L && ldir.i == 0, "long double maxloc %Lf %d", ldir.v, ldir.i);
}

static void test_gather_scatter(void) {
    int small[] = {0, 1, 700};
    for (int k = 0; k < 3; k++) {
        int n = small[k];
        for (int root = 0; root < size; root++) {
            int in_place = rank == root && root % 2 == 1;
            for (int i = 0; i < n; i++) a[i] = val(rank, i);
            for (int i = 0; i < n * size; i++) b[i] = -1;
            if (in_place) memcpy(b + n * rank, a, n * sizeof *a);
            RUN(MPI_Gather, MPI_Igather, in_place ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT, root,
                MPI_COMM_WORLD);
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < n; i++) CHECK(b[r * n + i] == val(r, i), "gather n %d root %d", n, root);
            /* Scatter it back out. */
            for (int i = 0; i < n; i++) c[i] = -1;
            RUN(MPI_Scatter, MPI_Iscatter, b, n, MPI_INT, in_place ? MPI_IN_PLACE : c, n, MPI_INT, root,
                MPI_COMM_WORLD);
            if (!in_place)
                for (int i = 0; i < n; i++) CHECK(c[i] == val(rank, i), "scatter n %d root %d", n, root);
            else /* the root's own block stays where it is */
                for (int i = 0; i < n; i++)
                    CHECK(b[rank * n + i] == val(rank, i), "in-place scatter n %d root %d", n, root);
        }
    }
    /* v forms: rank r has r + 1 ints, stored in reverse rank order with
     * gaps. */
    int rc[64], displs[64], off = 0;
    for (int r = size - 1; r >= 0; r--) rc[r] = r + 1, displs[r] = off, off += r + 3;
    for (int root = 0; root < size; root++) {
        for (int i = 0; i <= rank; i++) a[i] = val(rank, i);
        for (int i = 0; i < off; i++) b[i] = -2;
        RUN(MPI_Gatherv, MPI_Igatherv, a, rank + 1, MPI_INT, b, rc, displs, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int r = 0; r < size; r++) {
                for (int i = 0; i <= r; i++) CHECK(b[displs[r] + i] == val(r, i), "gatherv root %d", root);
                CHECK(b[displs[r] + r + 1] == -2, "gatherv wrote a gap");
            }
        for (int i = 0; i < 64; i++) c[i] = -1;
        RUN(MPI_Scatterv, MPI_Iscatterv, b, rc, displs, MPI_INT, c, rank + 1, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; i <= rank; i++) CHECK(c[i] == val(rank, i), "scatterv root %d", root);
        CHECK(c[rank + 1] == -1, "scatterv overran");
    }
}

static void test_allgather(void) {
    int ns[] = {0, 1, 700, BIG / size};
    for (int k = 0; k < 4; k++) {
        int n = ns[k];
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n; i++) a[i] = val(rank, i);
            for (int i = 0; i < n * size; i++) b[i] = -1;
            if (in_place) memcpy(b + n * rank, a, n * sizeof *a);
            RUN(MPI_Allgather, MPI_Iallgather, in_place ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT,
                MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) CHECK(b[r * n + i] == val(r, i), "allgather n %d", n);
        }
    }
    int rc[64], displs[64], off = 0;
    for (int r = 0; r < size; r++) rc[r] = (r * 5) % 3, displs[r] = off, off += rc[r] + 1;
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int i = 0; i < rc[rank]; i++) a[i] = val(rank, i);
        for (int i = 0; i < off; i++) b[i] = -2;
        if (in_place) memcpy(b + displs[rank], a, rc[rank] * sizeof *a);
        RUN(MPI_Allgatherv, MPI_Iallgatherv, in_place ? MPI_IN_PLACE : a, rc[rank], MPI_INT, b, rc, displs,
            MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < rc[r]; i++) CHECK(b[displs[r] + i] == val(r, i), "allgatherv");
            CHECK(b[displs[r] + rc[r]] == -2, "allgatherv wrote a gap");
        }
    }
}

static void test_alltoall(void) {
    int ns[] = {0, 1, 300};
    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) a[r * n + i] = val(rank, r * 100 + i);
            if (in_place) memcpy(b, a, n * size * sizeof *a);
            else
                for (int i = 0; i < n * size; i++) b[i] = -1;
            RUN(MPI_Alltoall, MPI_Ialltoall, in_place ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT,
                MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) CHECK(b[r * n + i] == val(r, rank * 100 + i), "alltoall n %d", n);
        }
    }
    /* v: rank s sends (s + d) % 3 ints to rank d. */
    int sc[64], sd[64], rcv[64], rd[64], so = 0, ro = 0;
    for (int r = 0; r < size; r++) {
        sc[r] = (rank + r) % 3, sd[r] = so, so += sc[r] + 1;
        rcv[r] = (r + rank) % 3, rd[r] = ro, ro += rcv[r] + 2;
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < sc[r]; i++) a[sd[r] + i] = val(rank, r * 10 + i);
    for (int i = 0; i < ro; i++) b[i] = -3;
    RUN(MPI_Alltoallv, MPI_Ialltoallv, a, sc, sd, MPI_INT, b, rcv, rd, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < rcv[r]; i++) CHECK(b[rd[r] + i] == val(r, rank * 10 + i), "alltoallv");
        CHECK(b[rd[r] + rcv[r]] == -3, "alltoallv wrote a gap");
    }
    /* w: ints to even ranks, doubles to odd ranks; byte displacements. */
    int wc[64], wsd[64], wrd[64];
    MPI_Datatype wt[64], rt[64];
    static char sbuf[64 * 16], rbuf[64 * 16];
    for (int r = 0; r < size; r++) {
        wc[r] = 1, wsd[r] = 16 * r, wrd[r] = 16 * (size - 1 - r);
        wt[r] = rank % 2 ? MPI_DOUBLE : MPI_INT; /* what this rank sends */
        rt[r] = r % 2 ? MPI_DOUBLE : MPI_INT;    /* what rank r sends */
        if (rank % 2) *(double *)(sbuf + 16 * r) = rank + r / 8.0;
        else *(int *)(sbuf + 16 * r) = rank * 100 + r;
    }
    RUN(MPI_Alltoallw, MPI_Ialltoallw, sbuf, wc, wsd, wt, rbuf, wc, wrd, rt, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        char *at = rbuf + 16 * (size - 1 - r);
        if (r % 2) CHECK(*(double *)at == r + rank / 8.0, "alltoallw double from %d", r);
        else CHECK(*(int *)at == r * 100 + rank, "alltoallw int from %d", r);
    }
    /* In place: the receive blocks go out. */
    for (int r = 0; r < size; r++) b[r] = val(rank, r);
    int ones[64], idx[64];
    MPI_Datatype ints[64];
    for (int r = 0; r < size; r++) ones[r] = 1, idx[r] = r * (int)sizeof(int), ints[r] = MPI_INT;
    RUN(MPI_Alltoallw, MPI_Ialltoallw, MPI_IN_PLACE, NULL, NULL, NULL, b, ones, idx, ints, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) CHECK(b[r] == val(r, rank), "in-place alltoallw");
}

static void test_reduce_scatter(void) {
    int ns[] = {0, 1, 500};
    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n * size; i++) a[i] = val(rank, i);
            RUN(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, in_place ? MPI_IN_PLACE : a,
                in_place ? a : b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            int *got = in_place ? a : b;
            for (int i = 0; i < n; i++) CHECK(got[i] == sum_of(rank * n + i), "reduce_scatter_block n %d", n);
        }
    }
    int rc[64], total = 0, mine = 0;
    for (int r = 0; r < size; r++) {
        rc[r] = r % 3;
        if (r < rank) mine += rc[r];
        total += rc[r];
    }
    for (int i = 0; i < total; i++) a[i] = val(rank, i);
    RUN(MPI_Reduce_scatter, MPI_Ireduce_scatter, a, b, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < rc[rank]; i++) CHECK(b[i] == sum_of(mine + i), "reduce_scatter");
    for (int i = 0; i < total; i++) a[i] = val(rank, i);
    RUN(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_IN_PLACE, a, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < rc[rank]; i++) CHECK(a[i] == sum_of(mine + i), "in-place reduce_scatter");
}

/* Affine maps x -> m x + k (mod 2^32) as MPI_2INT pairs; composing them
 * ("first in, then inout") is associative and not commutative. */
typedef struct { int m, k; } affine;
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt != MPI_2INT) { /* no MPI calls inside a user function */
        fprintf(stderr, "user function got datatype %#x\n", (unsigned)*dt);
        abort();
    }
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        unsigned m = (unsigned)y[i].m * (unsigned)x[i].m;
        unsigned k = (unsigned)y[i].m * (unsigned)x[i].k + (unsigned)y[i].k;
        y[i].m = (int)m, y[i].k = (int)k;
    }
}
static affine map_of(int r, int i) { return (affine){2 * r + 3 + i, r - i}; }
/* The composition of the maps of ranks lo..hi-1, in rank order. */
static affine chain(int lo, int hi, int i) {
    affine acc = {1, 0};
    for (int r = lo; r < hi; r++) {
        affine x = acc, y = map_of(r, i);
        int one = 1;
        MPI_Datatype t = MPI_2INT;
        compose(&x, &y, &one, &t);
        acc = y;
    }
    return acc;
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* A reduction function that asks the library about its datatype, as
 * mpi4py's do: the call re-enters the library from inside a collective. */
static int queried;
static void sized_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int sz = -1;
    MPI_Aint lb, extent;
    CHECK(MPI_Type_size(*dt, &sz) == MPI_SUCCESS && sz == (int)sizeof(int), "size %d", sz);
    CHECK(MPI_Type_get_extent(*dt, &lb, &extent) == MPI_SUCCESS && extent == sizeof(int), "extent");
    int init = 0, fini = 1;
    CHECK(MPI_Initialized(&init) == MPI_SUCCESS && init, "initialized");
    CHECK(MPI_Finalized(&fini) == MPI_SUCCESS && !fini, "finalized");
    queried++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void test_reentrant_op(void) {
    MPI_Op op;
    MPI_Op_create(sized_sum, 1, &op);
    for (nb = 0; nb < 2; nb++) {
        int x[2] = {rank, 1}, y[2] = {-1, -1};
        RUN(MPI_Allreduce, MPI_Iallreduce, x, y, 2, MPI_INT, op, MPI_COMM_WORLD);
        CHECK(y[0] == size * (size - 1) / 2 && y[1] == size, "re-entrant allreduce %d %d", y[0], y[1]);
        CHECK(MPI_Reduce_local(x, y, 2, MPI_INT, op) == MPI_SUCCESS && y[1] == size + 1, "reduce_local");
    }
    CHECK(queried > 0, "the function never ran");
    MPI_Op_free(&op);
}

static void test_user_ops(void) {
    MPI_Op comp, add;
    CHECK(MPI_Op_create(compose, 0, &comp) == MPI_SUCCESS, "op_create");
    CHECK(MPI_Op_create(isum, 1, &add) == MPI_SUCCESS, "op_create");
    int commute = -1;
    MPI_Op_commutative(comp, &commute);
    CHECK(commute == 0, "commutative %d", commute);
    MPI_Op_commutative(add, &commute);
    CHECK(commute == 1, "commutative %d", commute);
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1, "commutative %d", commute);

    enum { N = 3 };
    static affine x[5000], y[5000];
    int ns[] = {N, 5000};
    for (int k = 0; k < 2; k++) {
        int n = ns[k];
        for (int i = 0; i < n; i++) x[i] = map_of(rank, i);
        RUN(MPI_Allreduce, MPI_Iallreduce, x, y, n, MPI_2INT, comp, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            affine w = chain(0, size, i);
            CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative allreduce n %d", n);
        }
    }
    for (int k = 0; k < 2; k++) {
        int n = ns[k];
        for (int i = 0; i < n; i++) x[i] = map_of(rank, i);
        for (int root = 0; root < size; root++) {
            RUN(MPI_Reduce, MPI_Ireduce, x, y, n, MPI_2INT, comp, root, MPI_COMM_WORLD);
            if (rank == root)
                for (int i = 0; i < n; i++) {
                    affine w = chain(0, size, i);
                    CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative reduce n %d root %d", n,
                          root);
                }
        }
        RUN(MPI_Scan, MPI_Iscan, x, y, n, MPI_2INT, comp, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            affine w = chain(0, rank + 1, i);
            CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative scan n %d", n);
        }
        y[0].m = -7;
        RUN(MPI_Exscan, MPI_Iexscan, x, y, n, MPI_2INT, comp, MPI_COMM_WORLD);
        if (rank > 0)
            for (int i = 0; i < n; i++) {
                affine w = chain(0, rank, i);
                CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative exscan n %d", n);
            }
        /* Blocks of 1 and of 600 pairs (4.8 KiB; fewer beyond 8 processes,
         * so that every block fits the 5000 pairs). */
        int blk = !k ? 1 : 5000 / size < 600 ? 5000 / size : 600;
        for (int i = 0; i < blk * size; i++) x[i] = map_of(rank, i);
        RUN(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, x, y, blk, MPI_2INT, comp,
            MPI_COMM_WORLD);
        for (int i = 0; i < blk; i++) {
            affine w = chain(0, size, rank * blk + i);
            CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative reduce_scatter_block %d", blk);
        }
    }
    for (int i = 0; i < N; i++) x[i] = map_of(rank, i);
    int rc[64];
    for (int r = 0; r < size; r++) rc[r] = 1 + r % 2;
    int before = 0;
    for (int r = 0; r < rank; r++) before += rc[r];
    int total = before;
    for (int r = rank; r < size; r++) total += rc[r];
    for (int i = 0; i < total; i++) x[i] = map_of(rank, i);
    RUN(MPI_Reduce_scatter, MPI_Ireduce_scatter, x, y, rc, MPI_2INT, comp, MPI_COMM_WORLD);
    for (int i = 0; i < rc[rank]; i++) {
        affine w = chain(0, size, before + i);
        CHECK(y[i].m == w.m && y[i].k == w.k, "noncommutative reduce_scatter");
    }

    for (int i = 0; i < BIG; i++) a[i] = val(rank, i);
    RUN(MPI_Allreduce, MPI_Iallreduce, a, b, BIG, MPI_INT, add, MPI_COMM_WORLD);
    for (int i = 0; i < BIG; i++) CHECK(b[i] == sum_of(i), "user sum");

    /* Reduce_local, user and predefined. */
    affine u = map_of(1, 0), v = map_of(2, 0);
    CHECK(MPI_Reduce_local(&u, &v, 1, MPI_2INT, comp) == MPI_SUCCESS, "reduce_local");
    affine w = chain(1, 3, 0);
    CHECK(v.m == w.m && v.k == w.k, "reduce_local user");
    double p[2] = {1.5, 2}, q[2] = {2, 3};
    CHECK(MPI_Reduce_local(p, q, 2, MPI_DOUBLE, MPI_PROD) == MPI_SUCCESS, "reduce_local");
    CHECK(q[0] == 3 && q[1] == 6, "reduce_local prod");

    CHECK(MPI_Op_free(&comp) == MPI_SUCCESS && comp == MPI_OP_NULL, "op_free");
    CHECK(MPI_Op_free(&add) == MPI_SUCCESS, "op_free");
}

static void test_scan(void) {
    int ns[] = {0, 1, 2000};
    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n; i++) a[i] = rank + i, b[i] = in_place ? a[i] : -1;
            RUN(MPI_Scan, MPI_Iscan, in_place ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) CHECK(b[i] == rank * (rank + 1) / 2 + (rank + 1) * i, "scan n %d", n);
            for (int i = 0; i < n; i++) b[i] = in_place ? a[i] : -1;
            RUN(MPI_Exscan, MPI_Iexscan, in_place ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            if (rank > 0)
                for (int i = 0; i < n; i++) CHECK(b[i] == rank * (rank - 1) / 2 + rank * i, "exscan n %d", n);
        }
    }
}

/* Send and receive datatypes differ with matching signatures; a
 * non-contiguous type (MPI_DOUBLE_INT: 12 bytes of data in 16) leaves the
 * padding alone. */
static void test_mixed_types(void) {
    int four[4], pairs[4] = {-1, -1, -1, -1};
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 4; i++) four[i] = root * 10 + i;
        if (rank == root)
            RUN(MPI_Bcast, MPI_Ibcast, four, 4, MPI_INT, root, MPI_COMM_WORLD);
        else
            RUN(MPI_Bcast, MPI_Ibcast, pairs, 2, MPI_2INT, root, MPI_COMM_WORLD);
        if (rank != root)
            for (int i = 0; i < 4; i++) CHECK(pairs[i] == root * 10 + i, "bcast int as 2int");
    }
    int two[2] = {rank, -rank};
    struct { int v, i; } all[64];
    RUN(MPI_Allgather, MPI_Iallgather, two, 2, MPI_INT, all, 1, MPI_2INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) CHECK(all[r].v == r && all[r].i == -r, "allgather int as 2int");

    typedef struct { double v; int i; } di;
    static di mine[2], got[2 * 64];
    mine[0] = (di){rank / 4.0, rank}, mine[1] = (di){-rank, 2 * rank};
    for (int root = 0; root < size; root++) {
        memset(got, 0xab, sizeof got);
        RUN(MPI_Gather, MPI_Igather, mine, 2, MPI_DOUBLE_INT, got, 2, MPI_DOUBLE_INT, root, MPI_COMM_WORLD);
        if (rank != root) continue;
        for (int r = 0; r < size; r++) {
            CHECK(got[2 * r].v == r / 4.0 && got[2 * r].i == r, "gather double_int");
            CHECK(got[2 * r + 1].v == -r && got[2 * r + 1].i == 2 * r, "gather double_int");
            for (int k = 0; k < 2; k++) {
                unsigned char *pad = (unsigned char *)&got[2 * r + k] + 12;
                CHECK(pad[0] == 0xab && pad[3] == 0xab, "gather wrote the padding of a double_int");
            }
        }
    }
}

/* Several nonblocking collectives at once, on two communicators,
 * completed in a different order at even and odd ranks. */
static void test_outstanding(void) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    enum { K = 6 };
    MPI_Request req[K];
    static int bc[3000], ar[3000], arr[3000], ag[64], sc[2];
    for (int i = 0; i < 3000; i++) bc[i] = rank == 0 ? i : -1, ar[i] = rank;
    int g = rank * 3;
    MPI_Ibcast(bc, 3000, MPI_INT, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Iallreduce(ar, arr, 3000, MPI_INT, MPI_SUM, dup, &req[1]);
    MPI_Ibarrier(MPI_COMM_WORLD, &req[2]);
    MPI_Iallgather(&g, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &req[3]);
    MPI_Iscan(&g, &sc[0], 1, MPI_INT, MPI_SUM, dup, &req[4]);
    MPI_Ibcast(&sc[1], 0, MPI_INT, size - 1, MPI_COMM_WORLD, &req[5]);
    if (rank % 2) {
        for (int k = K - 1; k >= 0; k--) CHECK(MPI_Wait(&req[k], MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait %d", k);
    } else if (rank % 4 == 0) {
        /* Test until everything is done, in a scrambled order. */
        int left = K;
        while (left > 0)
            for (int k = 0; k < K; k++) {
                int j = (k * 5 + 3) % K, flag = 0;
                if (req[j] == MPI_REQUEST_NULL) continue;
                CHECK(MPI_Test(&req[j], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "test");
                if (flag) left--;
            }
    } else {
        MPI_Status st[K];
        CHECK(MPI_Waitall(K, req, st) == MPI_SUCCESS, "waitall");
    }
    for (int i = 0; i < 3000; i++) CHECK(bc[i] == i && arr[i] == size * (size - 1) / 2, "outstanding");
    for (int r = 0; r < size; r++) CHECK(ag[r] == 3 * r, "outstanding allgather");
    CHECK(sc[0] == 3 * rank * (rank + 1) / 2, "outstanding scan");
    /* The same collective several times at once: only the call numbers
     * tell their messages apart. */
    enum { M = 4 };
    static int in[M][3000], res[M][3000];
    int lens[M] = {1, 3000, 2, 700};
    for (int k = 0; k < M; k++) {
        for (int i = 0; i < lens[k]; i++) in[k][i] = (k + 1) * rank + i;
        MPI_Iallreduce(in[k], res[k], lens[k], MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[k]);
    }
    for (int k = 0; k < M; k++) {
        int j = rank % 2 ? M - 1 - k : (k + rank) % M;
        CHECK(MPI_Wait(&req[j], MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait");
    }
    for (int k = 0; k < M; k++)
        for (int i = 0; i < lens[k]; i++)
            CHECK(res[k][i] == (k + 1) * size * (size - 1) / 2 + size * i, "concurrent allreduce %d", k);
    for (int k = 0; k < M; k++) {
        int root = (k * 3) % size;
        for (int i = 0; i < lens[k]; i++) in[k][i] = rank == root ? k * 100 + i : -1;
        MPI_Ibcast(in[k], lens[k], MPI_INT, root, MPI_COMM_WORLD, &req[k]);
    }
    for (int k = M - 1; k >= 0; k--) MPI_Wait(&req[rank % 2 ? k : M - 1 - k], MPI_STATUS_IGNORE);
    for (int k = 0; k < M; k++)
        for (int i = 0; i < lens[k]; i++) CHECK(in[k][i] == k * 100 + i, "concurrent bcast %d", k);

    /* A nonblocking collective progresses while its process waits for a
     * message that another process sends only after the collective: in
     * the dissemination barrier, rank 2 waits for rank 0's second round,
     * which rank 0 can only send once the others have entered. */
    if (size > 1) {
        int msg = -1, sender = size > 2 ? 2 : 1;
        MPI_Request bar, rcv;
        if (rank != 0) usleep(20000); /* rank 0 starts first */
        MPI_Ibarrier(MPI_COMM_WORLD, &bar);
        if (rank == 0) {
            MPI_Irecv(&msg, 1, MPI_INT, sender, 5, MPI_COMM_WORLD, &rcv);
            MPI_Wait(&rcv, MPI_STATUS_IGNORE);
            MPI_Wait(&bar, MPI_STATUS_IGNORE);
            CHECK(msg == 55, "message after the barrier");
        } else {
            MPI_Wait(&bar, MPI_STATUS_IGNORE);
            msg = 55;
            if (rank == sender) MPI_Send(&msg, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        }
        /* The same while rank 0 blocks in MPI_Probe, then MPI_Mprobe:
         * every wait of the library progresses collectives. */
        for (int matched = 0; matched < 2; matched++) {
            if (rank != 0) usleep(20000);
            MPI_Ibarrier(MPI_COMM_WORLD, &bar);
            if (rank == 0) {
                MPI_Status st;
                msg = -1;
                if (matched) {
                    MPI_Message m;
                    MPI_Mprobe(sender, 6, MPI_COMM_WORLD, &m, &st);
                    MPI_Mrecv(&msg, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
                } else {
                    MPI_Probe(sender, 6, MPI_COMM_WORLD, &st);
                    MPI_Recv(&msg, 1, MPI_INT, sender, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                MPI_Wait(&bar, MPI_STATUS_IGNORE);
                CHECK(msg == 66 && st.MPI_SOURCE == sender, "message probed after the barrier");
            } else {
                MPI_Wait(&bar, MPI_STATUS_IGNORE);
                msg = 66;
                if (rank == sender) MPI_Send(&msg, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
            }
        }
    }

    /* Blocking collectives interleaved with a nonblocking one. */
    int x = rank, y = -1;
    MPI_Request r;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
    MPI_Barrier(dup);
    MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(y == size - 1 && x == 0, "interleaved");
    MPI_Comm_free(&dup);
}

static int class_of(int rc) {
    int cls;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* A one-process communicator: every collective is a local copy. */
static void test_self(void) {
    int x[3] = {rank, 1, 2}, y[3] = {-1, -1, -1};
    RUN(MPI_Allreduce, MPI_Iallreduce, x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[2] == 2, "self allreduce");
    RUN(MPI_Alltoall, MPI_Ialltoall, x, 3, MPI_INT, y, 3, MPI_INT, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[1] == 1, "self alltoall");
    y[0] = y[1] = y[2] = -5;
    RUN(MPI_Exscan, MPI_Iexscan, x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(y[0] == -5 && y[2] == -5, "self exscan wrote the first process's result");
    RUN(MPI_Scan, MPI_Iscan, x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[1] == 1 && y[2] == 2, "self scan");
    y[0] = y[1] = y[2] = -5;
    RUN(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, x, y, 2, MPI_INT, MPI_MAX, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[1] == 1 && y[2] == -5, "self reduce_scatter_block");
    RUN(MPI_Scan, MPI_Iscan, MPI_IN_PLACE, y, 2, MPI_INT, MPI_PROD, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[1] == 1 && y[2] == -5, "self scan in place");
    RUN(MPI_Gather, MPI_Igather, x, 2, MPI_INT, y, 2, MPI_INT, 0, MPI_COMM_SELF);
    CHECK(y[0] == rank && y[1] == 1, "self gather");
    RUN(MPI_Barrier, MPI_Ibarrier, MPI_COMM_SELF);
    RUN(MPI_Bcast, MPI_Ibcast, x, 3, MPI_INT, 0, MPI_COMM_SELF);
    CHECK(x[0] == rank && x[1] == 1 && x[2] == 2, "self bcast");
    double d[2] = {rank + 0.5, 2.0}, e[2] = {-1, -1};
    RUN(MPI_Reduce, MPI_Ireduce, d, e, 2, MPI_DOUBLE, MPI_PROD, 0, MPI_COMM_SELF);
    CHECK(e[0] == rank + 0.5 && e[1] == 2.0, "self reduce");
    y[0] = 7, y[1] = 8, y[2] = 9;
    RUN(MPI_Allreduce, MPI_Iallreduce, MPI_IN_PLACE, y, 3, MPI_INT, MPI_MAX, MPI_COMM_SELF);
    CHECK(y[0] == 7 && y[1] == 8 && y[2] == 9, "self allreduce in place");

    /* The collectives that move blocks copy this process's own. */
    int zero = 0, three = 3, z[6];
#define SELF_BLOCKS(what, call, ...)                                            \
    do {                                                                        \
        for (int i_ = 0; i_ < 6; i_++) z[i_] = -1;                              \
        RUN(call, __VA_ARGS__);                                                 \
        CHECK(z[0] == rank && z[1] == 1 && z[2] == 2 && z[3] == -1, "self %s: %d %d %d %d", \
              what, z[0], z[1], z[2], z[3]);                                    \
    } while (0)
    SELF_BLOCKS("gather", MPI_Gather, MPI_Igather, x, 3, MPI_INT, z, 3, MPI_INT, 0, MPI_COMM_SELF);
    SELF_BLOCKS("scatter", MPI_Scatter, MPI_Iscatter, x, 3, MPI_INT, z, 3, MPI_INT, 0, MPI_COMM_SELF);
    SELF_BLOCKS("allgather", MPI_Allgather, MPI_Iallgather, x, 3, MPI_INT, z, 3, MPI_INT, MPI_COMM_SELF);
    SELF_BLOCKS("alltoall", MPI_Alltoall, MPI_Ialltoall, x, 3, MPI_INT, z, 3, MPI_INT, MPI_COMM_SELF);
    SELF_BLOCKS("allgatherv", MPI_Allgatherv, MPI_Iallgatherv, x, 3, MPI_INT, z, &three, &zero, MPI_INT,
                MPI_COMM_SELF);
    SELF_BLOCKS("gatherv", MPI_Gatherv, MPI_Igatherv, x, 3, MPI_INT, z, &three, &zero, MPI_INT, 0,
                MPI_COMM_SELF);
    SELF_BLOCKS("scatterv", MPI_Scatterv, MPI_Iscatterv, x, &three, &zero, MPI_INT, z, 3, MPI_INT, 0,
                MPI_COMM_SELF);
    /* Displacements: the block at x + 1 lands at z + 2, z + 1 (w: bytes). */
    int one_disp = 1, two_disp = 2, two_n = 2;
    int w_from = (int)sizeof(int), w_to = 2 * (int)sizeof(int);
    MPI_Datatype ints[1] = {MPI_INT};
    int xs[4] = {-3, rank, 1, 2};
    SELF_BLOCKS("alltoallv", MPI_Alltoallv, MPI_Ialltoallv, xs, &three, &one_disp, MPI_INT, z, &three,
                &zero, MPI_INT, MPI_COMM_SELF);
    SELF_BLOCKS("alltoallw", MPI_Alltoallw, MPI_Ialltoallw, xs, &three, &w_from, ints, z, &three, &zero,
                ints, MPI_COMM_SELF);
    for (int i = 0; i < 6; i++) z[i] = -1;
    RUN(MPI_Alltoallv, MPI_Ialltoallv, x, &two_n, &zero, MPI_INT, z, &two_n, &two_disp, MPI_INT,
        MPI_COMM_SELF);
    RUN(MPI_Alltoallw, MPI_Ialltoallw, xs, &two_n, &w_from, ints, z, &two_n, &w_to, ints,
        MPI_COMM_SELF);
    CHECK(z[0] == -1 && z[1] == -1 && z[2] == rank && z[3] == 1 && z[4] == -1,
          "self alltoallv/w at displacements: %d %d %d %d %d", z[0], z[1], z[2], z[3], z[4]);
    /* reduce_scatter's one count is the process's. */
    SELF_BLOCKS("reduce_scatter", MPI_Reduce_scatter, MPI_Ireduce_scatter, x, z, &three, MPI_INT,
                MPI_SUM, MPI_COMM_SELF);
    /* A strided send type (packed), received as one contiguous block. */
    int spread[6] = {rank, -7, 1, -7, 2, -7};
    MPI_Datatype every_other, three_ints;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_contiguous(3, MPI_INT, &three_ints);
    MPI_Type_commit(&three_ints);
    SELF_BLOCKS("strided gather", MPI_Gather, MPI_Igather, spread, 1, every_other, z, 1, three_ints, 0,
                MPI_COMM_SELF);
    SELF_BLOCKS("strided allgather", MPI_Allgather, MPI_Iallgather, spread, 1, every_other, z, 3, MPI_INT,
                MPI_COMM_SELF);
    /* In place: the receive buffer keeps what it holds. */
    for (int i = 0; i < 6; i++) z[i] = i == 0 ? rank : i < 3 ? i : -1;
    RUN(MPI_Gather, MPI_Igather, MPI_IN_PLACE, 3, MPI_INT, z, 3, MPI_INT, 0, MPI_COMM_SELF);
    RUN(MPI_Allgather, MPI_Iallgather, MPI_IN_PLACE, 3, MPI_INT, z, 3, MPI_INT, MPI_COMM_SELF);
    RUN(MPI_Scatter, MPI_Iscatter, z, 3, MPI_INT, MPI_IN_PLACE, 3, MPI_INT, 0, MPI_COMM_SELF);
    RUN(MPI_Gatherv, MPI_Igatherv, MPI_IN_PLACE, 3, MPI_INT, z, &three, &zero, MPI_INT, 0, MPI_COMM_SELF);
    RUN(MPI_Alltoallv, MPI_Ialltoallv, MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, z, &three, &zero,
        MPI_INT, MPI_COMM_SELF);
    RUN(MPI_Alltoallw, MPI_Ialltoallw, MPI_IN_PLACE, NULL, NULL, NULL, z, &three, &zero, ints,
        MPI_COMM_SELF);
    RUN(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_IN_PLACE, z, &three, MPI_INT, MPI_MAX,
        MPI_COMM_SELF);
    CHECK(z[0] == rank && z[1] == 1 && z[2] == 2 && z[3] == -1, "self in place");
    /* A strided send block of alltoallv, packed. */
    SELF_BLOCKS("strided alltoallv", MPI_Alltoallv, MPI_Ialltoallv, spread, &(int){1}, &zero, every_other,
                z, &three, &zero, MPI_INT, MPI_COMM_SELF);
#undef SELF_BLOCKS

    /* Arguments are still checked where nothing moves. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(class_of(MPI_Bcast(x, 3, MPI_INT, 1, MPI_COMM_SELF)) == MPI_ERR_ROOT, "self bcast root");
    CHECK(class_of(MPI_Reduce(d, e, 2, MPI_DOUBLE, MPI_SUM, -1, MPI_COMM_SELF)) == MPI_ERR_ROOT,
          "self reduce root");
    CHECK(class_of(MPI_Allreduce(x, y, 3, MPI_INT, MPI_OP_NULL, MPI_COMM_SELF)) == MPI_ERR_OP,
          "self allreduce op");
    CHECK(class_of(MPI_Allreduce(x, y, -1, MPI_INT, MPI_SUM, MPI_COMM_SELF)) == MPI_ERR_COUNT,
          "self allreduce count");
    CHECK(class_of(MPI_Reduce(d, NULL, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_SELF)) == MPI_ERR_BUFFER,
          "self reduce without a receive buffer");
    CHECK(class_of(MPI_Gather(x, 3, MPI_INT, z, 2, MPI_INT, 0, MPI_COMM_SELF)) == MPI_ERR_TRUNCATE,
          "self gather into a shorter block");
    CHECK(class_of(MPI_Scatter(x, 3, MPI_INT, z, 3, MPI_INT, 1, MPI_COMM_SELF)) == MPI_ERR_ROOT,
          "self scatter root");
    int two = 2;
    CHECK(class_of(MPI_Alltoall(x, 3, MPI_INT, z, 2, MPI_INT, MPI_COMM_SELF)) == MPI_ERR_TRUNCATE,
          "self alltoall into a shorter block");
    CHECK(class_of(MPI_Alltoallv(x, &three, &zero, MPI_INT, z, &two, &zero, MPI_INT, MPI_COMM_SELF)) ==
              MPI_ERR_TRUNCATE,
          "self alltoallv into a shorter block");
    CHECK(class_of(MPI_Alltoallw(x, &three, &zero, ints, z, &two, &zero, ints, MPI_COMM_SELF)) ==
              MPI_ERR_TRUNCATE,
          "self alltoallw into a shorter block");
    int minus = -1;
    CHECK(class_of(MPI_Reduce_scatter(x, z, &minus, MPI_INT, MPI_SUM, MPI_COMM_SELF)) == MPI_ERR_COUNT,
          "self reduce_scatter count");
    CHECK(class_of(MPI_Reduce_scatter(x, z, &three, MPI_INT, MPI_OP_NULL, MPI_COMM_SELF)) == MPI_ERR_OP,
          "self reduce_scatter op");
    CHECK(class_of(MPI_Allgather(x, -1, MPI_INT, z, 3, MPI_INT, MPI_COMM_SELF)) == MPI_ERR_COUNT,
          "self allgather count");
    MPI_Type_free(&every_other);
    MPI_Type_free(&three_ints);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

static void test_errors(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 1, y;
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(class_of(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD)) == MPI_ERR_ROOT, "bad root");
    CHECK(class_of(MPI_Bcast(&x, 1, MPI_INT, -1, MPI_COMM_WORLD)) == MPI_ERR_ROOT, "bad root");
    CHECK(class_of(MPI_Igather(&x, 1, MPI_INT, &y, 1, MPI_INT, size, MPI_COMM_WORLD, &r)) == MPI_ERR_ROOT,
          "bad root");
    CHECK(class_of(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, size + 3, MPI_COMM_WORLD)) == MPI_ERR_ROOT, "root");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD)) == MPI_ERR_OP, "op null");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD)) == MPI_ERR_OP, "replace");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_NO_OP, MPI_COMM_WORLD)) == MPI_ERR_OP, "no_op");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD)) == MPI_ERR_OP, "minloc int");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD)) == MPI_ERR_OP, "band double");
    CHECK(class_of(MPI_Iallreduce(&x, &y, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD, &r)) == MPI_ERR_OP, "sum byte");
    CHECK(class_of(MPI_Scan(&x, &y, 1, MPI_INT, (MPI_Op)0x98000123, MPI_COMM_WORLD)) == MPI_ERR_OP, "bad op");
    CHECK(class_of(MPI_Allreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_COUNT, "count");
    CHECK(class_of(MPI_Bcast(&x, -2, MPI_INT, 0, MPI_COMM_WORLD)) == MPI_ERR_COUNT, "count");
    CHECK(class_of(MPI_Allgather(&x, -1, MPI_INT, &y, 1, MPI_INT, MPI_COMM_WORLD)) == MPI_ERR_COUNT, "count");
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_TYPE, "type");
    CHECK(class_of(MPI_Ibcast(&x, 1, (MPI_Datatype)0x4c00ff77, 0, MPI_COMM_WORLD, &r)) == MPI_ERR_TYPE, "type");
    CHECK(class_of(MPI_Barrier(MPI_COMM_NULL)) == MPI_ERR_COMM, "comm");
    CHECK(r == MPI_REQUEST_NULL, "failed call made a request");
    CHECK(class_of(MPI_Reduce_local(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM)) == MPI_ERR_BUFFER, "in place");
    CHECK(class_of(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "in place");
    CHECK(class_of(MPI_Allreduce(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_BUFFER,
          "in place");
    CHECK(class_of(MPI_Alltoall(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD)) == MPI_ERR_BUFFER,
          "in place");
    CHECK(class_of(MPI_Allreduce(&x, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "alias");
    CHECK(class_of(MPI_Allreduce(NULL, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "null");
    CHECK(class_of(MPI_Allreduce(&x, NULL, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "null");
    CHECK(class_of(MPI_Allreduce(MPI_IN_PLACE, NULL, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_BUFFER,
          "null");
    /* Signatures that differ: the processes that receive from the root
     * learn of the truncation, and nobody waits forever. */
    for (int root = 0; root < size; root++) {
        int two[2] = {1, 2};
        int rc = MPI_Bcast(two, rank == root ? 2 : 1, MPI_INT, root, MPI_COMM_WORLD);
        int truncated = rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_TRUNCATE, any;
        CHECK(rc == MPI_SUCCESS || truncated, "truncated bcast: %d", rc);
        MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(any == (size > 1), "nobody saw the truncation");
    }
    /* A root whose own block is longer than its receive block: the root
     * learns of it, every block that fits arrives, and nobody hangs. */
    for (int root = 0; root < size; root++) {
        int three[3] = {rank, rank, rank}, *all = malloc(2 * (size_t)size * sizeof *all);
        int rc = MPI_Gather(three, rank == root ? 3 : 2, MPI_INT, all, 2, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root) {
            CHECK(class_of(rc) == MPI_ERR_TRUNCATE, "gather root's long block: %d", rc);
            for (int j = 0; j < size; j++)
                CHECK(all[2 * j] == j && all[2 * j + 1] == j, "gather block %d with a long root block", j);
        } else {
            CHECK(rc == MPI_SUCCESS, "gather to a root with a long block: %d", rc);
        }
        free(all);
    }
    /* Scatters whose root and readers disagree on the block length (on a
     * board, one side carries the blocks in a flag line and the other
     * expects them in a data buffer): nobody hangs, and where the root
     * sends more than the readers expect, one of them at least learns of
     * it (on messages, a tree's inner readers forward only what fits, so
     * its leaves may not; a reader sent less may not either). */
    for (int root = 0; root < size && size > 1; root++) {
        for (int longer_at_root = 0; longer_at_root < 2; longer_at_root++) {
            int root_n = longer_at_root ? 20 : 1, reader_n = longer_at_root ? 1 : 20;
            int *s = calloc(20 * (size_t)size, sizeof *s), r[20];
            int rc = rank == root ? MPI_Scatter(s, root_n, MPI_INT, r, root_n, MPI_INT, root, MPI_COMM_WORLD)
                                  : MPI_Scatter(NULL, 0, MPI_INT, r, reader_n, MPI_INT, root, MPI_COMM_WORLD);
            int truncated = rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_TRUNCATE, any;
            CHECK(rc == MPI_SUCCESS || truncated, "scatter of %d ints read as %d: %d", root_n, reader_n, rc);
            MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK(any || !longer_at_root, "nobody saw a scatter of %d ints read as %d", root_n, reader_n);
            free(s);
        }
    }
    /* Every process sends blocks longer than it receives: each learns of
     * it from its block to itself, blocking or not, and nobody hangs. */
    for (int nb = 0; nb < 2; nb++) {
        int *s3 = calloc(3 * (size_t)size, sizeof *s3), *r2 = calloc(2 * (size_t)size, sizeof *r2);
        MPI_Request q;
        int rc = nb ? MPI_Ialltoall(s3, 3, MPI_INT, r2, 2, MPI_INT, MPI_COMM_WORLD, &q)
                    : MPI_Alltoall(s3, 3, MPI_INT, r2, 2, MPI_INT, MPI_COMM_WORLD);
        if (nb && rc == MPI_SUCCESS)
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(class_of(rc) == MPI_ERR_TRUNCATE, "alltoall with long blocks (nonblocking %d): %d", nb, rc);
        free(s3), free(r2);
    }
    MPI_Op op = MPI_SUM;
    CHECK(class_of(MPI_Op_free(&op)) == MPI_ERR_OP, "free predefined op");
    /* Failed calls did not count: collectives still match up. */
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == size, "after errors %d", y);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 processes");
    a = malloc(BIG * sizeof *a);
    b = malloc(BIG * sizeof *b);
    c = malloc(BIG * sizeof *c);
    for (nb = 0; nb < 2; nb++) {
        RUN(MPI_Barrier, MPI_Ibarrier, MPI_COMM_WORLD);
        test_bcast();
        test_reduce();
        test_allreduce();
        test_loc();
        test_gather_scatter();
        test_allgather();
        test_alltoall();
        test_reduce_scatter();
        test_scan();
        test_user_ops();
        test_mixed_types();
        test_self();
    }
    test_reentrant_op();
    test_outstanding();
    test_errors();
    free(a), free(b), free(c);
    MPI_Finalize();
    printf("colls: rank %d ok\n", rank);
    return 0;
}
