/* A malleable application, written as in the seed's Fig. 9 with
 * libmpidynres's names (mpidynres.h, mpidynres_sim.h): an array of N
 * integers (element i holds i) is distributed over the main communicator;
 * at every resource change mpiexec --dynres proposes, rank 0 makes the new
 * main process set (union or difference with the change's delta set) and
 * accepts the change, and the data moves to the new set of processes
 * before leaving ones go. After every step the whole array is checked
 * (its checksum and every element), so nothing is lost as processes come
 * and go.
 *
 *   mpiexec -n 2 --dynres schedule:FILE ./dynres [ITERATIONS [PAUSE_MS]]
 *
 * Each process prints "dynres: id I ok" when it leaves or ends; rank 0 of
 * the last main communicator prints "dynres: final size S after C changes". */
#include <string.h>
#include <unistd.h>
#include "check.h"
#include <mpidynres.h>
#include <mpidynres_sim.h>

#define N 1000

static MPI_Session session;

static int info_value(MPI_Info info, const char *key, char *value, int len) {
    int flag = 0;
    if (info != MPI_INFO_NULL) MPI_Info_get(info, key, len - 1, value, &flag);
    return flag;
}

static MPI_Comm comm_from(const char *pset) {
    MPI_Group g;
    MPI_Comm c;
    OK(MPI_Group_from_session_pset(session, pset, &g));
    OK(MPI_Comm_create_from_group(g, pset, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c));
    MPI_Group_free(&g);
    return c;
}

/* Move every element held in comm to a block distribution over the ranks
 * that stay (stay[r] != 0): gathered at rank 0, checked, scattered. */
static int redistribute(MPI_Comm comm, int *data, int n, int stays) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int *flags = malloc(sizeof(int) * size);
    MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, comm);
    MPI_Allgather(&stays, 1, MPI_INT, flags, 1, MPI_INT, comm);
    int total = 0;
    for (int r = 0; r < size; r++) displs[r] = total, total += counts[r];
    CHECK(total == N, "%d elements in the communicator, expected %d", total, N);
    int *all = rank == 0 ? malloc(sizeof(int) * N) : NULL;
    MPI_Gatherv(data, n, MPI_INT, all, counts, displs, MPI_INT, 0, comm);
    if (rank == 0) {
        /* Each element once: the values are the indices, in any order. */
        char *seen = calloc(N, 1);
        for (int i = 0; i < N; i++) {
            CHECK(all[i] >= 0 && all[i] < N && !seen[all[i]], "element %d lost or doubled", all[i]);
            seen[all[i]] = 1;
        }
        free(seen);
    }
    int nstay = 0;
    for (int r = 0; r < size; r++) nstay += flags[r] != 0;
    int k = 0, off = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = flags[r] ? N / nstay + (k < N % nstay) : 0;
        k += flags[r] != 0;
        displs[r] = off;
        off += counts[r];
    }
    int mine = counts[rank];
    MPI_Scatterv(all, counts, displs, MPI_INT, data, mine, MPI_INT, 0, comm);
    free(all);
    free(counts);
    free(displs);
    free(flags);
    return mine;
}

static int app_main(int argc, char **argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 8;
    /* Optional pause per iteration, in ms, so that requests from outside
     * (tessel-dynres) reach a running job. */
    int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session));
    MPI_Info psets, info;
    char main_pset[MPI_MAX_PSET_NAME_LEN], value[64];
    int iter = 0, *data = malloc(sizeof(int) * N), n = 0;
    OK(MPI_Session_get_psets(session, MPI_INFO_NULL, &psets));
    int original = info_value(psets, "mpi://world", value, sizeof value);
    MPI_Info_free(&psets);
    MPI_Comm comm;
    if (original) {
        strcpy(main_pset, "mpi://world");
        comm = comm_from(main_pset);
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        for (int i = rank; i < N; i += size) data[n++] = i;
    } else {
        /* Started by a change: where to join, from the accepting process. */
        OK(MPI_Session_get_info(session, &info));
        CHECK(info_value(info, "main_pset", main_pset, sizeof main_pset), "main_pset in the session info");
        CHECK(info_value(info, "iter", value, sizeof value), "iter in the session info");
        iter = atoi(value);
        MPI_Info_free(&info);
        comm = comm_from(main_pset);
        n = redistribute(comm, data, 0, 1);
    }
    int changes = 0, leaving = 0;
    for (; iter < iterations && !leaving; iter++) {
        int rank, sum = 0, local = 0;
        if (pause_ms > 0) usleep(pause_ms * 1000);
        MPI_Comm_rank(comm, &rank);
        for (int i = 0; i < n; i++) local += data[i];
        MPI_Allreduce(&local, &sum, 1, MPI_INT, MPI_SUM, comm);
        CHECK(sum == N * (N - 1) / 2, "checksum %d at iteration %d", sum, iter);
        /* The main process asks for a change and tells the others. */
        MPIDYNRES_RC_type type = MPIDYNRES_RC_NONE;
        MPIDYNRES_RC_tag tag = 0;
        char delta[MPI_MAX_PSET_NAME_LEN] = "", next[MPI_MAX_PSET_NAME_LEN] = "";
        if (rank == 0) {
            MPI_Info rc_info = MPI_INFO_NULL;
            OK(MPIDYNRES_RC_get(session, &type, delta, &tag, &rc_info));
            if (rc_info != MPI_INFO_NULL) MPI_Info_free(&rc_info);
            if (type != MPIDYNRES_RC_NONE) {
                MPIDYNRES_pset_op op = type == MPIDYNRES_RC_ADD ? MPIDYNRES_PSET_UNION : MPIDYNRES_PSET_DIFFERENCE;
                OK(MPIDYNRES_pset_create_op(session, MPI_INFO_NULL, main_pset, delta, op, next));
                MPI_Info give;
                MPI_Info_create(&give);
                MPI_Info_set(give, "main_pset", next);
                snprintf(value, sizeof value, "%d", iter + 1);
                MPI_Info_set(give, "iter", value);
                OK(MPIDYNRES_RC_accept(session, tag, give));
                MPI_Info_free(&give);
                /* Accepting twice, or a change never proposed, is an error. */
                MPI_Session check;
                OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &check));
                EXPECT(MPIDYNRES_RC_accept(check, tag, MPI_INFO_NULL), MPI_ERR_ARG);
                EXPECT(MPIX_Dynres_accept(check, 1000000, MPI_INFO_NULL), MPI_ERR_ARG);
                char scratch[MPI_MAX_PSET_NAME_LEN];
                EXPECT(MPIDYNRES_pset_create_op(check, MPI_INFO_NULL, "mpix://none", delta, op, scratch),
                       MPI_ERR_ARG);
                MPI_Session_finalize(&check);
            }
        }
        int t = type;
        MPI_Bcast(&t, 1, MPI_INT, 0, comm);
        if (t == MPIDYNRES_RC_NONE) continue;
        changes++;
        MPI_Bcast(next, sizeof next, MPI_CHAR, 0, comm);
        if (t == MPIDYNRES_RC_ADD) {
            /* The new processes join the union, then get their share. */
            MPI_Comm bigger = comm_from(next);
            MPI_Comm_free(&comm);
            comm = bigger;
            n = redistribute(comm, data, n, 1);
        } else {
            /* Those not in the new main set hand their data over, then go. */
            OK(MPI_Session_get_psets(session, MPI_INFO_NULL, &psets));
            int stays = info_value(psets, next, value, sizeof value);
            MPI_Info_free(&psets);
            n = redistribute(comm, data, n, stays);
            MPI_Comm_free(&comm);
            if (stays) {
                comm = comm_from(next);
            } else {
                CHECK(n == 0, "a leaving process holds %d elements", n);
                leaving = 1;
                MPIDYNRES_exit();
            }
        }
        strcpy(main_pset, next);
    }
    if (!leaving) {
        int rank, size, sum = 0, local = 0;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        for (int i = 0; i < n; i++) local += data[i];
        MPI_Allreduce(&local, &sum, 1, MPI_INT, MPI_SUM, comm);
        CHECK(sum == N * (N - 1) / 2, "final checksum %d", sum);
        if (rank == 0) printf("dynres: final size %d after %d changes\n", size, changes);
        MPI_Comm_free(&comm);
    }
    /* The process's id in mpiexec's universe: its job's first id (the
     * first field of TESSEL_UNIVERSE) plus its rank in the job. */
    int wrank, base = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (getenv("TESSEL_UNIVERSE")) base = atoi(getenv("TESSEL_UNIVERSE"));
    printf("dynres: id %d ok\n", base + wrank);
    free(data);
    MPI_Session_finalize(&session);
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPIDYNRES_SIM_config config = {MPI_COMM_WORLD, MPI_INFO_NULL};
    int rc = MPIDYNRES_SIM_start(config, argc, argv, app_main);
    MPI_Finalize();
    return rc;
}
