/* The MPI-4.0 and 4.1 additions to point-to-point and collectives:
 * large-count (_c) functions, MPI_Isendrecv(_replace), persistent
 * collectives, MPI_Op_create_c, partitioned communication, and the
 * buffers of buffered sends per communicator and session (MPI-4.1). */
#include <string.h>
#include "check.h"

/* MPI-4.1 functions are absent from MPI-4.0 headers (Debian's MPICH). */
#if defined(TESSEL_MPI) || MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define HAVE_MPI_4_1 1
#endif

static int rank, size, next, prev;

static void large_count_p2p(void) {
    enum { N = 100 };
    int out[N], in[N];
    for (int i = 0; i < N; i++) out[i] = rank * 1000 + i;
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Irecv_c(in, (MPI_Count)N, MPI_INT, prev, 7, MPI_COMM_WORLD, &r));
    OK(MPI_Send_c(out, (MPI_Count)N, MPI_INT, next, 7, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    MPI_Count n = -1;
    OK(MPI_Get_count_c(&st, MPI_INT, &n));
    CHECK(n == N, "MPI_Get_count_c gave %lld", (long long)n);
    for (int i = 0; i < N; i++) CHECK(in[i] == prev * 1000 + i, "in[%d] = %d", i, in[i]);

    /* The blocking forms, and the persistent ones. */
    MPI_Request pr[2];
    OK(MPI_Recv_init_c(in, (MPI_Count)N, MPI_INT, prev, 8, MPI_COMM_WORLD, &pr[0]));
    OK(MPI_Send_init_c(out, (MPI_Count)N, MPI_INT, next, 8, MPI_COMM_WORLD, &pr[1]));
    for (int round = 0; round < 2; round++) {
        memset(in, 0, sizeof in);
        OK(MPI_Startall(2, pr));
        OK(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
        CHECK(in[N - 1] == prev * 1000 + N - 1, "persistent _c round %d", round);
    }
    OK(MPI_Request_free(&pr[0]));
    OK(MPI_Request_free(&pr[1]));
}

static void isendrecv(void) {
    int out[3] = {rank, rank + 1, rank + 2}, in[3] = {-1, -1, -1};
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Isendrecv(out, 3, MPI_INT, next, 11, in, 3, MPI_INT, prev, 11, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL, "request not freed");
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 11, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK(in[0] == prev && in[2] == prev + 2, "Isendrecv got %d %d", in[0], in[2]);

    /* In one buffer, large-count form, tested to completion. */
    MPI_Count three = 3;
    int buf[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};
    OK(MPI_Isendrecv_replace_c(buf, three, MPI_INT, next, 12, prev, 12, MPI_COMM_WORLD, &r));
    int done = 0;
    while (!done) OK(MPI_Test(&r, &done, &st));
    CHECK(buf[0] == prev * 10 && buf[2] == prev * 10 + 2, "Isendrecv_replace got %d %d", buf[0], buf[2]);

    /* With MPI_PROC_NULL on both sides: done at once, the null status. */
    OK(MPI_Isendrecv(out, 3, MPI_INT, MPI_PROC_NULL, 1, in, 3, MPI_INT, MPI_PROC_NULL, 1,
                     MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "source %d from MPI_PROC_NULL", st.MPI_SOURCE);

    /* A bad rank is an error, and no request is left behind. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    EXPECT(MPI_Isendrecv(out, 3, MPI_INT, size, 1, in, 3, MPI_INT, prev, 1, MPI_COMM_WORLD, &r),
           MPI_ERR_RANK);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void large_count_colls(void) {
    long long v = rank + 1, sum = 0;
    OK(MPI_Allreduce_c(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == (long long)size * (size + 1) / 2, "Allreduce_c sum %lld", sum);

    int b[4] = {0, 0, 0, 0};
    if (rank == 0) b[0] = 42, b[3] = 43;
    OK(MPI_Bcast_c(b, 4, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(b[0] == 42 && b[3] == 43, "Bcast_c");

    /* Allgatherv_c: rank r contributes r+1 ints, displaced by MPI_Aint. */
    MPI_Count *counts = malloc(size * sizeof *counts);
    MPI_Aint *displs = malloc(size * sizeof *displs);
    int total = 0;
    for (int r = 0; r < size; r++) counts[r] = r + 1, displs[r] = total, total += r + 1;
    int *mine = malloc((rank + 1) * sizeof *mine), *all = malloc(total * sizeof *all);
    for (int i = 0; i <= rank; i++) mine[i] = rank * 100 + i;
    OK(MPI_Allgatherv_c(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            CHECK(all[displs[r] + i] == r * 100 + i, "Allgatherv_c block %d item %d", r, i);

    /* Alltoallw_c with byte displacements. */
    int *sb = malloc(size * sizeof *sb), *rb = malloc(size * sizeof *rb);
    MPI_Count *ones = malloc(size * sizeof *ones);
    MPI_Aint *bytes = malloc(size * sizeof *bytes);
    MPI_Datatype *types = malloc(size * sizeof *types);
    for (int r = 0; r < size; r++) {
        sb[r] = rank * size + r;
        ones[r] = 1;
        bytes[r] = (MPI_Aint)(r * sizeof(int));
        types[r] = MPI_INT;
    }
    OK(MPI_Alltoallw_c(sb, ones, bytes, types, rb, ones, bytes, types, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) CHECK(rb[r] == r * size + rank, "Alltoallw_c from %d", r);
    free(counts), free(displs), free(mine), free(all), free(sb), free(rb), free(ones), free(bytes), free(types);
}

static void persistent_colls(void) {
    long long v = 0, sum = 0;
    MPI_Request ar, br, bar;
    int b = 0;
    OK(MPI_Allreduce_init(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &ar));
    OK(MPI_Bcast_init_c(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &br));
    OK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &bar));
    for (int round = 0; round < 3; round++) {
        /* Each round reads the buffers as they are when it starts. */
        v = (long long)(rank + 1) * (round + 1);
        if (rank == size - 1) b = 7 + round;
        OK(MPI_Start(&ar));
        /* Another collective in flight meanwhile: both must progress. */
        MPI_Request ib;
        OK(MPI_Ibarrier(MPI_COMM_WORLD, &ib));
        OK(MPI_Wait(&ib, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&ar, MPI_STATUS_IGNORE));
        CHECK(ar != MPI_REQUEST_NULL, "a persistent request survives its round");
        CHECK(sum == (long long)size * (size + 1) / 2 * (round + 1), "round %d sum %lld", round, sum);
        MPI_Request two[2] = {br, bar};
        OK(MPI_Startall(2, two));
        OK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
        CHECK(b == 7 + round, "round %d bcast %d", round, b);
    }
    /* Waiting on an inactive persistent request returns at once. */
    OK(MPI_Wait(&ar, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&ar));
    OK(MPI_Request_free(&br));
    OK(MPI_Request_free(&bar));
    CHECK(ar == MPI_REQUEST_NULL, "freed");

    /* The arrays are read at initialization: the caller may reuse them. */
    int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
    int *all = malloc(size * sizeof *all), mine = rank * 3 + 1;
    for (int r = 0; r < size; r++) counts[r] = 1, displs[r] = size - 1 - r;
    MPI_Request gr;
    OK(MPI_Allgatherv_init(&mine, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &gr));
    memset(counts, 0xff, size * sizeof *counts);
    memset(displs, 0xff, size * sizeof *displs);
    free(counts), free(displs);
    for (int round = 0; round < 2; round++) {
        OK(MPI_Start(&gr));
        OK(MPI_Wait(&gr, MPI_STATUS_IGNORE));
        for (int r = 0; r < size; r++)
            CHECK(all[size - 1 - r] == r * 3 + 1, "Allgatherv_init round %d from %d", round, r);
    }
    OK(MPI_Request_free(&gr));
    free(all);

    /* A neighbourhood collective, persistent, on a ring. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int me, got[2] = {-1, -1};
    MPI_Comm_rank(ring, &me);
    MPI_Request nr;
    OK(MPI_Neighbor_allgather_init(&me, 1, MPI_INT, got, 1, MPI_INT, ring, MPI_INFO_NULL, &nr));
    OK(MPI_Start(&nr));
    OK(MPI_Wait(&nr, MPI_STATUS_IGNORE));
    CHECK(got[0] == (me + size - 1) % size && got[1] == (me + 1) % size, "neighbours %d %d", got[0], got[1]);
    OK(MPI_Request_free(&nr));
    OK(MPI_Comm_free(&ring));
}

static void large_sum(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    (void)dt;
    for (MPI_Count i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void op_create_c(void) {
    MPI_Op op;
    OK(MPI_Op_create_c(large_sum, 1, &op));
    int a[2] = {1, 2}, b[2] = {10, 20};
    OK(MPI_Reduce_local_c(a, b, 2, MPI_INT, op));
    CHECK(b[0] == 11 && b[1] == 22, "Reduce_local_c %d %d", b[0], b[1]);
    int one = 1, r = 0;
    OK(MPI_Allreduce(&one, &r, 1, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(r == size, "Allreduce with a large-count user op gave %d", r);
    OK(MPI_Op_free(&op));
}

static void partitioned(void) {
    enum { PARTS = 4, EACH = 8 };
    int out[PARTS * EACH] = {0}, in[PARTS * EACH];
    MPI_Request s, r;
    OK(MPI_Psend_init(out, PARTS, EACH, MPI_INT, next, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    /* The receiver may see the buffer in other partitions. */
    OK(MPI_Precv_init(in, PARTS / 2, 2 * EACH, MPI_INT, prev, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 3; round++) {
        memset(in, 0xff, sizeof in);
        /* Round 0 sends before the receive is posted, later rounds after. */
        if (round > 0) OK(MPI_Start(&r));
        OK(MPI_Start(&s));
        for (int p = PARTS - 1; p >= 0; p--) {
            for (int i = 0; i < EACH; i++) out[p * EACH + i] = rank * 1000 + round * 100 + p * EACH + i;
            if (round == 0) OK(MPI_Pready(p, s));
        }
        if (round == 1) OK(MPI_Pready_range(0, PARTS - 1, s));
        if (round == 2) {
            int list[PARTS] = {2, 0, 3, 1};
            OK(MPI_Pready_list(PARTS, list, s));
        }
        if (round == 0) {
            /* Every message is on its way: a wildcard receive must not
             * take a partitioned one. */
            OK(MPI_Barrier(MPI_COMM_WORLD));
            int flag = 1;
            OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "MPI_ANY_TAG matched a partitioned message");
            OK(MPI_Start(&r));
        }
        int arrived = 0;
        while (!arrived) OK(MPI_Parrived(r, PARTS / 2 - 1, &arrived));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < PARTS * EACH; i++)
            CHECK(in[i] == prev * 1000 + round * 100 + i, "round %d item %d: %d", round, i, in[i]);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    OK(MPI_Start(&s));
    EXPECT(MPI_Pready(PARTS, s), MPI_ERR_ARG);
    EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST);
    /* Waiting before every partition is ready could never end. */
    EXPECT(MPI_Wait(&s, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
    OK(MPI_Pready_range(0, PARTS - 1, s));
    OK(MPI_Start(&r));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_Request bad;
    EXPECT(MPI_Precv_init(in, 1, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad),
           MPI_ERR_RANK);
    EXPECT(MPI_Psend_init(out, 0, 1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &bad), MPI_ERR_ARG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));
}

#ifdef HAVE_MPI_4_1
/* Bsend one int to the next rank on `comm`, receive one from the previous. */
static void bsend_ring(MPI_Comm comm, int seed) {
    int got = -1, me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int value = seed * 1000 + me, from = (me + n - 1) % n;
    OK(MPI_Bsend(&value, 1, MPI_INT, (me + 1) % n, 31, comm));
    OK(MPI_Recv(&got, 1, MPI_INT, from, 31, comm, MPI_STATUS_IGNORE));
    CHECK(got == seed * 1000 + from, "bsend ring got %d, expected %d", got, seed * 1000 + from);
}

static void buffers(void) {
    MPI_Comm comm;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* No buffer anywhere: an error. */
    int x = 1;
    EXPECT(MPI_Bsend(&x, 1, MPI_INT, rank, 1, comm), MPI_ERR_BUFFER);

    /* A communicator's own buffer. */
    int bytes = 4 * (MPI_BSEND_OVERHEAD + (int)sizeof(int));
    char *mem = malloc(bytes);
    OK(MPI_Comm_attach_buffer(comm, mem, bytes));
    EXPECT(MPI_Comm_attach_buffer(comm, mem, bytes), MPI_ERR_BUFFER);
    bsend_ring(comm, 3);
    OK(MPI_Comm_flush_buffer(comm));
    MPI_Request fr;
    OK(MPI_Comm_iflush_buffer(comm, &fr));
    OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
    void *back = NULL;
    int back_size = -1;
    OK(MPI_Comm_detach_buffer(comm, &back, &back_size));
    CHECK(back == mem && back_size == bytes, "detached %p/%d", back, back_size);

    /* The process's buffer serves the world model's communicators. */
    MPI_Count cbytes = bytes;
    OK(MPI_Buffer_attach_c(mem, cbytes));
    bsend_ring(comm, 5);
    OK(MPI_Buffer_iflush(&fr));
    OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
    OK(MPI_Buffer_flush());
    MPI_Count cback = -1;
    OK(MPI_Buffer_detach_c(&back, &cback));
    CHECK(back == mem && cback == bytes, "process buffer detached %p/%lld", back, (long long)cback);
#ifdef MPI_BUFFER_AUTOMATIC
    /* The automatic buffer never fills. */
    OK(MPI_Comm_attach_buffer(comm, MPI_BUFFER_AUTOMATIC, 0));
    for (int i = 0; i < 16; i++) bsend_ring(comm, i);
    OK(MPI_Comm_detach_buffer(comm, &back, &back_size));
    CHECK(back == MPI_BUFFER_AUTOMATIC, "automatic buffer detached as %p", back);
#endif
    OK(MPI_Comm_free(&comm));

    /* A session's buffer serves the communicators made from it. */
    MPI_Session s;
    MPI_Group g;
    MPI_Comm sc;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    OK(MPI_Comm_create_from_group(g, "tessel.test.mpi4.buffers", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc));
    OK(MPI_Session_attach_buffer(s, mem, bytes));
    bsend_ring(sc, 7);
    OK(MPI_Session_flush_buffer(s));
    OK(MPI_Session_iflush_buffer(s, &fr));
    OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
    OK(MPI_Session_detach_buffer(s, &back, &back_size));
    CHECK(back == mem && back_size == bytes, "session buffer detached %p/%d", back, back_size);
    /* Detached: nothing serves the session's communicator any more. */
    EXPECT(MPI_Bsend(&x, 1, MPI_INT, 0, 1, sc), MPI_ERR_BUFFER);
    OK(MPI_Comm_free(&sc));
    OK(MPI_Group_free(&g));
    OK(MPI_Session_finalize(&s));
    free(mem);
}
#endif

/* Names of the null handles, which are predefined objects. */
static void null_names(void) {
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    OK(MPI_Comm_get_name(MPI_COMM_NULL, name, &len));
    CHECK(strcmp(name, "MPI_COMM_NULL") == 0 && len == 13, "MPI_COMM_NULL is named %s", name);
    OK(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len));
    CHECK(strcmp(name, "MPI_DATATYPE_NULL") == 0, "MPI_DATATYPE_NULL is named %s", name);
}

#ifdef MPI_ABI_VERSION
/* The standard ABI's own queries and integer conversions. */
static void abi_queries(void) {
    int major = -1, minor = -1;
    OK(MPI_Abi_get_version(&major, &minor));
    CHECK(major == MPI_ABI_VERSION, "ABI version %d.%d", major, minor);
    /* No Fortran binding: nothing known until someone sets it. */
    MPI_Info info = MPI_INFO_NULL;
    OK(MPI_Abi_get_fortran_info(&info));
    CHECK(info == MPI_INFO_NULL, "Fortran info without a Fortran binding");
    MPI_Message ms[2] = {MPI_MESSAGE_NULL, MPI_MESSAGE_NO_PROC};
    for (int i = 0; i < 2; i++)
        CHECK(MPI_Message_fromint(MPI_Message_toint(ms[i])) == ms[i], "message %d round trip", i);
    CHECK(MPI_Request_fromint(MPI_Request_toint(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "request");
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "comm");
    /* Error classes the standard added after MPICH 4.0 are classes. */
    int c = -1;
    OK(MPI_Error_class(MPI_ERR_ERRHANDLER, &c));
    CHECK(c == MPI_ERR_ERRHANDLER, "class of MPI_ERR_ERRHANDLER: %d", c);
    OK(MPI_Error_class(MPI_ERR_ABI, &c));
    CHECK(c == MPI_ERR_ABI, "class of MPI_ERR_ABI: %d", c);
}
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    large_count_p2p();
    isendrecv();
    large_count_colls();
    persistent_colls();
    op_create_c();
    partitioned();
    null_names();
#ifdef MPI_ABI_VERSION
    abi_queries();
#endif
#ifdef HAVE_MPI_4_1
    buffers();
#endif
    MPI_Barrier(MPI_COMM_WORLD);
    printf("mpi4: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
