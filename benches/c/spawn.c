/* Dynamic processes: the time MPI_Comm_spawn takes to start K copies of
 * this program and connect them (K = 1, 4, 16; 28 with --max 28), until a
 * barrier over the new intercommunicator returns, and the time to
 * disconnect them again. Run it on 1 process; the children are the same
 * program (they find a parent and only take part in the barrier and the
 * disconnect).
 *   spawn_ms procs=K: spawn + first barrier, in ms;
 *   disconnect_ms procs=K: MPI_Comm_disconnect, in ms.
 * Each value is the median of 5 rounds (3 with --quick) after a warm-up
 * spawn of one process. The library's launcher must leave room for the
 * processes (Tessel: mpiexec --universe-size; Open MPI: slots or
 * --oversubscribe). */
#include "bench.h"

static int child(MPI_Comm parent)
{
    MPI_Barrier(parent);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

/* Spawn k children, wait for them, disconnect: the two times, in s. */
static void round_trip(const char *self, int k, double *spawn, double *disconnect)
{
    MPI_Comm inter;
    double t0 = MPI_Wtime();
    MPI_Comm_spawn(self, MPI_ARGV_NULL, k, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                   MPI_ERRCODES_IGNORE);
    MPI_Barrier(inter);
    double t1 = MPI_Wtime();
    MPI_Comm_disconnect(&inter);
    *spawn = t1 - t0;
    *disconnect = MPI_Wtime() - t1;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (bench_parse(argc, argv, &o) != 0)
        return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(parent);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        double warm_s, warm_d;
        round_trip(argv[0], 1, &warm_s, &warm_d);
        int counts[] = {1, 4, 16, 28};
        int ncounts = o.max >= 28 ? 4 : 3, rounds = o.quick ? 3 : 5;
        for (int c = 0; c < ncounts; c++) {
            double s[5], d[5];
            for (int r = 0; r < rounds; r++)
                round_trip(argv[0], counts[c], &s[r], &d[r]);
            result("spawn", "spawn_ms", median(s, rounds) * 1e3, "ms", "procs=%d", counts[c]);
            result("spawn", "disconnect_ms", median(d, rounds) * 1e3, "ms", "procs=%d",
                   counts[c]);
        }
    }
    MPI_Finalize();
    return 0;
}
