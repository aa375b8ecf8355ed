/* Start-up cost: wall time from just before initialisation until a
 * communicator is ready (the slowest process's), and memory as the sum of
 * the processes' proportional set sizes (shared pages count once), read once
 * the communicator exists.  Modes:
 *   init     MPI_Init (the world model); MPI_COMM_WORLD
 *   session  MPI_Session_init, then MPI_Comm_create_from_group on mpi://WORLD
 *   sparse   session, then a distributed-graph communicator in which each
 *            process has only its 3-D stencil neighbours, and one neighbour
 *            exchange on it (both inside the timed part)
 * An MPI older than 4.0 has no Sessions: session and sparse then print an
 * `unsupported` line. */
#include "bench.h"

/* Sum of the Pss lines of /proc/self/smaps_rollup (of smaps if the kernel
 * has no rollup), in KiB. */
static double pss_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 0.0;
    char line[512];
    long kib;
    double sum = 0.0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld kB", &kib) == 1)
            sum += (double)kib;
    fclose(f);
    return sum;
}

/* Collective over comm: reports the slowest process's seconds and the sum of
 * the processes' PSS. */
static void report(const char *mode, double seconds, MPI_Comm comm)
{
    int rank, np;
    double pss = pss_kib(), max_seconds, sum_pss;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    MPI_Reduce(&seconds, &max_seconds, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&pss, &sum_pss, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        result("startup", "init_time", max_seconds * 1e3, "ms", "mode=%s np=%d", mode, np);
        result("startup", "pss", sum_pss / 1024.0, "MiB", "mode=%s np=%d", mode, np);
    }
}

static int run_init(int *argc, char ***argv)
{
    double t0 = mono_seconds();
    MPI_Init(argc, argv);
    report("init", mono_seconds() - t0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

#if MPI_VERSION >= 4
/* Exits with a message if an MPI call failed (errors return, in Sessions). */
static void check(int err, const char *call)
{
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "startup: %s failed with error code %d\n", call, err);
        exit(1);
    }
}

/* The distributed-graph communicator of the periodic 3-D stencil on world
 * (neighbours in row-major order of an MPI_Dims_create grid, each once, not
 * oneself), after one neighbour exchange that checks it. */
static MPI_Comm stencil_graph(MPI_Comm world)
{
    int rank, np, dims[3] = {0, 0, 0};
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &np);
    check(MPI_Dims_create(np, 3, dims), "MPI_Dims_create");
    int c[3] = {rank / (dims[1] * dims[2]), rank / dims[2] % dims[1], rank % dims[2]};
    int nb[6], n = 0;
    for (int d = 0; d < 3; d++)
        for (int step = -1; step <= 1; step += 2) {
            int cc[3] = {c[0], c[1], c[2]};
            cc[d] = (cc[d] + step + dims[d]) % dims[d];
            int r = (cc[0] * dims[1] + cc[1]) * dims[2] + cc[2], seen = r == rank;
            for (int i = 0; i < n; i++)
                seen |= nb[i] == r;
            if (!seen)
                nb[n++] = r;
        }
    MPI_Comm graph;
    check(MPI_Dist_graph_create_adjacent(world, n, nb, MPI_UNWEIGHTED, n, nb, MPI_UNWEIGHTED,
                                         MPI_INFO_NULL, 0, &graph),
          "MPI_Dist_graph_create_adjacent");
    int out[6], in[6];
    for (int i = 0; i < n; i++)
        out[i] = rank;
    check(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, graph), "MPI_Neighbor_alltoall");
    for (int i = 0; i < n; i++)
        if (in[i] != nb[i]) {
            fprintf(stderr, "startup: rank %d got %d from neighbour %d\n", rank, in[i], nb[i]);
            exit(1);
        }
    return graph;
}

static int run_session(const char *mode)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm world, graph = MPI_COMM_NULL;
    double t0 = mono_seconds();
    check(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session), "MPI_Session_init");
    check(MPI_Group_from_session_pset(session, "mpi://WORLD", &group),
          "MPI_Group_from_session_pset");
    check(MPI_Comm_create_from_group(group, "bench.startup", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                     &world),
          "MPI_Comm_create_from_group");
    if (strcmp(mode, "sparse") == 0)
        graph = stencil_graph(world);
    report(mode, mono_seconds() - t0, world);
    if (graph != MPI_COMM_NULL)
        MPI_Comm_free(&graph);
    MPI_Comm_free(&world);
    MPI_Group_free(&group);
    check(MPI_Session_finalize(&session), "MPI_Session_finalize");
    return 0;
}
#else
static int run_session(const char *mode)
{
    int rank;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        result("startup", "unsupported", 0.0, "none", "mode=%s", mode);
    MPI_Finalize();
    return 0;
}
#endif

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o))
        return 2;
    const char *mode = o.mode ? o.mode : "init";
    if (strcmp(mode, "init") == 0)
        return run_init(&argc, &argv);
    if (strcmp(mode, "session") == 0 || strcmp(mode, "sparse") == 0)
        return run_session(mode);
    bench_usage(argv[0], "--mode must be init, session or sparse");
    return 2;
}
