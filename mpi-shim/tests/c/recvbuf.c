/* Library-managed receive buffers: MPI_Irecv with a NULL buffer lets the
 * library place the message; MPIX_Get_recv_buf hands the buffer out after
 * completion and MPIX_Release_recv_buf returns it. Every protocol size,
 * from ordinary and MPI_Alloc_mem memory, several receives in flight with
 * equal statuses (handed out in completion order), truncation, and the
 * error classes of misuse. */
#include <string.h>
#include "check.h"

#ifndef MPIX_HAS_RECV_BUF
#error "this test needs Tessel's mpi.h (MPIX_HAS_RECV_BUF)"
#endif

static unsigned char pattern(int rank, int round, size_t i) {
    return (unsigned char)(rank * 31 + round * 17 + i * 7);
}

/* Receive `len` bytes from the previous rank into a library buffer while
 * sending as much to the next one from `out`. */
static void ring(unsigned char *out, size_t len, int round, int rank, int size) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t i = 0; i < len; i++) out[i] = pattern(rank, round, i);
    MPI_Request reqs[2];
    MPI_Status st[2];
    OK(MPI_Irecv(NULL, (int)len, MPI_BYTE, prev, 5, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Isend(out, (int)len, MPI_BYTE, next, 5, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Waitall(2, reqs, st));
    int got = -1;
    OK(MPI_Get_count(&st[0], MPI_BYTE, &got));
    CHECK(got == (int)len, "received %d of %zu bytes", got, len);
    unsigned char *in = NULL;
    OK(MPIX_Get_recv_buf(st[0], (void **)&in));
    CHECK(in != NULL, "no buffer");
    for (size_t i = 0; i < len; i++)
        CHECK(in[i] == pattern(prev, round, i), "byte %zu of %zu from %d", i, len, prev);
    /* Taken once only. */
    void *again = NULL;
    EXPECT(MPIX_Get_recv_buf(st[0], &again), MPI_ERR_ARG);
    OK(MPIX_Release_recv_buf(st[0], in));
    EXPECT(MPIX_Release_recv_buf(st[0], in), MPI_ERR_BUFFER);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    const size_t sizes[] = {1, 80, 100, 4000, 16384, 65536, (1 << 20) + 3, 3 << 20};
    const size_t nsizes = sizeof sizes / sizeof *sizes;
    unsigned char *plain = malloc(3 << 20), *shared = NULL;
    OK(MPI_Alloc_mem(3 << 20, MPI_INFO_NULL, &shared));
    for (int round = 0; round < 3; round++)
        for (size_t k = 0; k < nsizes; k++)
            ring(round % 2 ? shared : plain, sizes[k], round, rank, size);

    /* Three receives in flight from one peer with equal statuses: their
     * buffers come out in the order the receives completed (the order the
     * messages were sent: MPI's non-overtaking rule). */
    enum { N = 3, LEN = 200000 };
    MPI_Request r[2 * N];
    MPI_Status st[2 * N];
    unsigned char *out[N];
    for (int k = 0; k < N; k++) {
        out[k] = malloc(LEN);
        for (size_t i = 0; i < LEN; i++) out[k][i] = pattern(rank, 10 + k, i);
        OK(MPI_Irecv(NULL, LEN, MPI_BYTE, prev, 6, MPI_COMM_WORLD, &r[k]));
    }
    for (int k = 0; k < N; k++) OK(MPI_Isend(out[k], LEN, MPI_BYTE, next, 6, MPI_COMM_WORLD, &r[N + k]));
    for (int k = 0; k < N; k++) OK(MPI_Wait(&r[k], &st[k]));
    OK(MPI_Waitall(N, r + N, st + N));
    for (int k = 0; k < N; k++) {
        unsigned char *in = NULL;
        OK(MPIX_Get_recv_buf(st[k], (void **)&in));
        for (size_t i = 0; i < LEN; i++)
            CHECK(in[i] == pattern(prev, 10 + k, i), "message %d byte %zu", k, i);
        OK(MPIX_Release_recv_buf(st[k], in));
        free(out[k]);
    }

    /* Elements of a contiguous derived type count as bytes of its size. */
    MPI_Datatype three;
    OK(MPI_Type_contiguous(3, MPI_INT, &three));
    OK(MPI_Type_commit(&three));
    int ints[300], *in = NULL;
    for (int i = 0; i < 300; i++) ints[i] = rank * 1000 + i;
    MPI_Status s1;
    OK(MPI_Irecv(NULL, 100, three, prev, 7, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Send(ints, 100, three, next, 7, MPI_COMM_WORLD));
    OK(MPI_Wait(&r[0], &s1));
    OK(MPIX_Get_recv_buf(s1, (void **)&in));
    for (int i = 0; i < 300; i++) CHECK(in[i] == prev * 1000 + i, "int %d: %d", i, in[i]);
    OK(MPIX_Release_recv_buf(s1, in));
    OK(MPI_Type_free(&three));

    /* A message larger than count elements is truncated. */
    OK(MPI_Irecv(NULL, 10, MPI_BYTE, prev, 8, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Send(plain, 100000, MPI_BYTE, next, 8, MPI_COMM_WORLD));
    EXPECT(MPI_Wait(&r[0], &s1), MPI_ERR_TRUNCATE);

    /* A receive from MPI_PROC_NULL completes at once, with no buffer. */
    OK(MPI_Irecv(NULL, 10, MPI_BYTE, MPI_PROC_NULL, 9, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Wait(&r[0], &s1));
    void *none = NULL;
    EXPECT(MPIX_Get_recv_buf(s1, &none), MPI_ERR_ARG);
    EXPECT(MPIX_Get_recv_buf(s1, NULL), MPI_ERR_ARG);
    EXPECT(MPIX_Release_recv_buf(s1, plain), MPI_ERR_BUFFER);

    OK(MPI_Free_mem(shared));
    free(plain);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("recvbuf: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
