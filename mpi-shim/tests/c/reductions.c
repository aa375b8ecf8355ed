/* Every predefined reduction operation on every predefined type it applies
 * to (MPI-4.0 §6.9.2: C integers, fixed-width and multi-language integers,
 * Fortran integers, floating point, logical, byte, complex), through
 * MPI_Allreduce, MPI_Reduce and MPI_Scan, blocking and nonblocking, checked
 * exactly against a fold computed here. Allreduce also runs on 20011
 * elements (a prime: the slices of a split reduction end inside no
 * element, whatever its size, only if the library cuts at element
 * boundaries). Then MINLOC/MAXLOC on the Fortran pair types, whose index
 * is a REAL or DOUBLE PRECISION. At most 8 processes: the inputs are
 * chosen so that no result overflows the narrowest type there. */
#include <complex.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;
/* 1: call the nonblocking form and wait for it. */
static int nb;

#define RUN(blocking, nonblocking, ...)                                          \
    do {                                                                         \
        if (nb) {                                                                \
            MPI_Request r_;                                                      \
            OK(nonblocking(__VA_ARGS__, &r_));                                   \
            OK(MPI_Wait(&r_, MPI_STATUS_IGNORE));                                \
        } else {                                                                 \
            OK(blocking(__VA_ARGS__));                                           \
        }                                                                        \
    } while (0)

enum { MAXo, MINo, SUMo, PRODo, LANDo, LORo, LXORo, BANDo, BORo, BXORo, NOPS };
static const char *opname[NOPS] = {"MAX",  "MIN", "SUM",  "PROD", "LAND",
                                   "LOR",  "LXOR", "BAND", "BOR",  "BXOR"};
static MPI_Op ops[NOPS];

/* The operations of each type class (MPI-4.0 §6.9.2). */
#define ARITH ((1u << MAXo) | (1u << MINo) | (1u << SUMo) | (1u << PRODo))
#define LOGIC ((1u << LANDo) | (1u << LORo) | (1u << LXORo))
#define BITS ((1u << BANDo) | (1u << BORo) | (1u << BXORo))

enum { FEW = 3, MANY = 20011 };

/* Rank r's element i under operation o: small integers, exact in every
 * type, that make each operation's result differ from the others'.
 * Products have at most two factors 2; sums stay below 100; logical
 * inputs are 0 or 1 to 3 (true in several spellings); bit patterns keep
 * bit 6 set, so that BAND is never 0. */
static long long input(int o, int r, int i) {
    switch (o) {
    case PRODo: return (r + i) % 3 == 0 && r < 6 ? 2 : 1;
    case LANDo:
    case LORo:
    case LXORo: return (r + i) % 3 == 0 ? 0 : 1 + r % 3;
    case BANDo:
    case BORo:
    case BXORo: return 0x40 | ((r * 5 + i * 3) & 0x3f);
    default: return (long long)((r + 1) * (i + 3) % 11 + 1);
    }
}

static long long fold(int o, long long a, long long b) {
    switch (o) {
    case MAXo: return a > b ? a : b;
    case MINo: return a < b ? a : b;
    case SUMo: return a + b;
    case PRODo: return a * b;
    case LANDo: return a && b;
    case LORo: return a || b;
    case LXORo: return !a != !b;
    case BANDo: return a & b;
    case BORo: return a | b;
    default: return a ^ b;
    }
}

/* A predefined type, and how to store and read a small integer in it. */
struct type {
    MPI_Datatype dt;
    const char *name;
    size_t width;
    unsigned ops;
    void (*put)(void *, long long);
    long long (*get)(const void *);
};

#define ACCESS(T, id)                                                            \
    static void put_##id(void *p, long long v) {                                 \
        T x = (T)v;                                                              \
        memcpy(p, &x, sizeof x);                                                 \
    }                                                                            \
    static long long get_##id(const void *p) {                                   \
        T x;                                                                     \
        memcpy(&x, p, sizeof x);                                                 \
        return (long long)x;                                                     \
    }
ACCESS(signed char, schar)
ACCESS(unsigned char, uchar)
ACCESS(short, short)
ACCESS(unsigned short, ushort)
ACCESS(int, int)
ACCESS(unsigned, uint)
ACCESS(long, long)
ACCESS(unsigned long, ulong)
ACCESS(long long, llong)
ACCESS(unsigned long long, ullong)
ACCESS(int8_t, i8)
ACCESS(int16_t, i16)
ACCESS(int32_t, i32)
ACCESS(int64_t, i64)
ACCESS(uint8_t, u8)
ACCESS(uint16_t, u16)
ACCESS(uint32_t, u32)
ACCESS(uint64_t, u64)
ACCESS(MPI_Aint, aint)
ACCESS(MPI_Offset, offset)
ACCESS(MPI_Count, count)
ACCESS(float, float)
ACCESS(double, double)
ACCESS(long double, ldouble)
ACCESS(_Bool, bool)

/* Fortran's LOGICAL, 4 bytes: .TRUE. is 1. */
static void put_logical(void *p, long long v) {
    int32_t x = v != 0;
    memcpy(p, &x, sizeof x);
}
#define get_logical get_i32

/* The `n` elements of `out` are those of `want`. */
static void expect(const struct type *t, int o, const char *call, int n, const char *out,
                   const char *want) {
    for (int i = 0; i < n; i++) {
        long long got = t->get(out + (size_t)i * t->width);
        long long w = t->get(want + (size_t)i * t->width);
        CHECK(got == w, "%s %s on %s, %d elements: [%d] is %lld, not %lld", call, opname[o],
              t->name, n, i, got, w);
    }
}

static void check_type(const struct type *t, int o, int n, char *in, char *out, char *want) {
    MPI_Op op = ops[o];
    /* Rank r's element i, stored in the type and read back: what the
     * library sees (1 for any true _Bool). */
    char tmp[16];
#define SEEN(r, i) (t->put(tmp, input(o, r, i)), t->get(tmp))
    for (int i = 0; i < n; i++) t->put(in + (size_t)i * t->width, input(o, rank, i));

    /* Allreduce: the fold over every rank. */
    for (int i = 0; i < n; i++) {
        long long acc = SEEN(0, i);
        for (int r = 1; r < size; r++) acc = fold(o, acc, SEEN(r, i));
        t->put(want + (size_t)i * t->width, acc);
    }
    RUN(MPI_Allreduce, MPI_Iallreduce, in, out, n, t->dt, op, MPI_COMM_WORLD);
    expect(t, o, "allreduce", n, out, want);
    if (n > FEW)
        return;

    /* Reduce to the last rank: the same fold. */
    int root = size - 1;
    memset(out, 0, (size_t)n * t->width);
    RUN(MPI_Reduce, MPI_Ireduce, in, out, n, t->dt, op, root, MPI_COMM_WORLD);
    if (rank == root)
        expect(t, o, "reduce", n, out, want);

    /* Scan: the fold over ranks 0 to this one. */
    for (int i = 0; i < n; i++) {
        long long acc = SEEN(0, i);
        for (int r = 1; r <= rank; r++) acc = fold(o, acc, SEEN(r, i));
        t->put(want + (size_t)i * t->width, acc);
    }
    RUN(MPI_Scan, MPI_Iscan, in, out, n, t->dt, op, MPI_COMM_WORLD);
    expect(t, o, "scan", n, out, want);
#undef SEEN
}

static void test_types(void) {
    const struct type types[] = {
        /* C integers: every operation but MINLOC/MAXLOC. */
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, ARITH | LOGIC | BITS, put_schar, get_schar},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, ARITH | LOGIC | BITS, put_uchar, get_uchar},
        {MPI_SHORT, "MPI_SHORT", sizeof(short), ARITH | LOGIC | BITS, put_short, get_short},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(unsigned short), ARITH | LOGIC | BITS,
         put_ushort, get_ushort},
        {MPI_INT, "MPI_INT", sizeof(int), ARITH | LOGIC | BITS, put_int, get_int},
        {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), ARITH | LOGIC | BITS, put_uint, get_uint},
        {MPI_LONG, "MPI_LONG", sizeof(long), ARITH | LOGIC | BITS, put_long, get_long},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), ARITH | LOGIC | BITS,
         put_ulong, get_ulong},
        {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), ARITH | LOGIC | BITS, put_llong,
         get_llong},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long),
         ARITH | LOGIC | BITS, put_ullong, get_ullong},
        {MPI_INT8_T, "MPI_INT8_T", 1, ARITH | LOGIC | BITS, put_i8, get_i8},
        {MPI_INT16_T, "MPI_INT16_T", 2, ARITH | LOGIC | BITS, put_i16, get_i16},
        {MPI_INT32_T, "MPI_INT32_T", 4, ARITH | LOGIC | BITS, put_i32, get_i32},
        {MPI_INT64_T, "MPI_INT64_T", 8, ARITH | LOGIC | BITS, put_i64, get_i64},
        {MPI_UINT8_T, "MPI_UINT8_T", 1, ARITH | LOGIC | BITS, put_u8, get_u8},
        {MPI_UINT16_T, "MPI_UINT16_T", 2, ARITH | LOGIC | BITS, put_u16, get_u16},
        {MPI_UINT32_T, "MPI_UINT32_T", 4, ARITH | LOGIC | BITS, put_u32, get_u32},
        {MPI_UINT64_T, "MPI_UINT64_T", 8, ARITH | LOGIC | BITS, put_u64, get_u64},
        /* Multi-language integers: arithmetic and bitwise. */
        {MPI_AINT, "MPI_AINT", sizeof(MPI_Aint), ARITH | BITS, put_aint, get_aint},
        {MPI_OFFSET, "MPI_OFFSET", sizeof(MPI_Offset), ARITH | BITS, put_offset, get_offset},
        {MPI_COUNT, "MPI_COUNT", sizeof(MPI_Count), ARITH | BITS, put_count, get_count},
        /* Fortran integers: arithmetic and bitwise. */
        {MPI_INTEGER, "MPI_INTEGER", 4, ARITH | BITS, put_i32, get_i32},
        {MPI_INTEGER1, "MPI_INTEGER1", 1, ARITH | BITS, put_i8, get_i8},
        {MPI_INTEGER2, "MPI_INTEGER2", 2, ARITH | BITS, put_i16, get_i16},
        {MPI_INTEGER4, "MPI_INTEGER4", 4, ARITH | BITS, put_i32, get_i32},
        {MPI_INTEGER8, "MPI_INTEGER8", 8, ARITH | BITS, put_i64, get_i64},
        /* Floating point: arithmetic. */
        {MPI_FLOAT, "MPI_FLOAT", sizeof(float), ARITH, put_float, get_float},
        {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), ARITH, put_double, get_double},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), ARITH, put_ldouble,
         get_ldouble},
        {MPI_REAL, "MPI_REAL", 4, ARITH, put_float, get_float},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, ARITH, put_double, get_double},
        {MPI_REAL4, "MPI_REAL4", 4, ARITH, put_float, get_float},
        {MPI_REAL8, "MPI_REAL8", 8, ARITH, put_double, get_double},
        /* Logical: the logical operations. */
        {MPI_C_BOOL, "MPI_C_BOOL", sizeof(_Bool), LOGIC, put_bool, get_bool},
        {MPI_LOGICAL, "MPI_LOGICAL", 4, LOGIC, put_logical, get_logical},
        /* Byte: bitwise. */
        {MPI_BYTE, "MPI_BYTE", 1, BITS, put_uchar, get_uchar},
    };
    const int ntypes = (int)(sizeof types / sizeof *types);
    char *in = malloc((size_t)MANY * 16), *out = malloc((size_t)MANY * 16),
         *want = malloc((size_t)MANY * 16);
    for (int k = 0; k < ntypes; k++) {
        const struct type *t = &types[k];
        MPI_Aint lb, extent;
        OK(MPI_Type_get_extent(t->dt, &lb, &extent));
        CHECK((size_t)extent == t->width, "%s: extent %ld, not %zu", t->name, (long)extent,
              t->width);
        for (int o = 0; o < NOPS; o++) {
            if (!(t->ops >> o & 1))
                continue;
            check_type(t, o, FEW, in, out, want);
            /* The large vector with one operation of each kind. */
            if (o == SUMo || o == LANDo || o == BXORo)
                check_type(t, o, MANY, in, out, want);
        }
    }
    free(in), free(out), free(want);
}

/* SUM and PROD on the complex types, values with small integer parts. */
#define COMPLEX_TEST(T, dt)                                                      \
    do {                                                                         \
        enum { N = 5 };                                                          \
        T x[N], y[N], want[N];                                                   \
        for (int o = SUMo; o <= PRODo; o++) {                                    \
            for (int i = 0; i < N; i++) {                                        \
                want[i] = 0;                                                     \
                for (int r = 0; r < size; r++) {                                 \
                    T v = (T)input(o, r, i) + (T)((r + i) % 2) * I;              \
                    if (r == rank) x[i] = v;                                     \
                    want[i] = r == 0 ? v : o == SUMo ? want[i] + v : want[i] * v; \
                }                                                                \
            }                                                                    \
            RUN(MPI_Allreduce, MPI_Iallreduce, x, y, N, dt, ops[o], MPI_COMM_WORLD); \
            for (int i = 0; i < N; i++)                                          \
                CHECK(creall(y[i]) == creall(want[i]) && cimagl(y[i]) == cimagl(want[i]), \
                      "%s on %s: [%d] is %Lg%+Lgi, not %Lg%+Lgi", opname[o], #dt, i,   \
                      (long double)creall(y[i]), (long double)cimagl(y[i]),      \
                      (long double)creall(want[i]), (long double)cimagl(want[i])); \
        }                                                                        \
    } while (0)

static void test_complex(void) {
    COMPLEX_TEST(float _Complex, MPI_C_FLOAT_COMPLEX);
    COMPLEX_TEST(double _Complex, MPI_C_DOUBLE_COMPLEX);
    COMPLEX_TEST(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX);
    COMPLEX_TEST(float _Complex, MPI_COMPLEX);
    COMPLEX_TEST(double _Complex, MPI_DOUBLE_COMPLEX);
}

/* MINLOC and MAXLOC on Fortran's pairs of two of a kind: the index is
 * compared as a number of the pair's type. Ties go to the lower index. */
#define PAIR_TEST(T, dt)                                                         \
    do {                                                                         \
        /* Element 0: rank r has value r % 3 at index 10 - r (ties at the    \
         * same value: the lower index, from the higher rank). Element 1:  \
         * indexes 0.25 apart, below 1. */                                     \
        T p[4] = {(T)(rank % 3), (T)(10 - rank), (T)1, (T)(0.75 - 0.25 * (rank % 3))}, q[4]; \
        OK(MPI_Allreduce(p, q, 2, dt, MPI_MAXLOC, MPI_COMM_WORLD));              \
        int best = size >= 3 ? 2 : size - 1, last = best;                        \
        for (int r = best; r < size; r += 3) last = r;                           \
        CHECK(q[0] == best && q[1] == 10 - last, "%s maxloc: %g at %g", #dt, (double)q[0], \
              (double)q[1]);                                                     \
        T low = (T)(0.75 - 0.25 * (size >= 3 ? 2 : size - 1));                  \
        CHECK(q[2] == 1 && q[3] == low, "%s maxloc tie: %g at %g", #dt, (double)q[2], \
              (double)q[3]);                                                     \
        OK(MPI_Allreduce(p, q, 2, dt, MPI_MINLOC, MPI_COMM_WORLD));              \
        int lastz = 0;                                                           \
        for (int r = 0; r < size; r += 3) lastz = r;                             \
        CHECK(q[0] == 0 && q[1] == 10 - lastz, "%s minloc: %g at %g", #dt, (double)q[0], \
              (double)q[1]);                                                     \
    } while (0)

static void test_fortran_pairs(void) {
    PAIR_TEST(int32_t, MPI_2INTEGER);
    PAIR_TEST(float, MPI_2REAL);
    PAIR_TEST(double, MPI_2DOUBLE_PRECISION);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 8, "at most 8 processes");
    MPI_Op all[NOPS] = {MPI_MAX, MPI_MIN, MPI_SUM,  MPI_PROD, MPI_LAND,
                        MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,  MPI_BXOR};
    memcpy(ops, all, sizeof all);
    for (nb = 0; nb < 2; nb++) {
        test_types();
        test_complex();
    }
    test_fortran_pairs();
    MPI_Finalize();
    printf("reductions: rank %d ok\n", rank);
    return 0;
}
