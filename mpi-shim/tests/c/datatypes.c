/* Derived datatypes (MPI-4.0 chapter 5): every constructor used for
 * sends and receives around a ring (non-contiguous on both sides, with
 * different type maps of one signature; MPI_BOTTOM with absolute
 * addresses; a message large enough for the rendezvous protocol), bounds
 * and extents, envelopes and contents, Pack/Unpack (native and
 * external32), Get_elements on a partial receive, the large-count (_c)
 * forms and MPI_Type_get_value_index, and the error classes of bad
 * arguments under MPI_ERRORS_RETURN. */
#include <stddef.h>
#include <string.h>
#include "check.h"

static int rank, size, next, prev;

/* Send `scount` of `stype` from `sbuf` to the next rank while receiving
 * `rcount` of `rtype` into `rbuf` from the previous one. */
static void ring(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Status *st) {
    OK(MPI_Sendrecv(sbuf, scount, stype, next, 7, rbuf, rcount, rtype, prev, 7,
                    MPI_COMM_WORLD, st));
}

static void check_extent(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, int sz,
                         const char *what) {
    MPI_Aint l, e;
    int s;
    OK(MPI_Type_get_extent(t, &l, &e));
    OK(MPI_Type_size(t, &s));
    CHECK(l == lb && e == extent && s == sz, "%s: lb %ld extent %ld size %d", what,
          (long)l, (long)e, s);
}

static void predefined(void) {
    check_extent(MPI_DOUBLE_INT, 0, 16, 12, "MPI_DOUBLE_INT");
    check_extent(MPI_SHORT_INT, 0, 8, 6, "MPI_SHORT_INT");
    check_extent(MPI_FLOAT_INT, 0, 8, 8, "MPI_FLOAT_INT");
    check_extent(MPI_LONG_INT, 0, 16, 12, "MPI_LONG_INT");
    check_extent(MPI_LONG_DOUBLE_INT, 0, 32, 20, "MPI_LONG_DOUBLE_INT");
    check_extent(MPI_2INT, 0, 8, 8, "MPI_2INT");
    check_extent(MPI_C_DOUBLE_COMPLEX, 0, 16, 16, "MPI_C_DOUBLE_COMPLEX");
    check_extent(MPI_C_FLOAT_COMPLEX, 0, 8, 8, "MPI_C_FLOAT_COMPLEX");
    char name[MPI_MAX_OBJECT_NAME];
    int len, ni, na, nd, comb;
    OK(MPI_Type_get_name(MPI_INT, name, &len));
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7, "name %s", name);
    OK(MPI_Type_get_envelope(MPI_DOUBLE, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "named envelope");
    /* Any predefined type of the class and size will do. */
    MPI_Datatype m;
    int msize;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    OK(MPI_Type_size(m, &msize));
    CHECK(msize == 8, "match_size real 8: %d", msize);
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    OK(MPI_Type_size(m, &msize));
    CHECK(msize == 4, "match_size integer 4: %d", msize);
    /* Fortran 90 kinds by precision and range. */
    OK(MPI_Type_create_f90_integer(5, &m));
    OK(MPI_Type_size(m, &msize));
    CHECK(msize == 4, "f90 integer of 5 digits: %d bytes", msize);
    /* A parameterized type: predefined (one handle per arguments, never
     * freed), its combiner and contents the arguments (MPI-4.1 §19.1.9). */
    int fi[2] = {0, 0}, fni, fna, fnd, fcomb;
    OK(MPI_Type_get_envelope(m, &fni, &fna, &fnd, &fcomb));
    OK(MPI_Type_get_contents(m, 2, 0, 0, fi, NULL, NULL));
    CHECK(fcomb == MPI_COMBINER_F90_INTEGER && fni == 1 && fna == 0 && fnd == 0 && fi[0] == 5,
          "f90 integer envelope %d %d %d %d, r %d", fcomb, fni, fna, fnd, fi[0]);
    MPI_Datatype again;
    OK(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &m));
    OK(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &again));
    OK(MPI_Type_size(m, &msize));
    CHECK(m == again && msize == 8, "f90 real of precision 10: %d bytes", msize);
    OK(MPI_Type_get_envelope(m, &fni, &fna, &fnd, &fcomb));
    OK(MPI_Type_get_contents(m, 2, 0, 0, fi, NULL, NULL));
    CHECK(fcomb == MPI_COMBINER_F90_REAL && fni == 2 && fi[0] == 10 && fi[1] == MPI_UNDEFINED,
          "f90 real envelope %d %d, p %d r %d", fcomb, fni, fi[0], fi[1]);
    OK(MPI_Type_create_f90_complex(6, 37, &m));
    OK(MPI_Type_size(m, &msize));
    CHECK(msize == 8, "f90 complex of precision 6: %d bytes", msize);
    OK(MPI_Type_get_envelope(m, &fni, &fna, &fnd, &fcomb));
    CHECK(fcomb == MPI_COMBINER_F90_COMPLEX && fni == 2, "f90 complex envelope %d %d", fcomb, fni);
    /* A pair type travels with its padding skipped. */
    struct { double d; int i; } out[3], in[3];
    for (int k = 0; k < 3; k++) out[k].d = rank + k * 0.5, out[k].i = rank * 10 + k;
    MPI_Status st;
    ring(out, 3, MPI_DOUBLE_INT, in, 3, MPI_DOUBLE_INT, &st);
    int n;
    OK(MPI_Get_count(&st, MPI_DOUBLE_INT, &n));
    CHECK(n == 3, "double_int count %d", n);
    OK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &n));
    CHECK(n == 6, "double_int elements %d", n);
    for (int k = 0; k < 3; k++)
        CHECK(in[k].d == prev + k * 0.5 && in[k].i == prev * 10 + k, "double_int %d", k);
}

/* contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block: sent non-contiguous, received through another type map
 * of the same signature. */
static void simple_constructors(void) {
    enum { N = 12 };
    int a[N * 3], b[N * 3];
    for (int i = 0; i < N * 3; i++) a[i] = rank * 1000 + i;
    MPI_Status st;

    /* Every third int, received as every second int. */
    MPI_Datatype v3, v2;
    OK(MPI_Type_vector(N, 1, 3, MPI_INT, &v3));
    OK(MPI_Type_create_hvector(N, 1, 2 * sizeof(int), MPI_INT, &v2));
    OK(MPI_Type_commit(&v3));
    OK(MPI_Type_commit(&v2));
    check_extent(v3, 0, (3 * (N - 1) + 1) * sizeof(int), N * sizeof(int), "vector");
    memset(b, 0xff, sizeof b);
    ring(a, 1, v3, b, 1, v2, &st);
    for (int i = 0; i < N; i++)
        CHECK(b[2 * i] == prev * 1000 + 3 * i, "vector->hvector %d: %d", i, b[2 * i]);
    CHECK(b[1] == -1, "hvector gap written");

    /* contiguous(4) of a 2-block vector: received as plain ints. */
    MPI_Datatype pair, four;
    OK(MPI_Type_vector(2, 2, 5, MPI_INT, &pair));
    OK(MPI_Type_contiguous(2, pair, &four));
    OK(MPI_Type_commit(&four));
    check_extent(four, 0, 14 * sizeof(int), 8 * sizeof(int), "contiguous of vector");
    ring(a, 1, four, b, 8, MPI_INT, &st);
    int expect[8] = {0, 1, 5, 6, 7, 8, 12, 13};
    for (int i = 0; i < 8; i++)
        CHECK(b[i] == prev * 1000 + expect[i], "contiguous of vector %d: %d", i, b[i]);

    /* indexed out, hindexed in. */
    int bl[3] = {2, 1, 3}, disp[3] = {10, 0, 4};
    MPI_Aint hdisp[3] = {0, 3 * sizeof(int), 20 * sizeof(int)};
    MPI_Datatype ix, hx;
    OK(MPI_Type_indexed(3, bl, disp, MPI_INT, &ix));
    OK(MPI_Type_create_hindexed(3, bl, hdisp, MPI_INT, &hx));
    OK(MPI_Type_commit(&ix));
    OK(MPI_Type_commit(&hx));
    check_extent(ix, 0, 12 * sizeof(int), 6 * sizeof(int), "indexed");
    memset(b, 0xff, sizeof b);
    ring(a, 1, ix, b, 1, hx, &st);
    int got[6] = {b[0], b[1], b[3], b[20], b[21], b[22]};
    int sent[6] = {10, 11, 0, 4, 5, 6};
    for (int i = 0; i < 6; i++)
        CHECK(got[i] == prev * 1000 + sent[i], "indexed->hindexed %d: %d", i, got[i]);

    /* indexed_block out, hindexed_block in. */
    int bdisp[3] = {7, 1, 4};
    MPI_Aint hbdisp[3] = {0, 8 * sizeof(int), 4 * sizeof(int)};
    MPI_Datatype ib, hb;
    OK(MPI_Type_create_indexed_block(3, 2, bdisp, MPI_INT, &ib));
    OK(MPI_Type_create_hindexed_block(3, 2, hbdisp, MPI_INT, &hb));
    OK(MPI_Type_commit(&ib));
    OK(MPI_Type_commit(&hb));
    memset(b, 0xff, sizeof b);
    ring(a, 1, ib, b, 1, hb, &st);
    int gb[6] = {b[0], b[1], b[8], b[9], b[4], b[5]}, sb[6] = {7, 8, 1, 2, 4, 5};
    for (int i = 0; i < 6; i++)
        CHECK(gb[i] == prev * 1000 + sb[i], "indexed_block->hindexed_block %d", i);

    OK(MPI_Type_free(&v3));
    CHECK(v3 == MPI_DATATYPE_NULL, "freed handle not reset");
    MPI_Datatype all[] = {v2, pair, four, ix, hx, ib, hb};
    for (int i = 0; i < 7; i++) OK(MPI_Type_free(&all[i]));
}

struct rec {
    char c;
    double d;
    int i[2];
};

static MPI_Datatype rec_type(void) {
    int bl[3] = {1, 1, 2};
    MPI_Aint disp[3] = {offsetof(struct rec, c), offsetof(struct rec, d),
                        offsetof(struct rec, i)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, t;
    OK(MPI_Type_create_struct(3, bl, disp, types, &t));
    return t;
}

/* struct (padded to the C struct), resized, dup; envelopes and contents. */
static void struct_resized_dup(void) {
    MPI_Datatype t = rec_type(), d, r;
    OK(MPI_Type_commit(&t));
    check_extent(t, 0, sizeof(struct rec), 1 + 8 + 8, "struct");
    MPI_Aint tlb, text;
    OK(MPI_Type_get_true_extent(t, &tlb, &text));
    CHECK(tlb == 0 && text == offsetof(struct rec, i) + 8, "true extent %ld", (long)text);
    struct rec out[4], in[4];
    memset(in, 0, sizeof in);
    for (int k = 0; k < 4; k++) {
        out[k].c = 'a' + k;
        out[k].d = rank * 0.25 + k;
        out[k].i[0] = rank;
        out[k].i[1] = -k;
    }
    MPI_Status st;
    OK(MPI_Type_dup(t, &d));
    ring(out, 4, t, in, 4, d, &st);
    for (int k = 0; k < 4; k++)
        CHECK(in[k].c == 'a' + k && in[k].d == prev * 0.25 + k && in[k].i[0] == prev &&
                  in[k].i[1] == -k,
              "struct element %d", k);

    /* Padding as MPICH does it: a struct of several datatypes is rounded
     * to its strictest alignment, one of a single datatype is not. */
    {
        int b1[2] = {1, 1};
        MPI_Aint d4[2] = {0, 4}, d5[2] = {0, 5};
        MPI_Datatype ic[2] = {MPI_INT, MPI_CHAR}, ii[2] = {MPI_INT, MPI_INT}, p;
        OK(MPI_Type_create_struct(2, b1, d4, ic, &p));
        check_extent(p, 0, 8, 5, "struct {int; char}");
        OK(MPI_Type_free(&p));
        OK(MPI_Type_create_struct(2, b1, d5, ii, &p));
        check_extent(p, 0, 9, 8, "struct {int; int at 5}");
        OK(MPI_Type_free(&p));
    }

    /* Every other int through a resized int. */
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &r));
    OK(MPI_Type_commit(&r));
    check_extent(r, 0, 2 * sizeof(int), sizeof(int), "resized");
    int a[8], b[4];
    for (int i = 0; i < 8; i++) a[i] = rank * 100 + i;
    ring(a, 4, r, b, 4, MPI_INT, &st);
    for (int i = 0; i < 4; i++) CHECK(b[i] == prev * 100 + 2 * i, "resized %d", i);

    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_STRUCT && ni == 4 && na == 3 && nd == 3, "struct envelope");
    int ints[4];
    MPI_Aint addrs[3];
    MPI_Datatype types[3];
    OK(MPI_Type_get_contents(t, 4, 3, 3, ints, addrs, types));
    CHECK(ints[0] == 3 && ints[3] == 2 && addrs[1] == offsetof(struct rec, d) &&
              types[0] == MPI_CHAR && types[2] == MPI_INT,
          "struct contents");
    OK(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DUP && ni == 0 && na == 0 && nd == 1, "dup envelope");
    MPI_Datatype inner;
    OK(MPI_Type_get_contents(d, 0, 0, 1, NULL, NULL, &inner));
    OK(MPI_Type_get_envelope(inner, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_STRUCT, "dup's constituent is the struct");
    OK(MPI_Type_free(&inner));
    OK(MPI_Type_get_envelope(r, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_RESIZED && na == 2 && nd == 1, "resized envelope");
    OK(MPI_Type_get_contents(r, 0, 2, 1, NULL, addrs, types));
    CHECK(addrs[0] == 0 && addrs[1] == 2 * sizeof(int) && types[0] == MPI_INT,
          "resized contents");

    OK(MPI_Type_set_name(t, "record"));
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Type_get_name(t, name, &len));
    CHECK(strcmp(name, "record") == 0 && len == 6, "type name %s", name);
    /* Predefined types may be renamed too. */
    OK(MPI_Type_set_name(MPI_FLOAT, "single"));
    OK(MPI_Type_get_name(MPI_FLOAT, name, &len));
    CHECK(strcmp(name, "single") == 0, "renamed MPI_FLOAT: %s", name);
    OK(MPI_Type_set_name(MPI_FLOAT, "MPI_FLOAT"));
    OK(MPI_Type_free(&t));
    OK(MPI_Type_free(&d));
    OK(MPI_Type_free(&r));
}

/* A 2-D subarray in C and Fortran order; a block-cyclic darray. */
static void arrays(void) {
    enum { R = 6, C = 7 };
    double m[R][C], col[R * C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) m[i][j] = rank * 100 + i * 10 + j;
    int sizes[2] = {R, C}, sub[2] = {3, 2}, starts[2] = {2, 4};
    MPI_Datatype s, f;
    OK(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &s));
    OK(MPI_Type_commit(&s));
    check_extent(s, 0, R * C * sizeof(double), 6 * sizeof(double), "subarray");
    MPI_Status st;
    ring(m, 1, s, col, 6, MPI_DOUBLE, &st);
    for (int k = 0; k < 6; k++)
        CHECK(col[k] == prev * 100 + (2 + k / 2) * 10 + 4 + k % 2, "subarray C %d: %g", k,
              col[k]);
    /* The same memory seen as a Fortran array of C x R: rows are columns. */
    int fsizes[2] = {C, R}, fsub[2] = {2, 3}, fstarts[2] = {4, 2};
    OK(MPI_Type_create_subarray(2, fsizes, fsub, fstarts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &f));
    OK(MPI_Type_commit(&f));
    double back[R][C];
    memset(back, 0, sizeof back);
    ring(m, 1, s, back, 1, f, &st);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int in = i >= 2 && i < 5 && j >= 4 && j < 6;
            CHECK(back[i][j] == (in ? prev * 100 + i * 10 + j : 0), "subarray F (%d,%d)", i,
                  j);
        }
    int ints[8], ni, na, nd, comb;
    MPI_Datatype old;
    OK(MPI_Type_get_envelope(f, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && nd == 1, "subarray envelope");
    OK(MPI_Type_get_contents(f, 8, 0, 1, ints, NULL, &old));
    CHECK(ints[0] == 2 && ints[1] == C && ints[7] == MPI_ORDER_FORTRAN && old == MPI_DOUBLE,
          "subarray contents");

    /* A global vector of 50 ints, cyclic(3) over the processes. */
    enum { G = 50 };
    int gsize = G, distrib = MPI_DISTRIBUTE_CYCLIC, darg = 3, psize = size;
    int global[G], packed[G], pos = 0, n = 0;
    for (int i = 0; i < G; i++) global[i] = i;
    MPI_Datatype d;
    OK(MPI_Type_create_darray(size, rank, 1, &gsize, &distrib, &darg, &psize, MPI_ORDER_C,
                              MPI_INT, &d));
    OK(MPI_Type_commit(&d));
    int dsize;
    OK(MPI_Type_size(d, &dsize));
    OK(MPI_Pack(global, 1, d, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == dsize, "darray packed %d of %d bytes", pos, dsize);
    for (int i = 0; i < G; i++)
        if ((i / 3) % size == rank) {
            CHECK(packed[n] == i, "darray element %d: %d, expected %d", n, packed[n], i);
            n++;
        }
    CHECK(n * (int)sizeof(int) == dsize, "darray owns %d elements, size %d", n, dsize);
    /* Sent from the global array: the next rank gets our elements. */
    int from_prev[G], got = 0, k = 0;
    ring(global, 1, d, from_prev, G, MPI_INT, &st);
    OK(MPI_Get_count(&st, MPI_INT, &got));
    for (int i = 0; i < G; i++)
        if ((i / 3) % size == prev) {
            CHECK(k < got && from_prev[k] == i, "darray from %d: element %d", prev, k);
            k++;
        }
    CHECK(k == got, "darray from %d: %d elements, expected %d", prev, got, k);
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(d, &lb, &ext));
    CHECK(lb == 0 && ext == G * sizeof(int), "darray extent");

    /* Two dimensions, block x block over a size x 1 grid. */
    int gs2[2] = {8, 4}, di2[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
        da2[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps2[2] = {size, 1};
    MPI_Datatype d2;
    OK(MPI_Type_create_darray(size, rank, 2, gs2, di2, da2, ps2, MPI_ORDER_C, MPI_INT, &d2));
    OK(MPI_Type_commit(&d2));
    int rows = (8 + size - 1) / size, first = rank * rows;
    int mine = first >= 8 ? 0 : (first + rows > 8 ? 8 - first : rows);
    OK(MPI_Type_size(d2, &dsize));
    CHECK(dsize == mine * 4 * (int)sizeof(int), "2-D darray size %d", dsize);
    int g2[32], p2[32];
    for (int i = 0; i < 32; i++) g2[i] = i;
    pos = 0;
    OK(MPI_Pack(g2, 1, d2, p2, sizeof p2, &pos, MPI_COMM_WORLD));
    for (int k = 0; k < mine * 4; k++) CHECK(p2[k] == first * 4 + k, "2-D darray %d", k);

    OK(MPI_Type_free(&s));
    OK(MPI_Type_free(&f));
    OK(MPI_Type_free(&d));
    OK(MPI_Type_free(&d2));
}

/* Absolute addresses from MPI_Get_address, sent and received at
 * MPI_BOTTOM. */
static void bottom(void) {
    int x = rank + 1, rx = -1;
    double y[3] = {rank * 1.5, 2, 3}, ry[3] = {0};
    MPI_Aint ax, ay;
    OK(MPI_Get_address(&x, &ax));
    OK(MPI_Get_address(&y[0], &ay));
    CHECK(MPI_Aint_diff(MPI_Aint_add(ax, 16), ax) == 16, "Aint arithmetic");
    int bl[2] = {1, 3};
    MPI_Aint disp[2] = {ax, ay};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, out, in;
    OK(MPI_Type_create_struct(2, bl, disp, types, &out));
    OK(MPI_Type_commit(&out));
    /* Received in the opposite order of the variables in memory. */
    MPI_Aint rdisp[2];
    OK(MPI_Get_address(&rx, &rdisp[0]));
    OK(MPI_Get_address(ry, &rdisp[1]));
    OK(MPI_Type_create_struct(2, bl, rdisp, types, &in));
    OK(MPI_Type_commit(&in));
    MPI_Status st;
    ring(MPI_BOTTOM, 1, out, MPI_BOTTOM, 1, in, &st);
    CHECK(rx == prev + 1 && ry[0] == prev * 1.5 && ry[2] == 3, "MPI_BOTTOM receive");
    /* Nonblocking, and against a contiguous buffer on the other side. */
    struct { int i; double d[3]; } plain;
    MPI_Request rq[2];
    OK(MPI_Irecv(&plain.i, 1, MPI_INT, prev, 8, MPI_COMM_WORLD, &rq[0]));
    MPI_Datatype tail;
    OK(MPI_Type_contiguous(1, out, &tail));
    OK(MPI_Type_commit(&tail));
    OK(MPI_Isend(MPI_BOTTOM, 1, tail, next, 9, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Send(&x, 1, MPI_INT, next, 8, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    OK(MPI_Recv(MPI_BOTTOM, 1, in, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    CHECK(plain.i == prev + 1 && rx == prev + 1 && ry[1] == 2, "MPI_BOTTOM nonblocking");
    OK(MPI_Type_free(&out));
    OK(MPI_Type_free(&in));
    OK(MPI_Type_free(&tail));
}

/* More than 1 MiB, non-contiguous on both sides (rendezvous protocol). */
static void large(void) {
    enum { N = 200000 };
    double *a = malloc(sizeof(double) * 2 * N), *b = malloc(sizeof(double) * 3 * N);
    for (int i = 0; i < 2 * N; i++) a[i] = rank * 1e7 + i;
    for (int i = 0; i < 3 * N; i++) b[i] = -1;
    MPI_Datatype s2, s3;
    OK(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &s2));
    OK(MPI_Type_vector(N / 2, 2, 6, MPI_DOUBLE, &s3));
    OK(MPI_Type_commit(&s2));
    OK(MPI_Type_commit(&s3));
    MPI_Status st;
    MPI_Request rq;
    OK(MPI_Irecv(b, 1, s3, prev, 3, MPI_COMM_WORLD, &rq));
    OK(MPI_Send(a, 1, s2, next, 3, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq, &st));
    int n;
    OK(MPI_Get_count(&st, s3, &n));
    CHECK(n == 1, "large count %d", n);
    for (int k = 0; k < N; k++) {
        double want = prev * 1e7 + 2 * k, got = b[(k / 2) * 6 + k % 2];
        CHECK(got == want, "large element %d: %g, expected %g", k, got, want);
    }
    CHECK(b[2] == -1 && b[3 * N - 1] == -1, "large gaps written");
    OK(MPI_Type_free(&s2));
    OK(MPI_Type_free(&s3));
    free(a);
    free(b);
}

/* Fill `n` doubles with values of (rank, index); -1 stands for "unset". */
static double *doubles(size_t n, int who) {
    double *v = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) v[i] = who < 0 ? -1 : who * 1e7 + i;
    return v;
}

/* Element `k` of `count` x vector(blocks, bl, stride) sits at this index. */
static size_t vec_index(size_t k, int bl, int stride) {
    return (k / bl) * stride + k % bl;
}

/* Messages a process sends itself, with the blocks of a stencil's face
 * (64 rows of 512 bytes, 32 KiB): a posted receive of another split takes
 * them piece to piece, standard and synchronous; a receive posted after
 * the send; a receive too short for them. */
static void to_self(void) {
    enum { ROWS = 64, ROW = 64, N = ROWS * ROW };
    MPI_Datatype face, halves, half_face;
    OK(MPI_Type_vector(ROWS, ROW, ROW + 2, MPI_DOUBLE, &face));
    OK(MPI_Type_vector(2 * ROWS, ROW / 2, ROW / 2 + 3, MPI_DOUBLE, &halves));
    OK(MPI_Type_vector(ROWS / 2, ROW, ROW + 2, MPI_DOUBLE, &half_face));
    OK(MPI_Type_commit(&face));
    OK(MPI_Type_commit(&halves));
    OK(MPI_Type_commit(&half_face));
    double *a = doubles(2 * N, rank);
    MPI_Request rq[2];
    MPI_Status st;
    for (int mode = 0; mode < 3; mode++) {
        double *b = doubles(2 * N, -1);
        if (mode < 2) { /* posted first: standard, then synchronous */
            OK(MPI_Irecv(b, 1, halves, 0, mode, MPI_COMM_SELF, &rq[0]));
            if (mode == 0)
                OK(MPI_Isend(a, 1, face, 0, mode, MPI_COMM_SELF, &rq[1]));
            else
                OK(MPI_Issend(a, 1, face, 0, mode, MPI_COMM_SELF, &rq[1]));
        } else { /* the send first */
            OK(MPI_Isend(a, 1, face, 0, mode, MPI_COMM_SELF, &rq[1]));
            OK(MPI_Irecv(b, 1, halves, 0, mode, MPI_COMM_SELF, &rq[0]));
        }
        OK(MPI_Wait(&rq[0], &st));
        OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        int n;
        OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
        CHECK(n == N, "to self (mode %d): count %d", mode, n);
        for (size_t k = 0; k < N; k++) {
            size_t at = vec_index(k, ROW / 2, ROW / 2 + 3);
            CHECK(b[at] == rank * 1e7 + vec_index(k, ROW, ROW + 2),
                  "to self (mode %d) element %zu: %g", mode, k, b[at]);
        }
        CHECK(b[ROW / 2] == -1 && b[ROW / 2 + 2] == -1, "to self (mode %d): gap written", mode);
        free(b);
    }
    double *b = doubles(2 * N, -1);
    OK(MPI_Irecv(b, 1, half_face, 0, 9, MPI_COMM_SELF, &rq[0]));
    OK(MPI_Isend(a, 1, face, 0, 9, MPI_COMM_SELF, &rq[1]));
    EXPECT(MPI_Wait(&rq[0], &st), MPI_ERR_TRUNCATE);
    OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    for (size_t k = 0; k < N / 2; k++) {
        size_t at = vec_index(k, ROW, ROW + 2);
        CHECK(b[at] == a[at], "truncated to self element %zu: %g", k, b[at]);
    }
    CHECK(b[(ROWS / 2) * (ROW + 2)] == -1, "truncated to self: wrote past the buffer");
    free(a);
    free(b);
    MPI_Type_free(&face);
    MPI_Type_free(&halves);
    MPI_Type_free(&half_face);
}

/* Vectors of blocks large enough to be moved piece by piece rather than
 * packed (on one side or both, depending on block size and transport)
 * against a contiguous buffer, both ways, and against another vector:
 * eager and rendezvous sizes, a truncated receive, absolute addresses. */
static void large_blocks(void) {
    enum { N = 250000 }; /* 2 MB of doubles */
    /* 125 doubles (1000 bytes) every 200; 500 (4000 bytes) every 600. */
    MPI_Datatype v1, v2, small;
    OK(MPI_Type_vector(N / 125, 125, 200, MPI_DOUBLE, &v1));
    OK(MPI_Type_vector(N / 500, 500, 600, MPI_DOUBLE, &v2));
    OK(MPI_Type_vector(4, 64, 100, MPI_DOUBLE, &small)); /* 2 KiB: eager */
    OK(MPI_Type_commit(&v1));
    OK(MPI_Type_commit(&v2));
    OK(MPI_Type_commit(&small));
    double *a = doubles(2 * N, rank), *b = doubles(2 * N, -1);
    MPI_Status st;
    int n;

    /* Vector -> contiguous. */
    ring(a, 1, v1, b, N, MPI_DOUBLE, &st);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    CHECK(n == N, "vector->contiguous count %d", n);
    for (size_t k = 0; k < N; k++)
        CHECK(b[k] == prev * 1e7 + vec_index(k, 125, 200),
              "vector->contiguous element %zu: %g", k, b[k]);
    CHECK(b[N] == -1, "vector->contiguous wrote past the message");

    /* Contiguous -> vector, nonblocking. */
    free(b);
    b = doubles(2 * N, -1);
    MPI_Request rq;
    OK(MPI_Irecv(b, 1, v2, prev, 4, MPI_COMM_WORLD, &rq));
    OK(MPI_Send(a, N, MPI_DOUBLE, next, 4, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq, &st));
    for (size_t k = 0; k < N; k++) {
        size_t at = vec_index(k, 500, 600);
        CHECK(b[at] == prev * 1e7 + k, "contiguous->vector element %zu: %g", k, b[at]);
    }
    for (size_t g = 500; g < 600; g++) CHECK(b[g] == -1, "contiguous->vector gap written");

    /* Vector -> another vector (different splits on the two sides), and
     * the eager-sized vector -> contiguous. */
    free(b);
    b = doubles(2 * N, -1);
    ring(a, 1, v1, b, 1, v2, &st);
    for (size_t k = 0; k < N; k++) {
        size_t at = vec_index(k, 500, 600);
        CHECK(b[at] == prev * 1e7 + vec_index(k, 125, 200),
              "vector->vector element %zu: %g", k, b[at]);
    }
    ring(a, 1, small, b, 256, MPI_DOUBLE, &st);
    for (size_t k = 0; k < 256; k++)
        CHECK(b[k] == prev * 1e7 + vec_index(k, 64, 100), "eager vector element %zu", k);

    /* Blocks of 16000 and 32000 bytes (moved piece by piece even where
     * the receiver reads the sender's memory), short and long gaps. */
    MPI_Datatype v3, v4;
    OK(MPI_Type_vector(100, 2000, 2100, MPI_DOUBLE, &v3));
    OK(MPI_Type_vector(50, 4000, 5000, MPI_DOUBLE, &v4));
    OK(MPI_Type_commit(&v3));
    OK(MPI_Type_commit(&v4));
    free(b);
    b = doubles(2 * N, -1);
    ring(a, 1, v3, b, 1, v4, &st);
    for (size_t k = 0; k < 200000; k++) {
        size_t at = vec_index(k, 4000, 5000);
        CHECK(b[at] == prev * 1e7 + vec_index(k, 2000, 2100),
              "large-block vector element %zu: %g", k, b[at]);
    }
    CHECK(b[4000] == -1 && b[4999] == -1, "large-block vector gap written");
    ring(a, 1, v4, b, 200000, MPI_DOUBLE, &st);
    for (size_t k = 0; k < 200000; k++)
        CHECK(b[k] == prev * 1e7 + vec_index(k, 4000, 5000),
              "large-block vector->contiguous element %zu: %g", k, b[k]);
    MPI_Type_free(&v3);
    MPI_Type_free(&v4);

    /* Truncated: a 2 MB message into half a vector's worth of elements
     * (the same vector with half the blocks). */
    MPI_Datatype half;
    OK(MPI_Type_vector(N / 1000, 500, 600, MPI_DOUBLE, &half));
    OK(MPI_Type_commit(&half));
    free(b);
    b = doubles(2 * N, -1);
    OK(MPI_Irecv(b, 1, half, prev, 5, MPI_COMM_WORLD, &rq));
    OK(MPI_Send(a, N, MPI_DOUBLE, next, 5, MPI_COMM_WORLD));
    EXPECT(MPI_Wait(&rq, &st), MPI_ERR_TRUNCATE);
    for (size_t k = 0; k < N / 2; k++) {
        size_t at = vec_index(k, 500, 600);
        CHECK(b[at] == prev * 1e7 + k, "truncated element %zu: %g", k, b[at]);
    }
    CHECK(b[(N / 1000) * 600] == -1, "truncated receive wrote past its buffer");

    /* MPI_BOTTOM: two large blocks at absolute addresses, both sides. */
    free(b);
    b = doubles(2 * N, -1);
    MPI_Aint d[2], rd[2];
    int bl[2] = {1000, 3000};
    OK(MPI_Get_address(&a[5000], &d[0]));
    OK(MPI_Get_address(&a[1000], &d[1]));
    OK(MPI_Get_address(&b[100000], &rd[0]));
    OK(MPI_Get_address(&b[0], &rd[1]));
    MPI_Datatype abs_out, abs_in;
    OK(MPI_Type_create_hindexed(2, bl, d, MPI_DOUBLE, &abs_out));
    OK(MPI_Type_create_hindexed(2, bl, rd, MPI_DOUBLE, &abs_in));
    OK(MPI_Type_commit(&abs_out));
    OK(MPI_Type_commit(&abs_in));
    ring(MPI_BOTTOM, 1, abs_out, MPI_BOTTOM, 1, abs_in, &st);
    for (size_t k = 0; k < 4000; k++) {
        size_t from = k < 1000 ? 5000 + k : 1000 + (k - 1000);
        size_t at = k < 1000 ? 100000 + k : k - 1000;
        CHECK(b[at] == prev * 1e7 + from, "MPI_BOTTOM element %zu: %g", k, b[at]);
    }
    CHECK(b[3000] == -1 && b[101000] == -1, "MPI_BOTTOM gaps written");

    MPI_Type_free(&v1);
    MPI_Type_free(&v2);
    MPI_Type_free(&small);
    MPI_Type_free(&half);
    MPI_Type_free(&abs_out);
    MPI_Type_free(&abs_in);
    free(a);
    free(b);
}

/* Pack/Unpack round trips, external32, Get_elements. */
static void packing(void) {
    char buf[256];
    int pos = 0, v[6] = {1, 2, 3, 4, 5, 6}, w[6] = {0}, k = 42, k2 = 0, sz;
    double d = 2.5, d2 = 0;
    MPI_Datatype odd;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &odd));
    OK(MPI_Type_commit(&odd));
    OK(MPI_Pack_size(1, odd, MPI_COMM_WORLD, &sz));
    CHECK(sz >= 3 * (int)sizeof(int), "pack size %d", sz);
    OK(MPI_Pack(&k, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    OK(MPI_Pack(v, 1, odd, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    OK(MPI_Pack(&d, 1, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 4 * (int)sizeof(int) + (int)sizeof(double), "packed %d bytes", pos);
    int end = pos;
    pos = 0;
    OK(MPI_Unpack(buf, end, &pos, &k2, 1, MPI_INT, MPI_COMM_WORLD));
    OK(MPI_Unpack(buf, end, &pos, w, 3, MPI_INT, MPI_COMM_WORLD));
    OK(MPI_Unpack(buf, end, &pos, &d2, 1, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK(k2 == 42 && w[0] == 1 && w[1] == 3 && w[2] == 5 && d2 == 2.5 && pos == end,
          "unpacked");
    /* Packed data travels as MPI_PACKED. */
    char rbuf[256];
    MPI_Status st;
    ring(buf, end, MPI_PACKED, rbuf, sizeof rbuf, MPI_PACKED, &st);
    pos = 0;
    memset(w, 0, sizeof w);
    OK(MPI_Unpack(rbuf, end, &pos, &k2, 1, MPI_INT, MPI_COMM_WORLD));
    OK(MPI_Unpack(rbuf, end, &pos, w, 1, odd, MPI_COMM_WORLD));
    CHECK(k2 == 42 && w[0] == 1 && w[2] == 3 && w[4] == 5 && w[1] == 0, "packed message");

    /* external32 is big-endian; `long` is 4 bytes there. */
    unsigned char ext[64];
    MPI_Aint epos = 0, esz;
    int word = 0x01020304;
    long lg = -3;
    OK(MPI_Pack_external_size("external32", 1, MPI_LONG, &esz));
    CHECK(esz == 4, "external32 long size %ld", (long)esz);
    OK(MPI_Pack_external("external32", &word, 1, MPI_INT, ext, sizeof ext, &epos));
    OK(MPI_Pack_external("external32", &lg, 1, MPI_LONG, ext, sizeof ext, &epos));
    OK(MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, ext, sizeof ext, &epos));
    CHECK(epos == 16 && ext[0] == 1 && ext[3] == 4 && ext[4] == 0xff && ext[7] == 0xfd &&
              ext[8] == 0x40,
          "external32 bytes");
    MPI_Aint rpos = 0;
    int word2 = 0;
    long lg2 = 0;
    OK(MPI_Unpack_external("external32", ext, epos, &rpos, &word2, 1, MPI_INT));
    OK(MPI_Unpack_external("external32", ext, epos, &rpos, &lg2, 1, MPI_LONG));
    OK(MPI_Unpack_external("external32", ext, epos, &rpos, &d2, 1, MPI_DOUBLE));
    CHECK(word2 == word && lg2 == -3 && d2 == 2.5 && rpos == epos, "external32 round trip");

    /* A partial receive: 3 ints into a type of 4. */
    MPI_Datatype four;
    OK(MPI_Type_contiguous(4, MPI_INT, &four));
    OK(MPI_Type_commit(&four));
    int n;
    ring(v, 3, MPI_INT, w, 1, four, &st);
    OK(MPI_Get_count(&st, four, &n));
    CHECK(n == MPI_UNDEFINED, "partial count %d", n);
    OK(MPI_Get_elements(&st, four, &n));
    CHECK(n == 3, "partial elements %d", n);
    MPI_Count nx;
    OK(MPI_Get_elements_x(&st, four, &nx));
    CHECK(nx == 3, "partial elements_x");
    /* Elements of a mixed struct, ending inside a basic element. */
    MPI_Datatype rec = rec_type();
    OK(MPI_Type_commit(&rec));
    OK(MPI_Status_set_elements(&st, rec, 5));
    OK(MPI_Get_elements(&st, rec, &n));
    CHECK(n == 5, "set_elements 5: %d", n);
    OK(MPI_Get_count(&st, rec, &n));
    CHECK(n == MPI_UNDEFINED, "count of 5 elements of a 4-element struct");
    OK(MPI_Status_set_elements_x(&st, rec, 8));
    OK(MPI_Get_count(&st, rec, &n));
    CHECK(n == 2, "count of 8 elements: %d", n);
    OK(MPI_Status_set_elements(&st, MPI_BYTE, 6));
    /* As MPICH counts: a predefined type only in whole elements, a
     * derived one in whole basic elements. */
    OK(MPI_Get_elements(&st, MPI_INT, &n));
    CHECK(n == MPI_UNDEFINED, "6 bytes of ints: %d elements", n);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == MPI_UNDEFINED, "count of 6 bytes of ints");
    OK(MPI_Get_elements(&st, four, &n));
    CHECK(n == 1, "6 bytes hold %d whole ints of a derived type", n);
    OK(MPI_Get_elements(&st, MPI_SHORT_INT, &n));
    CHECK(n == 2, "6 bytes hold %d basic elements of MPI_SHORT_INT", n);
    OK(MPI_Type_free(&rec));
    OK(MPI_Type_free(&odd));
    OK(MPI_Type_free(&four));
}

/* Reductions and broadcasts over a derived datatype of one basic kind. */
static void collectives(void) {
    int in[6], out[6] = {-1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 6; i++) in[i] = rank * 10 + i;
    MPI_Datatype odd;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &odd));
    OK(MPI_Type_commit(&odd));
    OK(MPI_Allreduce(in, out, 1, odd, MPI_SUM, MPI_COMM_WORLD));
    int ranks = size * (size - 1) / 2;
    for (int i = 0; i < 6; i += 2)
        CHECK(out[i] == ranks * 10 + size * i, "allreduce element %d: %d", i, out[i]);
    CHECK(out[1] == -1 && out[3] == -1, "allreduce wrote a gap");
    /* Mixed basic elements: no predefined operation applies. */
    MPI_Datatype mixed = rec_type();
    OK(MPI_Type_commit(&mixed));
    struct rec a[1] = {{0}}, b[1];
    EXPECT(MPI_Allreduce(a, b, 1, mixed, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    if (rank == 0) {
        a[0].c = 'q';
        a[0].d = 9.5;
        a[0].i[0] = 11;
        a[0].i[1] = 12;
    }
    OK(MPI_Bcast(a, 1, mixed, 0, MPI_COMM_WORLD));
    CHECK(a[0].c == 'q' && a[0].d == 9.5 && a[0].i[1] == 12, "bcast of a struct");
    OK(MPI_Type_free(&odd));
    OK(MPI_Type_free(&mixed));
}

/* MPI-4.1 functions, which MPICH 4.0's header (Debian's) does not
 * declare. */
#if defined(TESSEL_MPI) || MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define HAVE_MPI_4_1 1
#endif

/* The bytes one element of `t` packs from a buffer of distinct ints
 * (`t` committed, its data within the buffer). */
static int pack_one(MPI_Datatype t, char *out, int max) {
    int buf[256], pos = 0;
    for (int i = 0; i < 256; i++) buf[i] = 1000 + i;
    OK(MPI_Pack(buf + 64, 1, t, out, max, &pos, MPI_COMM_WORLD));
    return pos;
}

/* `big` (made by a _c constructor) has the layout of `small` (made by
 * the int one): bounds, size, and the data it selects. Both are freed. */
static void same_layout(MPI_Datatype big, MPI_Datatype small, const char *what) {
    MPI_Count lb, ext, tlb, text, sz;
    MPI_Aint l, e, tl, te;
    int s;
    OK(MPI_Type_get_extent_c(big, &lb, &ext));
    OK(MPI_Type_get_true_extent_c(big, &tlb, &text));
    OK(MPI_Type_size_c(big, &sz));
    OK(MPI_Type_get_extent(small, &l, &e));
    OK(MPI_Type_get_true_extent(small, &tl, &te));
    OK(MPI_Type_size(small, &s));
    CHECK(lb == l && ext == e && tlb == tl && text == te && sz == s,
          "%s: lb %lld/%ld extent %lld/%ld true %lld,%lld/%ld,%ld size %lld/%d", what,
          (long long)lb, (long)l, (long long)ext, (long)e, (long long)tlb, (long long)text,
          (long)tl, (long)te, (long long)sz, s);
    OK(MPI_Type_commit(&big));
    OK(MPI_Type_commit(&small));
    char a[1024], b[1024];
    int na = pack_one(big, a, sizeof a), nb = pack_one(small, b, sizeof b);
    CHECK(na == nb && memcmp(a, b, na) == 0, "%s: packs %d bytes, the int form %d", what, na,
          nb);
    OK(MPI_Type_free(&big));
    OK(MPI_Type_free(&small));
}

/* The envelope of a type made by a _c constructor from MPI_INT (`types`
 * null) or from `types`: its integers and large counts, no addresses;
 * the int forms of the queries refuse it. */
static void large_envelope(MPI_Datatype t, int combiner, int ni, const int *ints, int nl,
                           const MPI_Count *counts, int nd, const MPI_Datatype *types,
                           const char *what) {
    MPI_Count ci, ca, cl, cd;
    int c;
    OK(MPI_Type_get_envelope_c(t, &ci, &ca, &cl, &cd, &c));
    CHECK(c == combiner && ci == ni && ca == 0 && cl == nl && cd == nd,
          "%s envelope_c: combiner %d, %lld integers, %lld addresses, %lld large counts, "
          "%lld datatypes",
          what, c, (long long)ci, (long long)ca, (long long)cl, (long long)cd);
    int gi[16];
    MPI_Aint ga[1];
    MPI_Count gl[16];
    MPI_Datatype gd[4];
    OK(MPI_Type_get_contents_c(t, 16, 1, 16, 4, gi, ga, gl, gd));
    for (int i = 0; i < ni; i++)
        CHECK(gi[i] == ints[i], "%s contents_c integer %d: %d, expected %d", what, i, gi[i],
              ints[i]);
    for (int i = 0; i < nl; i++)
        CHECK(gl[i] == counts[i], "%s contents_c large count %d: %lld, expected %lld", what, i,
              (long long)gl[i], (long long)counts[i]);
    for (int i = 0; i < nd; i++)
        CHECK(gd[i] == (types ? types[i] : MPI_INT), "%s contents_c datatype %d", what, i);
    /* Too few entries for the large counts. */
    if (nl > 0)
        EXPECT(MPI_Type_get_contents_c(t, 16, 1, nl - 1, 4, gi, ga, gl, gd), MPI_ERR_ARG);
    /* Erroneous in the int forms, which cannot return large counts. */
    int i1, i2, i3, i4;
    EXPECT(MPI_Type_get_envelope(t, &i1, &i2, &i3, &i4), MPI_ERR_TYPE);
    EXPECT(MPI_Type_get_contents(t, 16, 1, 4, gi, ga, gd), MPI_ERR_TYPE);
}

/* The large-count forms of MPI-4.0 §5.1 (the _c functions): each
 * constructor lays out what its int form does and records its
 * MPI_Count arguments as large counts (MPI-4.1 §5.1.13); queries, packing
 * and element counts in MPI_Count; what the int forms report for values
 * beyond an int. */
static void large_counts(void) {
    MPI_Datatype big, small;
    MPI_Count one[1] = {5};
    OK(MPI_Type_contiguous_c(5, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_CONTIGUOUS, 0, NULL, 1, one, 1, NULL, "contiguous_c");
    OK(MPI_Type_contiguous(5, MPI_INT, &small));
    same_layout(big, small, "contiguous_c");

    MPI_Count vec[3] = {3, 2, 4};
    OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_VECTOR, 0, NULL, 3, vec, 1, NULL, "vector_c");
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &small));
    same_layout(big, small, "vector_c");

    MPI_Count hvec[3] = {3, 2, 20};
    OK(MPI_Type_create_hvector_c(3, 2, 20, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_HVECTOR, 0, NULL, 3, hvec, 1, NULL, "hvector_c");
    OK(MPI_Type_create_hvector(3, 2, 20, MPI_INT, &small));
    same_layout(big, small, "hvector_c");

    int ibl[3] = {2, 1, 3}, idisp[3] = {10, 0, 4};
    MPI_Count cbl[3] = {2, 1, 3}, cdisp[3] = {10, 0, 4};
    MPI_Count ix[7] = {3, 2, 1, 3, 10, 0, 4};
    OK(MPI_Type_indexed_c(3, cbl, cdisp, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_INDEXED, 0, NULL, 7, ix, 1, NULL, "indexed_c");
    OK(MPI_Type_indexed(3, ibl, idisp, MPI_INT, &small));
    same_layout(big, small, "indexed_c");

    MPI_Aint hdisp[3] = {0, 12, 80};
    MPI_Count chdisp[3] = {0, 12, 80}, hx[7] = {3, 2, 1, 3, 0, 12, 80};
    OK(MPI_Type_create_hindexed_c(3, cbl, chdisp, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_HINDEXED, 0, NULL, 7, hx, 1, NULL, "hindexed_c");
    OK(MPI_Type_create_hindexed(3, ibl, hdisp, MPI_INT, &small));
    same_layout(big, small, "hindexed_c");

    int bdisp[3] = {7, 1, 4};
    MPI_Count cbdisp[3] = {7, 1, 4}, ib[5] = {3, 2, 7, 1, 4};
    OK(MPI_Type_create_indexed_block_c(3, 2, cbdisp, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_INDEXED_BLOCK, 0, NULL, 5, ib, 1, NULL,
                   "indexed_block_c");
    OK(MPI_Type_create_indexed_block(3, 2, bdisp, MPI_INT, &small));
    same_layout(big, small, "indexed_block_c");

    MPI_Aint hbdisp[3] = {0, 32, 16};
    MPI_Count chbdisp[3] = {0, 32, 16}, hb[5] = {3, 2, 0, 32, 16};
    OK(MPI_Type_create_hindexed_block_c(3, 2, chbdisp, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_HINDEXED_BLOCK, 0, NULL, 5, hb, 1, NULL,
                   "hindexed_block_c");
    OK(MPI_Type_create_hindexed_block(3, 2, hbdisp, MPI_INT, &small));
    same_layout(big, small, "hindexed_block_c");

    int sbl[2] = {1, 2};
    MPI_Aint sdisp[2] = {0, 8};
    MPI_Count csbl[2] = {1, 2}, csdisp[2] = {0, 8}, st[5] = {2, 1, 2, 0, 8};
    MPI_Datatype stypes[2] = {MPI_CHAR, MPI_INT};
    OK(MPI_Type_create_struct_c(2, csbl, csdisp, stypes, &big));
    large_envelope(big, MPI_COMBINER_STRUCT, 0, NULL, 5, st, 2, stypes, "struct_c");
    OK(MPI_Type_create_struct(2, sbl, sdisp, stypes, &small));
    same_layout(big, small, "struct_c");

    int sizes[2] = {6, 7}, sub[2] = {3, 2}, starts[2] = {2, 4};
    MPI_Count csizes[2] = {6, 7}, csub[2] = {3, 2}, cstarts[2] = {2, 4};
    int sai[2] = {2, MPI_ORDER_FORTRAN};
    MPI_Count sa[6] = {6, 7, 3, 2, 2, 4};
    OK(MPI_Type_create_subarray_c(2, csizes, csub, cstarts, MPI_ORDER_FORTRAN, MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_SUBARRAY, 2, sai, 6, sa, 1, NULL, "subarray_c");
    OK(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &small));
    same_layout(big, small, "subarray_c");

    int gsize = 50, distrib = MPI_DISTRIBUTE_CYCLIC, darg = 3, psize = size;
    MPI_Count cgsize = 50;
    int dai[7] = {size, rank, 1, MPI_DISTRIBUTE_CYCLIC, 3, size, MPI_ORDER_C};
    OK(MPI_Type_create_darray_c(size, rank, 1, &cgsize, &distrib, &darg, &psize, MPI_ORDER_C,
                                MPI_INT, &big));
    large_envelope(big, MPI_COMBINER_DARRAY, 7, dai, 1, &cgsize, 1, NULL, "darray_c");
    OK(MPI_Type_create_darray(size, rank, 1, &gsize, &distrib, &darg, &psize, MPI_ORDER_C,
                              MPI_INT, &small));
    /* Two dimensions, with the default distribution argument. */
    {
        MPI_Datatype b2, s2;
        int gs2[2] = {8, 4}, di2[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE},
            da2[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps2[2] = {size, 1};
        MPI_Count cgs2[2] = {8, 4};
        int d2i[10] = {size, rank, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE,
                       MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, size, 1,
                       MPI_ORDER_FORTRAN};
        OK(MPI_Type_create_darray_c(size, rank, 2, cgs2, di2, da2, ps2, MPI_ORDER_FORTRAN,
                                    MPI_INT, &b2));
        large_envelope(b2, MPI_COMBINER_DARRAY, 10, d2i, 2, cgs2, 1, NULL, "2-D darray_c");
        OK(MPI_Type_create_darray(size, rank, 2, gs2, di2, da2, ps2, MPI_ORDER_FORTRAN,
                                  MPI_INT, &s2));
        /* 32 ints: the whole array lies in the packing buffer from 64. */
        same_layout(b2, s2, "2-D darray_c");
    }
    same_layout(big, small, "darray_c");

    MPI_Count rs[2] = {-4, 16};
    OK(MPI_Type_create_resized_c(MPI_INT, -4, 16, &big));
    large_envelope(big, MPI_COMBINER_RESIZED, 0, NULL, 2, rs, 1, NULL, "resized_c");
    OK(MPI_Type_create_resized(MPI_INT, -4, 16, &small));
    same_layout(big, small, "resized_c");

    /* A type of the int constructors: the _c queries give its integers
     * and addresses, and no large counts. */
    {
        MPI_Count ci, ca, cl, cd;
        int c, gi[4];
        MPI_Aint ga[2];
        MPI_Datatype gd[2];
        OK(MPI_Type_create_hvector(3, 2, 20, MPI_INT, &small));
        OK(MPI_Type_get_envelope_c(small, &ci, &ca, &cl, &cd, &c));
        CHECK(c == MPI_COMBINER_HVECTOR && ci == 2 && ca == 1 && cl == 0 && cd == 1,
              "hvector envelope_c");
        OK(MPI_Type_get_contents_c(small, 4, 2, 0, 2, gi, ga, NULL, gd));
        CHECK(gi[0] == 3 && gi[1] == 2 && ga[0] == 20 && gd[0] == MPI_INT, "hvector contents_c");
        OK(MPI_Type_free(&small));
        /* A predefined pair type comes back as itself. */
        OK(MPI_Type_contiguous_c(2, MPI_DOUBLE_INT, &big));
        OK(MPI_Type_get_contents_c(big, 0, 0, 1, 1, NULL, NULL, &cl, gd));
        CHECK(cl == 2 && gd[0] == MPI_DOUBLE_INT, "contents_c of a pair type's contiguous");
        OK(MPI_Type_free(&big));
        OK(MPI_Type_get_envelope_c(MPI_DOUBLE, &ci, &ca, &cl, &cd, &c));
        CHECK(c == MPI_COMBINER_NAMED && ci + ca + cl + cd == 0, "named envelope_c");
        /* A dup of a large type is described by the int forms. */
        MPI_Datatype d;
        int ni, na, nd;
        OK(MPI_Type_contiguous_c(5, MPI_INT, &big));
        OK(MPI_Type_dup(big, &d));
        OK(MPI_Type_get_envelope(d, &ni, &na, &nd, &c));
        CHECK(c == MPI_COMBINER_DUP && ni == 0 && na == 0 && nd == 1, "dup of a large type");
        OK(MPI_Type_free(&d));
        OK(MPI_Type_free(&big));
    }

    /* Sizes beyond an int: the int forms say MPI_UNDEFINED, or raise
     * MPI_ERR_VALUE_TOO_LARGE where they cannot (MPI_Pack_size). Large
     * types of one contiguous block cost nothing to build. */
    {
        const MPI_Count n = (MPI_Count)1 << 30;
        MPI_Count sz, lb, ext;
        MPI_Aint alb, aext;
        int s = 0;
        OK(MPI_Type_contiguous_c(n, MPI_DOUBLE, &big));
        OK(MPI_Type_commit(&big));
        OK(MPI_Type_size_c(big, &sz));
        OK(MPI_Type_size(big, &s));
        CHECK(sz == 8 * n && s == MPI_UNDEFINED, "size of 2^30 doubles: %lld, int form %d",
              (long long)sz, s);
        OK(MPI_Type_get_extent_c(big, &lb, &ext));
        OK(MPI_Type_get_extent(big, &alb, &aext));
        CHECK(lb == 0 && ext == 8 * n && aext == 8 * n, "extent of 2^30 doubles");
        OK(MPI_Pack_size_c(1, big, MPI_COMM_WORLD, &sz));
        CHECK(sz >= 8 * n, "pack_size_c of 2^30 doubles: %lld", (long long)sz);
        EXPECT(MPI_Pack_size(1, big, MPI_COMM_WORLD, &s), MPI_ERR_VALUE_TOO_LARGE);
        OK(MPI_Pack_size_c(n, MPI_DOUBLE, MPI_COMM_WORLD, &sz));
        CHECK(sz >= 8 * n, "pack_size_c of 2^30 doubles as a count");
        OK(MPI_Pack_external_size_c("external32", n, MPI_INT, &sz));
        CHECK(sz == 4 * n, "external32 size of 2^30 ints: %lld", (long long)sz);
        OK(MPI_Type_free(&big));
    }

    /* Pack_c / Unpack_c, with a position in MPI_Count. */
    {
        int v[12], w[12] = {0}, k = 7, k2 = 0;
        for (int i = 0; i < 12; i++) v[i] = rank * 100 + i;
        char buf[256];
        MPI_Count pos = 0, sz;
        OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &big));
        OK(MPI_Type_commit(&big));
        OK(MPI_Pack_size_c(1, big, MPI_COMM_WORLD, &sz));
        CHECK(sz >= 6 * (MPI_Count)sizeof(int), "pack_size_c %lld", (long long)sz);
        OK(MPI_Pack_c(&k, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        OK(MPI_Pack_c(v, 1, big, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK(pos == 7 * (MPI_Count)sizeof(int), "packed %lld bytes", (long long)pos);
        MPI_Count end = pos;
        pos = 0;
        OK(MPI_Unpack_c(buf, end, &pos, &k2, 1, MPI_INT, MPI_COMM_WORLD));
        OK(MPI_Unpack_c(buf, end, &pos, w, 1, big, MPI_COMM_WORLD));
        CHECK(pos == end && k2 == 7, "unpack_c position %lld", (long long)pos);
        for (int i = 0; i < 12; i++)
            CHECK(w[i] == (i % 4 < 2 && i < 10 ? v[i] : 0), "unpack_c int %d: %d", i, w[i]);
        pos = 0;
        EXPECT(MPI_Pack_c(v, 1, big, buf, 8, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
        /* external32 in MPI_Count. */
        unsigned char ext[64];
        int word = 0x01020304, word2[2] = {0, 0};
        MPI_Count epos = 0, rpos = 0, esz;
        OK(MPI_Pack_external_size_c("external32", 2, MPI_INT, &esz));
        CHECK(esz == 8, "external32 size_c %lld", (long long)esz);
        int words[2] = {word, -2};
        OK(MPI_Pack_external_c("external32", words, 2, MPI_INT, ext, sizeof ext, &epos));
        CHECK(epos == 8 && ext[0] == 1 && ext[3] == 4 && ext[4] == 0xff, "external32_c bytes");
        OK(MPI_Unpack_external_c("external32", ext, epos, &rpos, word2, 2, MPI_INT));
        CHECK(rpos == epos && word2[0] == word && word2[1] == -2, "external32_c round trip");
        OK(MPI_Type_free(&big));
    }

    /* Elements in MPI_Count, and counts beyond an int. */
    {
        int v[3] = {1, 2, 3}, w[4];
        MPI_Datatype four;
        MPI_Status st;
        MPI_Count n;
        int in;
        OK(MPI_Type_contiguous_c(4, MPI_INT, &four));
        OK(MPI_Type_commit(&four));
        ring(v, 3, MPI_INT, w, 1, four, &st);
        OK(MPI_Get_elements_c(&st, four, &n));
        CHECK(n == 3, "get_elements_c of a partial receive: %lld", (long long)n);
        OK(MPI_Get_count_c(&st, four, &n));
        CHECK(n == MPI_UNDEFINED, "get_count_c of a partial receive");
        const MPI_Count many = ((MPI_Count)1 << 31) + 5;
#ifdef HAVE_MPI_4_1
        OK(MPI_Status_set_elements_c(&st, MPI_INT, many));
#else
        OK(MPI_Status_set_elements_x(&st, MPI_INT, many));
#endif
        OK(MPI_Get_elements_c(&st, MPI_INT, &n));
        CHECK(n == many, "get_elements_c of 2^31 + 5 ints: %lld", (long long)n);
        OK(MPI_Get_elements(&st, MPI_INT, &in));
        CHECK(in == MPI_UNDEFINED, "int get_elements of 2^31 + 5 ints: %d", in);
        OK(MPI_Get_elements_c(&st, four, &n));
        CHECK(n == many, "get_elements_c in a derived type: %lld", (long long)n);
#ifdef HAVE_MPI_4_1
        OK(MPI_Status_set_elements_c(&st, four, 6));
        OK(MPI_Get_elements_c(&st, four, &n));
        CHECK(n == 6, "set_elements_c 6: %lld", (long long)n);
        OK(MPI_Get_count_c(&st, MPI_INT, &n));
        CHECK(n == 6, "6 elements are 6 ints: %lld", (long long)n);
        EXPECT(MPI_Status_set_elements_c(&st, four, -1), MPI_ERR_COUNT);
#endif
        EXPECT(MPI_Get_elements_c(MPI_STATUS_IGNORE, MPI_INT, &n), MPI_ERR_ARG);
        OK(MPI_Type_free(&four));
    }

    /* Bad arguments. */
    {
        MPI_Count bl[2] = {1, -1}, disp[2] = {0, 4}, sizes2[1] = {4}, sub2[1] = {5},
                  st2[1] = {0};
        MPI_Datatype t;
        EXPECT(MPI_Type_contiguous_c(-1, MPI_INT, &t), MPI_ERR_COUNT);
        EXPECT(MPI_Type_vector_c(2, -1, 1, MPI_INT, &t), MPI_ERR_COUNT);
        EXPECT(MPI_Type_indexed_c(2, bl, disp, MPI_INT, &t), MPI_ERR_COUNT);
        EXPECT(MPI_Type_indexed_c(2, NULL, disp, MPI_INT, &t), MPI_ERR_ARG);
        EXPECT(MPI_Type_create_subarray_c(1, sizes2, sub2, st2, MPI_ORDER_C, MPI_INT, &t),
               MPI_ERR_ARG);
        EXPECT(MPI_Type_contiguous_c(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
        EXPECT(MPI_Type_contiguous_c(2, MPI_INT, NULL), MPI_ERR_ARG);
        MPI_Count c;
        EXPECT(MPI_Type_size_c(MPI_DATATYPE_NULL, &c), MPI_ERR_TYPE);
    }

#ifdef HAVE_MPI_4_1
    /* The predefined pair types for MPI_MINLOC and MPI_MAXLOC
     * (MPI-4.1 §6.9.4). */
    {
        struct {
            MPI_Datatype value, pair;
        } pairs[] = {{MPI_FLOAT, MPI_FLOAT_INT}, {MPI_DOUBLE, MPI_DOUBLE_INT},
                     {MPI_LONG, MPI_LONG_INT},   {MPI_INT, MPI_2INT},
                     {MPI_SHORT, MPI_SHORT_INT}, {MPI_LONG_DOUBLE, MPI_LONG_DOUBLE_INT}};
        MPI_Datatype p;
        for (int i = 0; i < 6; i++) {
            OK(MPI_Type_get_value_index(pairs[i].value, MPI_INT, &p));
            CHECK(p == pairs[i].pair, "value_index pair %d", i);
        }
        OK(MPI_Type_get_value_index(MPI_INT, MPI_DOUBLE, &p));
        CHECK(p == MPI_DATATYPE_NULL, "value_index of an int indexed by a double");
        OK(MPI_Type_get_value_index(MPI_CHAR, MPI_INT, &p));
        CHECK(p == MPI_DATATYPE_NULL, "value_index of a char");
        OK(MPI_Type_contiguous(1, MPI_DOUBLE, &big));
        OK(MPI_Type_get_value_index(big, MPI_INT, &p));
        CHECK(p == MPI_DATATYPE_NULL, "value_index of a derived type");
        OK(MPI_Type_free(&big));
        EXPECT(MPI_Type_get_value_index(MPI_DATATYPE_NULL, MPI_INT, &p), MPI_ERR_TYPE);
        EXPECT(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, NULL), MPI_ERR_ARG);
        /* The pair type works with MPI_MINLOC. */
        struct {
            double v;
            int i;
        } in = {rank == 0 ? -1.0 : (double)rank, rank}, out;
        OK(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &p));
        OK(MPI_Allreduce(&in, &out, 1, p, MPI_MINLOC, MPI_COMM_WORLD));
        CHECK(out.v == -1.0 && out.i == 0, "minloc over the value_index pair");
    }
#endif
}

static void errors(void) {
    int x[4] = {0}, pos = 0;
    char buf[8];
    MPI_Datatype t, pre = MPI_INT, null = MPI_DATATYPE_NULL;
    EXPECT(MPI_Send(x, 1, MPI_DATATYPE_NULL, next, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_vector(-2, 1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    int bl[2] = {1, -1}, disp[2] = {0, 4};
    EXPECT(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_indexed(2, NULL, disp, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG);
    int sizes[2] = {4, 4}, sub[2] = {2, 2}, bad_starts[2] = {3, 0};
    EXPECT(MPI_Type_create_subarray(2, sizes, sub, bad_starts, MPI_ORDER_C, MPI_INT, &t),
           MPI_ERR_ARG);
    int starts[2] = {0, 0};
    EXPECT(MPI_Type_create_subarray(2, sizes, sub, starts, 99, MPI_INT, &t), MPI_ERR_ARG);
    int distrib[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE},
        dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
        psizes[2] = {size + 1, 1};
    EXPECT(MPI_Type_create_darray(size, rank, 2, sizes, distrib, dargs, psizes, MPI_ORDER_C,
                                  MPI_INT, &t),
           MPI_ERR_ARG);
    EXPECT(MPI_Type_free(&pre), MPI_ERR_TYPE);
    EXPECT(MPI_Type_free(&null), MPI_ERR_TYPE);
    EXPECT(MPI_Type_commit(NULL), MPI_ERR_ARG);
    MPI_Aint lb, ext;
    EXPECT(MPI_Type_get_extent(MPI_DATATYPE_NULL, &lb, &ext), MPI_ERR_TYPE);
    EXPECT(MPI_Type_get_extent((MPI_Datatype)0x8c0fffff, &lb, &ext), MPI_ERR_TYPE);
    int ints[1];
    EXPECT(MPI_Type_get_contents(MPI_INT, 0, 0, 0, ints, NULL, NULL), MPI_ERR_TYPE);
    /* Uncommitted: queries work, communication and packing do not. */
    OK(MPI_Type_contiguous(2, MPI_INT, &t));
    int s;
    OK(MPI_Type_size(t, &s));
    CHECK(s == 8, "uncommitted size");
    EXPECT(MPI_Send(x, 1, t, next, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Recv(x, 1, t, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TYPE);
    EXPECT(MPI_Pack(x, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
    OK(MPI_Type_commit(&t));
    EXPECT(MPI_Pack(x, 4, t, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
    EXPECT(MPI_Pack_external("native", x, 1, t, buf, sizeof buf, &lb), MPI_ERR_ARG);
    MPI_Datatype gone = t;
    OK(MPI_Type_free(&t));
    EXPECT(MPI_Send(x, 1, gone, next, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(NULL, 4, MPI_INT, next, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Get_elements(MPI_STATUS_IGNORE, MPI_INT, &s), MPI_ERR_ARG);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype f90;
    CHECK(MPI_Type_create_f90_integer(40, &f90) == MPI_ERR_ARG, "f90 integer of 40 digits");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    predefined();
    simple_constructors();
    struct_resized_dup();
    arrays();
    bottom();
    large();
    large_blocks();
    to_self();
    packing();
    collectives();
    large_counts();
    errors();

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    printf("datatypes: rank %d ok\n", rank);
    return 0;
}
