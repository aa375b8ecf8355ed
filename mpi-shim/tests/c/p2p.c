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
     * general decoding of their arguments, and may take a message straight
     * from its sender's ring) keep MPI's order against the other kinds: a
     * receive posted before them gets the first message, a message sent
     * with a derived type comes between, and statuses name ranks of the
     * communicator (here, reversed). Early: the messages were handled
     * before the blocking receives start. Late: they wait in the ring,
     * unhandled, while the posted receive is there. */
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
            if (late) MPI_Recv(NULL, 0, MPI_INT, 1, 99, rev, MPI_STATUS_IGNORE);
            MPI_Send(&m[0], 1, MPI_LONG, 1, 7, rev);
            MPI_Send(&m[1], 1, one_long, 1, 7, rev);
            MPI_Send(&m[2], 1, MPI_LONG, 1, 7, rev);
            if (!late) MPI_Send(NULL, 0, MPI_INT, 1, 98, rev);
        } else {
            MPI_Request q;
            MPI_Irecv(&v[0], 1, MPI_LONG, MPI_ANY_SOURCE, 7, rev, &q);
            if (late) {
                MPI_Send(NULL, 0, MPI_INT, 0, 99, rev);
                usleep(2000);
            } else {
                MPI_Recv(NULL, 0, MPI_INT, 0, 98, rev, MPI_STATUS_IGNORE);
            }
            MPI_Recv(&v[1], 1, MPI_LONG, 0, MPI_ANY_TAG, rev, &st);
            MPI_Get_count(&st, MPI_LONG, &got);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7 && got == 1,
                  "flat recv (late %d): source %d tag %d count %d", late, st.MPI_SOURCE,
                  st.MPI_TAG, got);
            MPI_Recv(&v[2], 2, MPI_LONG, MPI_ANY_SOURCE, 7, rev, &st);
            MPI_Get_count(&st, MPI_LONG, &got);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7 && got == 1,
                  "flat recv (late %d): source %d tag %d count %d", late, st.MPI_SOURCE,
                  st.MPI_TAG, got);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            CHECK(v[0] == m[0] && v[1] == m[1] && v[2] == m[2],
                  "order (late %d): %ld %ld %ld", late, v[0], v[1], v[2]);
        }
    }
    MPI_Type_free(&one_long);
    MPI_Comm_free(&rev);

    /* A ping-pong of blocking calls, where a reply that comes soon is
     * taken straight from its sender's ring: inline and eager sizes, a
     * synchronous send, a message of another tag ahead of the one the
     * receive takes, and one longer than the receive's buffer
     * (MPI_ERR_TRUNCATE) all keep their meaning. */
    MPI_Comm ret;
    MPI_Comm_dup(MPI_COMM_WORLD, &ret);
    MPI_Comm_set_errhandler(ret, MPI_ERRORS_RETURN);
    if (size > 1 && rank < 2) {
        enum { MAXLEN = 16384 };
        char *pb = malloc(MAXLEN), *qb = malloc(MAXLEN);
        int lens[] = {0, 1, 8, 64, 200, 1000, 8000, MAXLEN};
        for (int it = 0; it < 400; it++) {
            int n = lens[it % 8];
            if (rank == 0) {
                for (int i = 0; i < n; i++) pb[i] = (char)(it + i);
                if (it % 5 == 0)
                    MPI_Ssend(pb, n, MPI_CHAR, 1, it, MPI_COMM_WORLD);
                else
                    MPI_Send(pb, n, MPI_CHAR, 1, it, MPI_COMM_WORLD);
                MPI_Recv(qb, MAXLEN, MPI_CHAR, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_CHAR, &got);
                int same = got == n && st.MPI_TAG == it + 1 && st.MPI_SOURCE == 1;
                for (int i = 0; same && i < n; i++) same = qb[i] == (char)(it + i + 1);
                CHECK(same, "ping-pong %d: count %d (want %d) tag %d", it, got, n, st.MPI_TAG);
            } else {
                MPI_Recv(qb, MAXLEN, MPI_CHAR, 0, it, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_CHAR, &got);
                CHECK(got == n && st.MPI_SOURCE == 0, "ping-pong %d: count %d", it, got);
                for (int i = 0; i < n; i++) pb[i] = (char)(qb[i] + 1);
                MPI_Send(pb, n, MPI_CHAR, 0, it + 1, MPI_COMM_WORLD);
            }
        }
        for (int it = 0; it < 50; it++) {
            if (rank == 0) {
                MPI_Send(&a, 1, MPI_INT, 1, 501, ret);
                MPI_Send(&b, 1, MPI_INT, 1, 500, ret);
                MPI_Send(pb, 16, MPI_CHAR, 1, 502, ret);
                MPI_Recv(NULL, 0, MPI_INT, 1, 503, ret, MPI_STATUS_IGNORE);
            } else {
                int x = 0, y = 0;
                MPI_Recv(&x, 1, MPI_INT, 0, 500, ret, MPI_STATUS_IGNORE);
                MPI_Recv(&y, 1, MPI_INT, 0, 501, ret, MPI_STATUS_IGNORE);
                CHECK(x == b && y == a, "other tag first (%d): got %d and %d", it, x, y);
                int rc = MPI_Recv(qb, 8, MPI_CHAR, 0, 502, ret, &st);
                int cls = -1;
                MPI_Error_class(rc, &cls);
                CHECK(cls == MPI_ERR_TRUNCATE, "truncated (%d): class %d", it, cls);
                MPI_Send(NULL, 0, MPI_INT, 0, 503, ret);
            }
        }
        /* A large message that waits unmatched (announced, not copied)
         * is older than a small one still in the ring: it is the one a
         * receive of that tag gets. */
        enum { BIG = 1 << 20 };
        char *big = calloc(BIG, 1);
        if (rank == 0) {
            MPI_Request rq;
            big[BIG - 1] = 9;
            MPI_Isend(big, BIG, MPI_CHAR, 1, 600, ret, &rq);
            MPI_Recv(NULL, 0, MPI_INT, 1, 601, ret, MPI_STATUS_IGNORE);
            MPI_Send(pb, 1, MPI_CHAR, 1, 600, ret);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Probe(0, 600, ret, &st);
            MPI_Send(NULL, 0, MPI_INT, 0, 601, ret);
            usleep(2000);
            MPI_Recv(big, BIG, MPI_CHAR, 0, 600, ret, &st);
            MPI_Get_count(&st, MPI_CHAR, &got);
            CHECK(got == BIG && big[BIG - 1] == 9, "older large message: count %d", got);
            MPI_Recv(big, BIG, MPI_CHAR, 0, 600, ret, &st);
            MPI_Get_count(&st, MPI_CHAR, &got);
            CHECK(got == 1, "newer small message: count %d", got);
        }
        free(big);
        free(pb);
        free(qb);
    }
    MPI_Comm_free(&ret);

    MPI_Finalize();
    printf("p2p: rank %d ok\n", rank);
    return 0;
}
