/* Point-to-point: blocking and nonblocking sends of every size class
 * around a ring, wildcards, MPI_PROC_NULL, Sendrecv, Get_count, Test. */
#include <string.h>
#include <unistd.h>
#include "check.h"

static void fill(double *v, int n, int seed) {
    for (int i = 0; i < n; i++) v[i] = seed * 1000003.0 + i;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    report_library();
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int counts[] = {0, 1, 10, 2048, 300000};
    for (int k = 0; k < 5; k++) {
        int n = counts[k];
        double *out = malloc(sizeof(double) * (n + 1)), *in = malloc(sizeof(double) * (n + 1));
        fill(out, n, rank);
        MPI_Request rq[2];
        MPI_Status st[2];
        MPI_Irecv(in, n, MPI_DOUBLE, k % 2 ? MPI_ANY_SOURCE : prev, k, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(out, n, MPI_DOUBLE, next, k, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, st);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "requests not reset");
        int got;
        MPI_Get_count(&st[0], MPI_DOUBLE, &got);
        CHECK(got == n && st[0].MPI_SOURCE == prev && st[0].MPI_TAG == k,
              "count %d source %d tag %d", got, st[0].MPI_SOURCE, st[0].MPI_TAG);
        fill(out, n, prev);
        CHECK(memcmp(in, out, sizeof(double) * n) == 0, "payload of %d doubles", n);
        free(out);
        free(in);
    }

    /* Blocking Send/Recv with MPI_ANY_TAG, and Sendrecv around the ring. */
    int token = rank * 7, back = -1;
    MPI_Status st;
    MPI_Sendrecv(&token, 1, MPI_INT, next, 42, &back, 1, MPI_INT, prev, MPI_ANY_TAG,
                 MPI_COMM_WORLD, &st);
    CHECK(back == prev * 7 && st.MPI_TAG == 42, "sendrecv got %d tag %d", back, st.MPI_TAG);
    if (size > 1) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(&back, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(back == 0 && st.MPI_SOURCE == 0 && st.MPI_TAG == 5, "blocking recv");
        }
    }

    /* MPI_PROC_NULL: completes at once with the documented status. */
    MPI_Send(&token, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Recv(&back, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    int got;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && got == 0, "proc null");

    /* Test until done. */
    MPI_Request r;
    int flag = 0;
    MPI_Irecv(&back, 1, MPI_INT, prev, 77, MPI_COMM_WORLD, &r);
    MPI_Send(&token, 1, MPI_INT, next, 77, MPI_COMM_WORLD);
    while (!flag) MPI_Test(&r, &flag, &st);
    CHECK(r == MPI_REQUEST_NULL && back == prev * 7, "test");

    /* A duplicated communicator is a separate message space. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Irecv(&back, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &r);
    int other = -1;
    MPI_Request r2;
    MPI_Irecv(&other, 1, MPI_INT, prev, 9, dup, &r2);
    int a = 1, b = 2;
    MPI_Send(&b, 1, MPI_INT, next, 9, dup);
    MPI_Send(&a, 1, MPI_INT, next, 9, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    CHECK(back == 1 && other == 2, "dup isolation: world got %d, dup got %d", back, other);
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL, "comm_free");

    /* Blocking sends and receives of predefined types (which skip the
     * general decoding of their arguments) keep MPI's order against the
     * other kinds: a receive posted before them gets the first message,
     * a message sent with a derived type comes between, and statuses name
     * ranks of the communicator (here, reversed), whether the messages
     * arrived before the blocking receives (early) or after (late). */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    int rr;
    MPI_Comm_rank(rev, &rr);
    MPI_Datatype one_long;
    MPI_Type_contiguous(1, MPI_LONG, &one_long);
    MPI_Type_commit(&one_long);
    for (int late = 0; size > 1 && rr < 2 && late < 2; late++) {
        long m[3] = {10 + late, 20 + late, 30 + late}, v[3] = {0, 0, 0};
        if (rr == 0) {
            if (late) {
                MPI_Recv(NULL, 0, MPI_INT, 1, 99, rev, MPI_STATUS_IGNORE);
                usleep(2000);
            }
            MPI_Send(&m[0], 1, MPI_LONG, 1, 7, rev);
            MPI_Send(&m[1], 1, one_long, 1, 7, rev);
            MPI_Send(&m[2], 1, MPI_LONG, 1, 7, rev);
            if (!late) MPI_Send(NULL, 0, MPI_INT, 1, 98, rev);
        } else {
            MPI_Request q;
            MPI_Irecv(&v[0], 1, MPI_LONG, MPI_ANY_SOURCE, 7, rev, &q);
            if (late)
                MPI_Send(NULL, 0, MPI_INT, 0, 99, rev);
            else
                MPI_Recv(NULL, 0, MPI_INT, 0, 98, rev, MPI_STATUS_IGNORE);
            MPI_Recv(&v[1], 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, rev, &st);
            MPI_Get_count(&st, MPI_LONG, &got);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7 && got == 1,
                  "flat recv (late %d): source %d tag %d count %d", late, st.MPI_SOURCE,
                  st.MPI_TAG, got);
            MPI_Recv(&v[2], 2, MPI_LONG, 0, 7, rev, &st);
            MPI_Get_count(&st, MPI_LONG, &got);
            CHECK(got == 1, "flat recv (late %d): count %d", late, got);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            CHECK(v[0] == m[0] && v[1] == m[1] && v[2] == m[2],
                  "order (late %d): %ld %ld %ld", late, v[0], v[1], v[2]);
        }
    }
    MPI_Type_free(&one_long);
    MPI_Comm_free(&rev);

    MPI_Finalize();
    printf("p2p: rank %d ok\n", rank);
    return 0;
}
