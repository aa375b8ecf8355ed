/* MPI_THREAD_MULTIPLE: threads of a process call MPI at once.
 *
 * - A thread blocked in a receive, a barrier or a wait must not keep the
 *   other threads of its process from calling: each scenario below
 *   deadlocks if a blocked call holds the library while it waits (the
 *   message or contribution it waits for comes from another thread of
 *   its own process, or from a peer that first needs one from it).
 * - Concurrent traffic is correct: THREADS threads per process exchange
 *   messages (eager and rendezvous sizes, by tag), run collectives on
 *   communicators of their own, probe and receive matched messages, and
 *   wait for arrays of requests, all at the same time.
 *
 * Runs on any number of processes; rank r pairs with r ^ 1 (the last rank
 * of an odd count pairs with itself). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define THREADS 4
#define ROUNDS 200
#define BIG (256 * 1024)

static int rank, size, partner;

/* ------------------------------------------------------------------ */
/* 1. A blocked receive does not lock out its process's other threads. */

struct recv_arg {
    MPI_Comm comm;
    int got;
};

static void *blocked_receiver(void *p) {
    struct recv_arg *a = p;
    OK(MPI_Recv(&a->got, 1, MPI_INT, partner, 1, a->comm, MPI_STATUS_IGNORE));
    return NULL;
}

static void receive_while_sending(void) {
    struct recv_arg a = {MPI_COMM_WORLD, -1};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, blocked_receiver, &a) == 0, "pthread_create");
    usleep(20000); /* let the receiver block first */
    int v = 1000 + rank;
    OK(MPI_Send(&v, 1, MPI_INT, partner, 1, MPI_COMM_WORLD));
    pthread_join(t, NULL);
    CHECK(a.got == 1000 + partner, "received %d from %d", a.got, partner);
}

/* ------------------------------------------------------------------ */
/* 2. A thread in a barrier does not keep another from sending what a
 * peer needs before it enters the barrier. */

static MPI_Comm barrier_comm;

static void *barrier_thread(void *p) {
    (void)p;
    OK(MPI_Barrier(barrier_comm));
    return NULL;
}

static void barrier_while_sending(void) {
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &barrier_comm));
    /* A few collectives first, so that the communicator's flag board is
     * set up: the blocking barrier below then runs on it, and must let
     * the other thread call MPI while it waits. */
    for (int i = 0; i < 4; i++) OK(MPI_Barrier(barrier_comm));
    int v = rank, got = -1;
    if (rank % 2 == 0 || partner == rank) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, barrier_thread, NULL) == 0, "pthread_create");
        usleep(20000); /* let the barrier block first */
        if (partner == rank) {
            OK(MPI_Sendrecv(&v, 1, MPI_INT, rank, 2, &got, 1, MPI_INT, rank, 2, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Ssend(&v, 1, MPI_INT, partner, 2, MPI_COMM_WORLD));
            got = partner;
        }
        pthread_join(t, NULL);
    } else {
        /* The receive comes first: the partner's barrier cannot end before
         * this process enters it, which it does once the message came. */
        OK(MPI_Recv(&got, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Barrier(barrier_comm));
    }
    CHECK(got == partner, "got %d", got);
    OK(MPI_Comm_free(&barrier_comm));
}

/* ------------------------------------------------------------------ */
/* 3. MPI_Wait on a generalized request that another thread completes. */

static int query_fn(void *state, MPI_Status *st) {
    (void)state;
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int free_fn(void *state) {
    (void)state;
    return MPI_SUCCESS;
}
static int cancel_fn(void *state, int complete) {
    (void)state;
    (void)complete;
    return MPI_SUCCESS;
}

static void *completer(void *p) {
    usleep(20000); /* let the main thread block in MPI_Wait first */
    OK(MPI_Grequest_complete(*(MPI_Request *)p));
    return NULL;
}

static void wait_for_other_thread(void) {
    MPI_Request req;
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &req));
    MPI_Request copy = req;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, completer, &copy) == 0, "pthread_create");
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "request not freed");
    pthread_join(t, NULL);
}

/* ------------------------------------------------------------------ */
/* 4. THREADS threads at once: ping-pong by tag, collectives on their own
 * communicators, matched probes, and request arrays. */

struct worker {
    int id;
    MPI_Comm comm; /* this thread's own duplicate of MPI_COMM_WORLD */
    char *out, *in;
};

/* A sum that asks MPI about its datatype, as mpi4py's operations do: an
 * application's operation may call MPI while a collective runs it. */
static MPI_Op sum_asking;
static void sum_asking_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int bytes = 0;
    OK(MPI_Type_size(*dt, &bytes));
    CHECK(bytes == (int)sizeof(int), "type size %d", bytes);
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void fill(char *buf, int n, int seed) {
    for (int i = 0; i < n; i++) buf[i] = (char)(seed * 31 + i * 7);
}

static void expect(const char *buf, int n, int seed, const char *what) {
    for (int i = 0; i < n; i++)
        if (buf[i] != (char)(seed * 31 + i * 7)) {
            CHECK(0, "%s: byte %d of %d wrong (seed %d)", what, i, n, seed);
        }
}

/* One message each way with `partner`, on tag `tag`. */
static void exchange(struct worker *w, int n, int tag, int seed) {
    fill(w->out, n, seed + rank);
    memset(w->in, 0, n);
    if (partner == rank) {
        OK(MPI_Sendrecv(w->out, n, MPI_CHAR, rank, tag, w->in, n, MPI_CHAR, rank, tag,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (rank < partner) {
        OK(MPI_Send(w->out, n, MPI_CHAR, partner, tag, MPI_COMM_WORLD));
        OK(MPI_Recv(w->in, n, MPI_CHAR, partner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Recv(w->in, n, MPI_CHAR, partner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Send(w->out, n, MPI_CHAR, partner, tag, MPI_COMM_WORLD));
    }
    expect(w->in, n, seed + partner, "ping-pong");
}

static void *work(void *p) {
    struct worker *w = p;
    int tag = 100 + w->id;

    /* Ping-pong on MPI_COMM_WORLD, told apart by tag. */
    for (int r = 0; r < ROUNDS; r++) exchange(w, 1 + (r * 13 + w->id) % 512, tag, r);
    for (int r = 0; r < 5; r++) exchange(w, BIG, tag, r + w->id);

    /* Collectives on this thread's communicator. */
    for (int r = 0; r < 50; r++) {
        int mine = rank * 10 + w->id + r, sum = 0;
        OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, w->comm));
        int want = 10 * size * (size - 1) / 2 + size * (w->id + r);
        CHECK(sum == want, "thread %d allreduce %d: %d, expected %d", w->id, r, sum, want);
        int root_val = r * 100 + w->id;
        int b = rank == r % size ? root_val : -1;
        OK(MPI_Bcast(&b, 1, MPI_INT, r % size, w->comm));
        CHECK(b == root_val, "thread %d bcast %d: %d", w->id, r, b);
    }
    OK(MPI_Barrier(w->comm));
    for (int r = 0; r < 50; r++) {
        int mine[2] = {rank + r, w->id}, sum[2] = {0, 0};
        OK(MPI_Allreduce(mine, sum, 2, MPI_INT, sum_asking, w->comm));
        CHECK(sum[0] == size * (size - 1) / 2 + size * r && sum[1] == size * w->id,
              "thread %d user-op allreduce %d: %d %d", w->id, r, sum[0], sum[1]);
    }
    /* Long enough to be reduced in slices, each member its own. */
    enum { LONG = 16384 };
    int *lv = malloc(LONG * sizeof *lv), *ls = malloc(LONG * sizeof *ls);
    CHECK(lv && ls, "malloc");
    for (int i = 0; i < LONG; i++) lv[i] = rank + i + w->id;
    OK(MPI_Allreduce(lv, ls, LONG, MPI_INT, sum_asking, w->comm));
    for (int i = 0; i < LONG; i++)
        CHECK(ls[i] == size * (size - 1) / 2 + size * (i + w->id), "thread %d long user-op allreduce [%d]: %d",
              w->id, i, ls[i]);
    free(lv);
    free(ls);

    /* Matched probe: only this thread receives on its tag, so the message
     * it probed is the one it receives. */
    for (int r = 0; r < 20; r++) {
        int v = rank * 1000 + r, got = -1, count = 0;
        MPI_Request sreq;
        OK(MPI_Isend(&v, 1, MPI_INT, partner, tag + 50, MPI_COMM_WORLD, &sreq));
        MPI_Message msg;
        MPI_Status st;
        OK(MPI_Mprobe(partner, tag + 50, MPI_COMM_WORLD, &msg, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 1 && st.MPI_TAG == tag + 50, "mprobe: count %d tag %d", count, st.MPI_TAG);
        OK(MPI_Mrecv(&got, 1, MPI_INT, &msg, MPI_STATUS_IGNORE));
        CHECK(got == partner * 1000 + r, "mrecv: %d", got);
        OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    }

    /* Request arrays: Waitall, Waitany, Waitsome. */
    enum { N = 8 };
    int sendv[N], recvv[N];
    MPI_Request reqs[2 * N];
    MPI_Status sts[2 * N];
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < N; k++) {
            sendv[k] = rank * 100 + k + round;
            recvv[k] = -1;
            OK(MPI_Irecv(&recvv[k], 1, MPI_INT, partner, 200 + w->id * N + k, MPI_COMM_WORLD, &reqs[k]));
        }
        for (int k = 0; k < N; k++)
            OK(MPI_Isend(&sendv[k], 1, MPI_INT, partner, 200 + w->id * N + k, MPI_COMM_WORLD,
                         &reqs[N + k]));
        if (round == 0) {
            OK(MPI_Waitall(2 * N, reqs, sts));
        } else if (round == 1) {
            for (int done = 0; done < 2 * N; done++) {
                int idx = -1;
                OK(MPI_Waitany(2 * N, reqs, &idx, MPI_STATUS_IGNORE));
                CHECK(idx >= 0 && idx < 2 * N, "waitany index %d", idx);
            }
        } else {
            int left = 2 * N;
            while (left > 0) {
                int outcount = 0, idx[2 * N];
                OK(MPI_Waitsome(2 * N, reqs, &outcount, idx, sts));
                CHECK(outcount > 0, "waitsome outcount %d", outcount);
                left -= outcount;
            }
        }
        for (int k = 0; k < N; k++)
            CHECK(recvv[k] == partner * 100 + k + round, "array round %d: %d", round, recvv[k]);
    }
    return NULL;
}

static void threads_at_once(void) {
    struct worker w[THREADS];
    pthread_t t[THREADS];
    OK(MPI_Op_create(sum_asking_fn, 1, &sum_asking));
    /* Communicators are made by one thread (creation is collective, and
     * the threads of different processes must create them in the same
     * order). */
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm));
        w[i].out = malloc(BIG);
        w[i].in = malloc(BIG);
        CHECK(w[i].out && w[i].in, "malloc");
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    OK(MPI_Op_free(&sum_asking));
    for (int i = 0; i < THREADS; i++) {
        OK(MPI_Comm_free(&w[i].comm));
        free(w[i].out);
        free(w[i].in);
    }
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    int query = -1;
    OK(MPI_Query_thread(&query));
    CHECK(query == MPI_THREAD_MULTIPLE, "MPI_Query_thread says %d", query);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    partner = (rank ^ 1) < size ? rank ^ 1 : rank;

    receive_while_sending();
    barrier_while_sending();
    wait_for_other_thread();
    threads_at_once();

    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("threads: rank %d ok\n", rank);
    OK(MPI_Finalize());
    return 0;
}
