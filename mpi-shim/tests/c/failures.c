/* Failure semantics, for tools/tests/failures.rs: in every mode rank 1 (the
 * victim) dies, exits or aborts while the other ranks are blocked in MPI, or
 * (mode "launcher") every rank blocks and the test kills the launcher. The
 * launcher must end the whole job, name the rank that failed, and leave no
 * process behind; no rank may wait forever.
 *
 * Usage: failures MODE [MARKER]. MARKER is ignored: the test passes a
 * unique string so that it can find the job's processes by their command
 * line. Every rank prints "failures: rank R pid P ready" when it is about to
 * block (ranks that initialize nothing, or that may block in the
 * initialization itself, print it at start with R from PMI_RANK). Modes:
 *   recv, probe        the others block in MPI_Recv / MPI_Probe from rank 1,
 *                      which kills itself (SIGKILL) after ~300 ms
 *   wait64m            rank 1 dies 1 ms into a 64 MiB MPI_Isend to rank 0,
 *                      which waits for it; ranks 2, 3 block in MPI_Recv
 *   barrier, allreduce the others block in the collective; rank 1 dies
 *   create_from_group  the others block in MPI_Comm_create_from_group over
 *                      the world's group; rank 1 dies
 *   session_init       no MPI_Init: the others make a communicator from the
 *                      session set mpi://WORLD and enter a barrier on it;
 *                      rank 1 never initializes and dies
 *   launcher           every rank blocks in MPI_Recv from MPI_ANY_SOURCE
 *   exit0, _exit0      after a barrier rank 1 returns 0 from main / calls
 *                      _exit(0) without MPI_Finalize; the others block in
 *                      MPI_Recv from it
 *   noinit             rank 1 returns 0 at once, never initialized; the
 *                      others MPI_Init and MPI_Recv from it
 *   abort0             after a barrier rank 1 calls MPI_Abort with code 0
 *   stress             every rank exchanges messages forever (a ring of
 *                      MPI_Sendrecv of random sizes up to 1 MiB, an
 *                      MPI_Allreduce now and then); the test kills one
 * A blocking call that returns anyway is reported on stderr and the rank
 * exits with code 3. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

#define VICTIM 1
/* Long enough for the others to be blocked when the victim dies. */
#define VICTIM_DELAY_MS 300

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static void ready(int rank) {
    printf("failures: rank %d pid %d ready\n", rank, (int)getpid());
    fflush(stdout);
}

/* This process's rank from the launcher's environment (before, or
 * without, any initialization). */
static int env_rank(void) {
    const char *r = getenv("PMI_RANK");
    if (!r) {
        fprintf(stderr, "failures: PMI_RANK is not set: run me under mpiexec\n");
        exit(2);
    }
    return atoi(r);
}

static int init_world(int *argc, char ***argv) {
    int rank;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* A call that must block forever (or end the job) returned. */
static int returned(int rank, const char *call) {
    fprintf(stderr, "failures: rank %d: %s returned instead of blocking until the job ends\n",
            rank, call);
    return 3;
}

/* The victim's end in most modes: ready, a pause, then SIGKILL. */
static int victim_dies(int rank) {
    ready(rank);
    sleep_ms(VICTIM_DELAY_MS);
    raise(SIGKILL);
    return 0; /* not reached */
}

/* Block in MPI_Recv from `source` of MPI_COMM_WORLD. */
static int block_in_recv(int rank, int source) {
    int x = 0;
    ready(rank);
    MPI_Recv(&x, 1, MPI_INT, source, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return returned(rank, "MPI_Recv");
}

static int mode_recv(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    return rank == VICTIM ? victim_dies(rank) : block_in_recv(rank, VICTIM);
}

static int mode_probe(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    if (rank == VICTIM) return victim_dies(rank);
    ready(rank);
    MPI_Probe(VICTIM, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return returned(rank, "MPI_Probe");
}

static int mode_wait64m(int *argc, char ***argv) {
    const int n = 64 << 20;
    int rank = init_world(argc, argv);
    char *buf = malloc(n);
    CHECK(buf, "cannot allocate %d bytes", n);
    memset(buf, rank, n); /* the pages exist before the transfer starts */
    MPI_Request req = MPI_REQUEST_NULL;
    /* Posted before the barrier: the send matches at once. */
    if (rank == 0) OK(MPI_Irecv(buf, n, MPI_BYTE, VICTIM, 0, MPI_COMM_WORLD, &req));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == VICTIM) {
        ready(rank);
        OK(MPI_Isend(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req));
        sleep_ms(1); /* die in the middle of the transfer */
        raise(SIGKILL);
    }
    if (rank != 0) return block_in_recv(rank, VICTIM);
    ready(rank);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return returned(rank, "MPI_Wait");
}

static int mode_barrier(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    if (rank == VICTIM) return victim_dies(rank);
    ready(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    return returned(rank, "MPI_Barrier");
}

static int mode_allreduce(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    if (rank == VICTIM) return victim_dies(rank);
    int in[4] = {rank, 1, 2, 3}, out[4];
    ready(rank);
    MPI_Allreduce(in, out, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return returned(rank, "MPI_Allreduce");
}

static int mode_create_from_group(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    if (rank == VICTIM) return victim_dies(rank);
    MPI_Group group;
    MPI_Comm comm;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &group));
    ready(rank);
    MPI_Comm_create_from_group(group, "failures", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
    return returned(rank, "MPI_Comm_create_from_group");
}

static int mode_session_init(int *argc, char ***argv) {
    (void)argc, (void)argv;
    int rank = env_rank();
    if (rank == VICTIM) return victim_dies(rank);
    MPI_Session s;
    MPI_Group group;
    MPI_Comm comm;
    ready(rank); /* the initialization itself may wait for the victim */
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &s);
    MPI_Group_from_session_pset(s, "mpi://WORLD", &group);
    MPI_Comm_create_from_group(group, "failures", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
    MPI_Barrier(comm);
    return returned(rank, "MPI_Barrier");
}

static int mode_launcher(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    return block_in_recv(rank, MPI_ANY_SOURCE);
}

/* exit0 and _exit0: rank 1 leaves without MPI_Finalize, by returning from
 * main (at-exit handlers run) or by _exit (they do not). */
static int leave_without_finalize(int *argc, char ***argv, int use_exit) {
    int rank = init_world(argc, argv);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank != VICTIM) return block_in_recv(rank, VICTIM);
    ready(rank);
    if (use_exit) _exit(0);
    return 0;
}

static int mode_exit0(int *argc, char ***argv) {
    return leave_without_finalize(argc, argv, 0);
}

static int mode__exit0(int *argc, char ***argv) {
    return leave_without_finalize(argc, argv, 1);
}

static int mode_noinit(int *argc, char ***argv) {
    int rank = env_rank();
    ready(rank); /* the others may block in MPI_Init already */
    if (rank == VICTIM) return 0;
    MPI_Init(argc, argv);
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, VICTIM, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return returned(rank, "MPI_Recv");
}

static int mode_abort0(int *argc, char ***argv) {
    int rank = init_world(argc, argv);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank != VICTIM) return block_in_recv(rank, VICTIM);
    ready(rank);
    MPI_Abort(MPI_COMM_WORLD, 0);
    return returned(rank, "MPI_Abort");
}

/* xorshift64: random message sizes without any library state. */
static unsigned long long next_random(unsigned long long *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int mode_stress(int *argc, char ***argv) {
    const int max = 1 << 20;
    int rank = init_world(argc, argv), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = malloc(max), *in = malloc(max);
    CHECK(out && in, "cannot allocate 2 x %d bytes", max);
    memset(out, rank, max);
    unsigned long long x = ((unsigned long long)time(NULL) << 16) ^ (getpid() * 2654435761ULL);
    x |= 1; /* never zero */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    ready(rank);
    for (unsigned long i = 0;; i++) {
        int n = (int)(next_random(&x) % (max + 1));
        OK(MPI_Sendrecv(out, n, MPI_BYTE, right, 0, in, max, MPI_BYTE, left, 0, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
        if (i % 16 == 0) {
            int v[3] = {rank, n, 1}, sum[3];
            OK(MPI_Allreduce(v, sum, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            CHECK(sum[2] == size, "MPI_Allreduce counted %d ranks of %d", sum[2], size);
        }
    }
    return 0; /* not reached */
}

static const struct {
    const char *name;
    int (*run)(int *argc, char ***argv);
} MODES[] = {
    {"recv", mode_recv},
    {"probe", mode_probe},
    {"wait64m", mode_wait64m},
    {"barrier", mode_barrier},
    {"allreduce", mode_allreduce},
    {"create_from_group", mode_create_from_group},
    {"session_init", mode_session_init},
    {"launcher", mode_launcher},
    {"exit0", mode_exit0},
    {"_exit0", mode__exit0},
    {"noinit", mode_noinit},
    {"abort0", mode_abort0},
    {"stress", mode_stress},
};

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: failures MODE [MARKER]\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++)
        if (strcmp(argv[1], MODES[i].name) == 0) return MODES[i].run(&argc, &argv);
    fprintf(stderr, "failures: unknown mode %s\n", argv[1]);
    return 2;
}
