/* Point-to-point beyond send and receive: every send mode at every
 * protocol size, probes and matched probes, cancel, persistent requests,
 * the "any"/"some"/"all" completion functions, buffered sends and their
 * buffer, synchronous-send ordering, generalized requests,
 * Sendrecv_replace, and error classes under MPI_ERRORS_RETURN. */
#include <string.h>
#include "check.h"

static int rank, size, next, prev;

/* 0 B, small, eager (16 KiB) and rendezvous (> 1 MiB). */
#define NSIZES 4
static const int SIZES[NSIZES] = {0, 10, 16384, (1 << 20) + 24};
#define MAXSIZE ((1 << 20) + 24)

static void fill(unsigned char *b, int n, int seed) {
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(i * 7 + seed * 13 + 1);
}

static void expect_bytes(const unsigned char *b, int n, int seed, const char *what) {
    for (int i = 0; i < n; i++) {
        unsigned char want = (unsigned char)(i * 7 + seed * 13 + 1);
        CHECK(b[i] == want, "%s: byte %d of %d is %d, expected %d", what, i, n, b[i], want);
    }
}

static int count_of(MPI_Status *st, MPI_Datatype t) {
    int n = -1;
    MPI_Get_count(st, t, &n);
    return n;
}

static void check_empty(MPI_Status *st, const char *what) {
    int cancelled = 1;
    MPI_Test_cancelled(st, &cancelled);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG &&
              count_of(st, MPI_BYTE) == 0 && !cancelled,
          "%s: not the empty status (source %d tag %d)", what, st->MPI_SOURCE, st->MPI_TAG);
}

/* Every send mode, blocking and not, around the ring at every size. The
 * receive is posted and a barrier passed before the send, as a ready
 * send requires. */
static void send_modes(unsigned char *out, unsigned char *in) {
    enum { SEND, BSEND, SSEND, RSEND, ISEND, IBSEND, ISSEND, IRSEND, NMODES };
    static const char *names[NMODES] = {"Send", "Bsend", "Ssend", "Rsend",
                                        "Isend", "Ibsend", "Issend", "Irsend"};
    /* Room for the messages of a few rounds: a buffered message occupies
     * the buffer until its receiver took it. */
    int bufsize = 4 * (MAXSIZE + MPI_BSEND_OVERHEAD);
    void *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);
    for (int m = 0; m < NMODES; m++) {
        for (int k = 0; k < NSIZES; k++) {
            int n = SIZES[k], tag = 100 + m * NSIZES + k;
            MPI_Request rr, sr = MPI_REQUEST_NULL;
            MPI_Status st;
            memset(in, 0, n + 1);
            MPI_Irecv(in, n + 1, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &rr);
            MPI_Barrier(MPI_COMM_WORLD);
            fill(out, n, rank + tag);
            switch (m) {
            case SEND: MPI_Send(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD); break;
            case BSEND: MPI_Bsend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD); break;
            case SSEND: MPI_Ssend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD); break;
            case RSEND: MPI_Rsend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD); break;
            case ISEND: MPI_Isend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &sr); break;
            case IBSEND: MPI_Ibsend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &sr); break;
            case ISSEND: MPI_Issend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &sr); break;
            case IRSEND: MPI_Irsend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &sr); break;
            }
            /* A buffered send's buffer is free for reuse at once. */
            if (m == BSEND || m == IBSEND) memset(out, 0xee, n);
            MPI_Wait(&rr, &st);
            MPI_Wait(&sr, MPI_STATUS_IGNORE);
            CHECK(rr == MPI_REQUEST_NULL && sr == MPI_REQUEST_NULL, "%s: handles", names[m]);
            CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == tag && count_of(&st, MPI_BYTE) == n,
                  "%s of %d bytes: source %d tag %d count %d", names[m], n, st.MPI_SOURCE,
                  st.MPI_TAG, count_of(&st, MPI_BYTE));
            expect_bytes(in, n, prev + tag, names[m]);
        }
    }
    void *addr = NULL;
    int got = 0;
    MPI_Buffer_detach(&addr, &got);
    CHECK(addr == attached && got == bufsize, "detach returned %p/%d", addr, got);
    free(attached);
}

/* Probe, then receive with the probed size; Iprobe until found. */
static void probes(unsigned char *out, unsigned char *in) {
    for (int k = 0; k < NSIZES; k++) {
        int n = SIZES[k] + rank, tag = 200 + k;
        MPI_Request sr;
        MPI_Status st;
        fill(out, n, rank + k);
        MPI_Isend(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &sr);
        if (k % 2) {
            int flag = 0;
            while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st);
        } else {
            MPI_Probe(prev, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        }
        int want = SIZES[k] + prev;
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == tag && count_of(&st, MPI_BYTE) == want,
              "probe: source %d tag %d count %d, expected %d", st.MPI_SOURCE, st.MPI_TAG,
              count_of(&st, MPI_BYTE), want);
        unsigned char *exact = malloc(want + 1);
        MPI_Recv(exact, count_of(&st, MPI_BYTE), MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG,
                 MPI_COMM_WORLD, &st);
        expect_bytes(exact, want, prev + k, "probed receive");
        free(exact);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
    }
    /* MPI_PROC_NULL: found at once, with the PROC_NULL status. */
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "iprobe proc null");
    MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "probe proc null");
}

/* Every rank but 0 sends rank 0 two messages; rank 0 takes them with
 * matched probes from any source and receives each with its size. */
static void matched_probes(unsigned char *out, unsigned char *in) {
    const int tag = 300;
    if (rank != 0) {
        for (int k = 0; k < 2; k++) {
            int n = k ? MAXSIZE - rank : 100 + rank;
            fill(out, n, rank * 2 + k);
            MPI_Send(out, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
        }
        MPI_Send(&rank, 1, MPI_INT, 0, tag + 1, MPI_COMM_WORLD);
    } else {
        int seen[2 * 8 + 2] = {0};
        for (int got = 0; got < 2 * (size - 1); got++) {
            MPI_Message msg;
            MPI_Status st;
            if (got % 2) {
                MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &msg, &st);
            } else {
                int flag = 0;
                while (!flag) MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &msg, &st);
            }
            int n = count_of(&st, MPI_BYTE), src = st.MPI_SOURCE;
            int k = n >= MAXSIZE - size ? 1 : 0;
            CHECK(src > 0 && src < size && n == (k ? MAXSIZE - src : 100 + src),
                  "mprobe: source %d count %d", src, n);
            CHECK(!seen[2 * src + k], "message (%d, %d) seen twice", src, k);
            seen[2 * src + k] = 1;
            memset(in, 0, n);
            if (got % 3 == 1) {
                MPI_Request mr;
                MPI_Imrecv(in, n, MPI_BYTE, &msg, &mr);
                CHECK(msg == MPI_MESSAGE_NULL, "imrecv did not reset the message");
                MPI_Wait(&mr, &st);
            } else {
                MPI_Mrecv(in, n, MPI_BYTE, &msg, &st);
                CHECK(msg == MPI_MESSAGE_NULL, "mrecv did not reset the message");
            }
            CHECK(st.MPI_SOURCE == src && count_of(&st, MPI_BYTE) == n, "mrecv status");
            expect_bytes(in, n, src * 2 + k, "mrecv");
        }
        for (int src = 1; src < size; src++) {
            int who;
            MPI_Recv(&who, 1, MPI_INT, src, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    /* A matched probe of MPI_PROC_NULL. */
    MPI_Message msg;
    MPI_Status st;
    MPI_Mprobe(MPI_PROC_NULL, tag, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe proc null");
    int x = 5;
    MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && x == 5, "mrecv no proc");
    int flag = 0;
    MPI_Improbe(MPI_PROC_NULL, tag, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "improbe proc null");
    MPI_Request r;
    MPI_Imrecv(&x, 1, MPI_INT, &msg, &r);
    MPI_Wait(&r, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "imrecv no proc");
}

/* Cancel a receive nobody sends to, and one that completed. */
static void cancel(void) {
    int x = -1, y = -1, flag = 0;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 400, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    CHECK(r != MPI_REQUEST_NULL, "cancel freed the request");
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag && x == -1 && r == MPI_REQUEST_NULL, "cancelled receive");

    int token = rank;
    MPI_Irecv(&y, 1, MPI_INT, prev, 401, MPI_COMM_WORLD, &r);
    MPI_Send(&token, 1, MPI_INT, next, 401, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Request_get_status(r, &flag, &st);
    CHECK(r != MPI_REQUEST_NULL && st.MPI_SOURCE == prev, "get_status");
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && y == prev && st.MPI_SOURCE == prev, "a completed receive was cancelled");

    /* A send that cannot be cancelled completes normally. */
    MPI_Issend(&token, 1, MPI_INT, next, 402, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Status s;
    MPI_Recv(&y, 1, MPI_INT, prev, 402, MPI_COMM_WORLD, &s);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && y == prev, "cancelled send");

    /* Status_set_cancelled sets and clears the bit. */
    MPI_Status_set_cancelled(&s, 1);
    MPI_Test_cancelled(&s, &flag);
    CHECK(flag, "set_cancelled 1");
    MPI_Status_set_cancelled(&s, 0);
    MPI_Test_cancelled(&s, &flag);
    CHECK(!flag && count_of(&s, MPI_INT) == 1, "set_cancelled 0 kept the count");
}

/* Persistent sends of every mode and receives, several rounds. */
static void persistent(unsigned char *out, unsigned char *in) {
    /* A buffered message occupies the buffer until the receiver took it,
     * and a fast sender may be a few rounds ahead of its receiver. */
    int bufsize = 8 * (MAXSIZE + MPI_BSEND_OVERHEAD);
    void *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);
    for (int k = 0; k < NSIZES; k++) {
        int n = SIZES[k], tag = 500 + k;
        MPI_Request rq[2];
        MPI_Status st[2];
        MPI_Recv_init(in, n, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &rq[0]);
        for (int mode = 0; mode < 4; mode++) {
            switch (mode) {
            case 0: MPI_Send_init(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &rq[1]); break;
            case 1: MPI_Bsend_init(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &rq[1]); break;
            case 2: MPI_Ssend_init(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &rq[1]); break;
            case 3: MPI_Rsend_init(out, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &rq[1]); break;
            }
            /* Inactive: Wait and Test return the empty status at once. */
            MPI_Wait(&rq[1], &st[1]);
            check_empty(&st[1], "wait on inactive");
            int flag = 0;
            MPI_Test(&rq[1], &flag, &st[1]);
            CHECK(flag && rq[1] != MPI_REQUEST_NULL, "test on inactive");
            for (int round = 0; round < 3; round++) {
                fill(out, n, rank + round + mode);
                memset(in, 0, n);
                if (mode == 3) {
                    MPI_Start(&rq[0]);
                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Start(&rq[1]);
                } else {
                    MPI_Startall(2, rq);
                }
                MPI_Waitall(2, rq, st);
                CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL,
                      "persistent handles were reset");
                CHECK(st[0].MPI_SOURCE == prev && count_of(&st[0], MPI_BYTE) == n,
                      "persistent round %d mode %d", round, mode);
                expect_bytes(in, n, prev + round + mode, "persistent");
            }
            MPI_Request_free(&rq[1]);
            CHECK(rq[1] == MPI_REQUEST_NULL, "request_free");
        }
        MPI_Request_free(&rq[0]);
    }
    /* Freeing an active persistent send: it still completes. */
    int token = rank, got = -1;
    MPI_Request s;
    MPI_Send_init(&token, 1, MPI_INT, next, 510, MPI_COMM_WORLD, &s);
    MPI_Start(&s);
    MPI_Request_free(&s);
    MPI_Recv(&got, 1, MPI_INT, prev, 510, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == prev, "freed active persistent send");
    void *addr;
    int sz;
    MPI_Buffer_detach(&addr, &sz);
    free(attached);
}

/* Waitany, Waitsome, Testany, Testsome, Testall over receives with a
 * null request among them; senders send in reverse order. */
#define NREQ 5
static void completion(int which) {
    int vals[NREQ], tags[NREQ] = {600, 601, -1, 602, 603};
    MPI_Request rq[NREQ];
    for (int i = 0; i < NREQ; i++) {
        vals[i] = -1;
        rq[i] = MPI_REQUEST_NULL;
        if (tags[i] >= 0) MPI_Irecv(&vals[i], 1, MPI_INT, prev, tags[i], MPI_COMM_WORLD, &rq[i]);
    }
    for (int i = NREQ - 1; i >= 0; i--) {
        if (tags[i] < 0) continue;
        int v = rank * 100 + tags[i];
        MPI_Send(&v, 1, MPI_INT, next, tags[i], MPI_COMM_WORLD);
    }
    int done = 0, flag, idx, n, indices[NREQ];
    MPI_Status st, sts[NREQ];
    while (done < NREQ - 1) {
        switch (which) {
        case 0:
            MPI_Waitany(NREQ, rq, &idx, &st);
            CHECK(idx >= 0 && idx < NREQ && tags[idx] >= 0 && st.MPI_TAG == tags[idx],
                  "waitany index %d", idx);
            done++;
            break;
        case 1:
            MPI_Testany(NREQ, rq, &idx, &flag, &st);
            if (flag) {
                CHECK(idx != MPI_UNDEFINED && st.MPI_TAG == tags[idx], "testany");
                done++;
            }
            break;
        case 2:
        case 3:
            if (which == 2)
                MPI_Waitsome(NREQ, rq, &n, indices, sts);
            else
                MPI_Testsome(NREQ, rq, &n, indices, sts);
            CHECK(n != MPI_UNDEFINED && (which == 3 || n > 0), "some: outcount %d", n);
            for (int j = 0; j < n; j++)
                CHECK(rq[indices[j]] == MPI_REQUEST_NULL && sts[j].MPI_TAG == tags[indices[j]],
                      "some: entry %d", j);
            done += n;
            break;
        case 4:
            MPI_Testall(NREQ, rq, &flag, sts);
            if (flag) {
                for (int j = 0; j < NREQ; j++)
                    if (tags[j] >= 0) CHECK(sts[j].MPI_TAG == tags[j], "testall status %d", j);
                done = NREQ - 1;
            }
            break;
        }
    }
    for (int i = 0; i < NREQ; i++) {
        CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not completed", i);
        if (tags[i] >= 0) CHECK(vals[i] == prev * 100 + tags[i], "value %d", i);
    }
    /* Nothing active: MPI_UNDEFINED. */
    MPI_Waitany(NREQ, rq, &idx, &st);
    CHECK(idx == MPI_UNDEFINED, "waitany with no active request");
    MPI_Testany(NREQ, rq, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED, "testany with no active request");
    MPI_Waitsome(NREQ, rq, &n, indices, sts);
    CHECK(n == MPI_UNDEFINED, "waitsome with no active request");
    MPI_Testsome(NREQ, rq, &n, indices, sts);
    CHECK(n == MPI_UNDEFINED, "testsome with no active request");
    MPI_Testall(NREQ, rq, &flag, sts);
    CHECK(flag, "testall with no active request");
}

/* A synchronous send stays incomplete until the receiver matches it:
 * the receiver sees the message arrive (Iprobe), tells the sender, the
 * sender checks its send is incomplete and says so, and only then is the
 * receive posted. Pairs (0,1), (2,3)...; a lone last rank pairs itself. */
static void synchronous(unsigned char *out, unsigned char *in) {
    int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
    for (int k = 0; k < NSIZES; k++) {
        int n = SIZES[k], tag = 700 + k, flag = 1, token = 0;
        MPI_Request s;
        MPI_Status st;
        fill(out, n, rank + k);
        MPI_Issend(out, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &s);
        /* Wait until the peer's message has arrived here. */
        int arrived = 0;
        while (!arrived) MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &arrived, &st);
        CHECK(count_of(&st, MPI_BYTE) == n, "probed %d bytes", count_of(&st, MPI_BYTE));
        MPI_Sendrecv(&token, 1, MPI_INT, peer, 710, &token, 1, MPI_INT, peer, 710,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* The peer has not posted its receive: our send cannot be done. */
        MPI_Test(&s, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "a %d-byte synchronous send completed before its receive", n);
        MPI_Sendrecv(&token, 1, MPI_INT, peer, 711, &token, 1, MPI_INT, peer, 711,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(in, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        expect_bytes(in, n, peer + k, "ssend");
        MPI_Wait(&s, MPI_STATUS_IGNORE);
    }
}

/* Generalized requests: callbacks are called as MPI-4.0 §13.2 says, and
 * may make MPI calls. */
static int queries, frees, cancels, cancel_complete;
static int query_fn(void *extra, MPI_Status *st) {
    int me = -1;
    queries++;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    CHECK(me == rank, "MPI_Comm_rank in a query callback");
    st->MPI_SOURCE = *(int *)extra;
    st->MPI_TAG = 77;
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}
static int free_fn(void *extra) {
    int n = 0;
    (void)extra;
    frees++;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == size, "MPI_Comm_size in a free callback");
    return MPI_SUCCESS;
}
static int cancel_fn(void *extra, int complete) {
    int flag = 1;
    MPI_Status st;
    (void)extra;
    cancels++;
    cancel_complete = complete;
    MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag, "nothing sent with tag 12345");
    return MPI_SUCCESS;
}

static void generalized(void) {
    int state = 42, flag = 1;
    MPI_Request g;
    MPI_Status st;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &state, &g);
    MPI_Test(&g, &flag, &st);
    CHECK(!flag && queries == 0 && frees == 0, "incomplete generalized request tested done");
    MPI_Cancel(&g);
    CHECK(cancels == 1 && cancel_complete == 0, "cancel callback");
    MPI_Grequest_complete(g);
    MPI_Request_get_status(g, &flag, &st);
    CHECK(flag && queries == 1 && frees == 0 && st.MPI_SOURCE == 42, "get_status");
    MPI_Wait(&g, &st);
    CHECK(g == MPI_REQUEST_NULL && queries == 2 && frees == 1 && st.MPI_SOURCE == 42 &&
              st.MPI_TAG == 77,
          "wait: queries %d frees %d", queries, frees);
    /* Freed before completion: freed (free callback) at completion. */
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &state, &g);
    MPI_Request copy = g;
    MPI_Request_free(&g);
    CHECK(g == MPI_REQUEST_NULL && frees == 1, "freed early");
    MPI_Grequest_complete(copy);
    CHECK(frees == 2 && queries == 2, "free at completion");
    /* In a Waitall with other requests. */
    MPI_Request rq[2];
    int x = rank, y = -1;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &state, &rq[0]);
    MPI_Irecv(&y, 1, MPI_INT, prev, 800, MPI_COMM_WORLD, &rq[1]);
    MPI_Send(&x, 1, MPI_INT, next, 800, MPI_COMM_WORLD);
    MPI_Grequest_complete(rq[0]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    CHECK(frees == 3 && sts[0].MPI_TAG == 77 && y == prev, "grequest in waitall");
}

/* Sendrecv_replace around the ring, small and large. */
static void replace(void) {
    int counts[] = {1, 300000};
    for (int k = 0; k < 2; k++) {
        int n = counts[k];
        double *v = malloc(sizeof(double) * n);
        for (int i = 0; i < n; i++) v[i] = rank * 1e6 + i;
        MPI_Status st;
        MPI_Sendrecv_replace(v, n, MPI_DOUBLE, next, 900, prev, 900, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == prev && count_of(&st, MPI_DOUBLE) == n, "replace status");
        for (int i = 0; i < n; i++) CHECK(v[i] == prev * 1e6 + i, "replace element %d", i);
        /* With MPI_PROC_NULL both ways: unchanged. */
        MPI_Sendrecv_replace(v, n, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0,
                             MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && v[0] == prev * 1e6, "replace proc null");
        free(v);
    }
}

/* Buffered sends need room in the attached buffer. */
static void bsend_buffer(void) {
    int x[256] = {0};
    EXPECT(MPI_Bsend(x, 1, MPI_INT, next, 950, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    char small[100 + MPI_BSEND_OVERHEAD];
    MPI_Buffer_attach(small, sizeof small);
    EXPECT(MPI_Buffer_attach(small, sizeof small), MPI_ERR_BUFFER);
    EXPECT(MPI_Bsend(x, 256, MPI_INT, next, 950, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Request r;
    EXPECT(MPI_Ibsend(x, 256, MPI_INT, next, 950, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER);
    x[0] = rank;
    EXPECT(MPI_Bsend(x, 25, MPI_INT, next, 951, MPI_COMM_WORLD), MPI_SUCCESS);
    int y[25];
    MPI_Recv(y, 25, MPI_INT, prev, 951, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(y[0] == prev, "bsend payload");
    void *addr;
    int sz;
    MPI_Buffer_detach(&addr, &sz);
    CHECK(addr == (void *)small && sz == (int)sizeof small, "detach small");
    EXPECT(MPI_Buffer_attach(small, -1), MPI_ERR_ARG);
}

static void errors(void) {
    int x = 0, flag;
    MPI_Request bad = (MPI_Request)0x12345, null = MPI_REQUEST_NULL, r;
    MPI_Status st;
    MPI_Message msg = MPI_MESSAGE_NULL;
    EXPECT(MPI_Wait(&bad, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Test(&bad, &flag, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Request_free(&null), MPI_ERR_REQUEST);
    EXPECT(MPI_Cancel(&null), MPI_ERR_REQUEST);
    EXPECT(MPI_Start(&bad), MPI_ERR_REQUEST);
    EXPECT(MPI_Grequest_complete(bad), MPI_ERR_REQUEST);
    MPI_Request arr[2] = {MPI_REQUEST_NULL, bad};
    MPI_Status arrst[2];
    EXPECT(MPI_Waitall(2, arr, arrst), MPI_ERR_REQUEST);
    EXPECT(MPI_Waitany(2, arr, &x, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Testsome(2, arr, &x, &x, arrst), MPI_ERR_REQUEST);
    EXPECT(MPI_Startall(2, arr), MPI_ERR_REQUEST);
    EXPECT(MPI_Waitall(-1, arr, arrst), MPI_ERR_COUNT);
    EXPECT(MPI_Ssend(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Issend(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK);
    EXPECT(MPI_Rsend(&x, 1, MPI_INT, next, -3, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send_init(&x, -1, MPI_INT, next, 0, MPI_COMM_WORLD, &r), MPI_ERR_COUNT);
    EXPECT(MPI_Recv_init(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK);
    EXPECT(MPI_Probe(size, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    EXPECT(MPI_Iprobe(0, -7, MPI_COMM_WORLD, &flag, &st), MPI_ERR_TAG);
    EXPECT(MPI_Improbe(0, 0, MPI_COMM_NULL, &flag, &msg, &st), MPI_ERR_COMM);
    EXPECT(MPI_Mrecv(&x, 1, MPI_INT, &msg, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Sendrecv_replace(&x, 1, MPI_INT, size, 0, 0, 0, MPI_COMM_WORLD, &st),
           MPI_ERR_RANK);
    /* Starting a request that is not persistent, or one already active. */
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 990, MPI_COMM_WORLD, &r);
    EXPECT(MPI_Start(&r), MPI_ERR_REQUEST);
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Recv_init(&x, 1, MPI_INT, MPI_ANY_SOURCE, 991, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    EXPECT(MPI_Start(&r), MPI_ERR_REQUEST);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "cancelled persistent receive");
    EXPECT(MPI_Cancel(&r), MPI_ERR_REQUEST); /* inactive */
    MPI_Request_free(&r);
    /* Truncation shows in the status of a Waitall: MPI_ERR_IN_STATUS. */
    int big[4] = {1, 2, 3, 4}, small = 0;
    MPI_Request rq[2];
    MPI_Status sts[2];
    MPI_Irecv(&small, 1, MPI_INT, prev, 992, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(big, 4, MPI_INT, next, 992, MPI_COMM_WORLD, &rq[1]);
    EXPECT(MPI_Waitall(2, rq, sts), MPI_ERR_IN_STATUS);
    int c0 = -1, c1 = -1;
    MPI_Error_class(sts[0].MPI_ERROR, &c0);
    MPI_Error_class(sts[1].MPI_ERROR, &c1);
    CHECK(c0 == MPI_ERR_TRUNCATE && c1 == MPI_SUCCESS, "statuses: %d %d", c0, c1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    report_library();
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    unsigned char *out = malloc(MAXSIZE + 16), *in = malloc(MAXSIZE + 16);

    send_modes(out, in);
    probes(out, in);
    matched_probes(out, in);
    cancel();
    persistent(out, in);
    for (int which = 0; which < 5; which++) completion(which);
    synchronous(out, in);
    generalized();
    replace();
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bsend_buffer();
    errors();

    /* Left to MPI_Finalize: an attached buffer (finalizing detaches it),
     * a freed active send, and a freed receive nobody sends to. */
    int tailsize = MAXSIZE + MPI_BSEND_OVERHEAD;
    void *tail = malloc(tailsize);
    static int never = -1, token;
    int got = -1;
    MPI_Request r;
    MPI_Buffer_attach(tail, tailsize);
    fill(out, MAXSIZE, rank);
    MPI_Bsend(out, MAXSIZE, MPI_BYTE, next, 1000, MPI_COMM_WORLD);
    token = rank;
    MPI_Isend(&token, 1, MPI_INT, next, 1001, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
    MPI_Irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 1002, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
    MPI_Recv(in, MAXSIZE, MPI_BYTE, prev, 1000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    expect_bytes(in, MAXSIZE, prev, "buffered before finalize");
    MPI_Recv(&got, 1, MPI_INT, prev, 1001, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == prev, "freed send");

    MPI_Barrier(MPI_COMM_WORLD);
    printf("p2pmore: rank %d ok\n", rank);
    MPI_Finalize();
    if (never != -1) {
        fprintf(stderr, "a freed receive got a message\n");
        return 1;
    }
    free(tail);
    free(out);
    free(in);
    return 0;
}
