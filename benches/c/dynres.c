/* Resource changes (Tessel's mpiexec --dynres; MPIX_ calls, so Tessel
 * only): the time from accepting a change to the new main communicator
 * being usable, for adding and removing K processes, and the memory of the
 * node's processes after each change.
 *
 *   mpiexec -n 1 --max-procs 40 --dynres schedule:benches/c/dynres.schedule ./dynres
 *
 * The schedule adds and then removes 1, 4, 16 and 28 processes. Rank 0 of
 * the main communicator asks for each change, makes the next main set
 * (union or difference with the delta) and accepts it.
 *   change_ms kind=add|remove procs=K: from just before MPIX_Dynres_accept
 *     to the end of a barrier over the new main communicator, at rank 0;
 *   pss_mib kind=add|remove procs=K: the sum over the main communicator's
 *     processes of Pss (/proc/self/smaps_rollup), after the change.
 * One measurement per change; run the program several times for medians. */
#include "bench.h"

static MPI_Session session;

static double pss_mib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kib;
    double sum = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld kB", &kib) == 1)
            sum += (double)kib;
    fclose(f);
    return sum / 1024.0;
}

static MPI_Comm comm_from(const char *pset)
{
    MPI_Group g;
    MPI_Comm c;
    MPI_Group_from_session_pset(session, pset, &g);
    MPI_Comm_create_from_group(g, pset, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c);
    MPI_Group_free(&g);
    return c;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifndef MPIX_HAS_DYNRES
    printf("result bench=dynres metric=unsupported value=0 unit=none\n");
    return 0;
#else
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    char main_pset[MPI_MAX_PSET_NAME_LEN] = "mpi://WORLD", value[MPI_MAX_PSET_NAME_LEN];
    MPI_Info info;
    int flag = 0;
    MPI_Session_get_info(session, &info);
    MPI_Info_get(info, "main_pset", sizeof value - 1, value, &flag);
    MPI_Info_free(&info);
    if (flag)
        strcpy(main_pset, value); /* added by a change */
    MPI_Comm comm = comm_from(main_pset);
    if (flag) {
        /* Added by a change: the end of it, as the others see it. */
        double mib = pss_mib(), total = 0;
        MPI_Barrier(comm);
        MPI_Reduce(&mib, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    }
    for (;;) {
        int rank, type = MPIX_DYNRES_NONE, tag = 0, procs = 0;
        char delta[MPI_MAX_PSET_NAME_LEN], next[MPI_MAX_PSET_NAME_LEN] = "";
        double t0 = 0;
        MPI_Comm_rank(comm, &rank);
        if (rank == 0) {
            MPI_Info rc;
            MPIX_Dynres_get(session, &type, delta, &tag, &rc);
            if (type != MPIX_DYNRES_NONE) {
                MPI_Info_get(rc, "mpix_procs", sizeof value - 1, value, &flag);
                procs = atoi(value);
                MPI_Info_free(&rc);
                MPIX_Pset_create_op(session, MPI_INFO_NULL, main_pset, delta,
                                    type == MPIX_DYNRES_ADD ? MPIX_PSET_UNION : MPIX_PSET_DIFFERENCE,
                                    next);
                MPI_Info give;
                MPI_Info_create(&give);
                MPI_Info_set(give, "main_pset", next);
                t0 = MPI_Wtime();
                MPIX_Dynres_accept(session, tag, give);
                MPI_Info_free(&give);
            }
        }
        MPI_Bcast(&type, 1, MPI_INT, 0, comm);
        if (type == MPIX_DYNRES_NONE)
            break;
        MPI_Bcast(next, sizeof next, MPI_CHAR, 0, comm);
        MPI_Info mine;
        MPIX_Session_get_psets(session, MPI_INFO_NULL, &mine);
        MPI_Info_get(mine, next, sizeof value - 1, value, &flag);
        MPI_Info_free(&mine);
        MPI_Comm_free(&comm);
        if (!flag)
            break; /* removed: leave */
        comm = comm_from(next);
        MPI_Barrier(comm);
        double dt = MPI_Wtime() - t0, mib = pss_mib(), total = 0;
        MPI_Reduce(&mib, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
        if (rank == 0) {
            const char *kind = type == MPIX_DYNRES_ADD ? "add" : "remove";
            result("dynres", "change_ms", dt * 1e3, "ms", "kind=%s procs=%d", kind, procs);
            result("dynres", "pss_mib", total, "MiB", "kind=%s procs=%d", kind, procs);
        }
        strcpy(main_pset, next);
    }
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    MPI_Session_finalize(&session);
    return 0;
#endif
}
