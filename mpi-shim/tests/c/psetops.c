/* Process sets created while the job runs: MPIX_Pset_create_op (union,
 * difference, intersection) makes sets with unique names that every
 * process's sessions then list (MPI_Session_get_num_psets, get_nth_pset,
 * get_pset_info, MPIX_Session_get_psets), and a communicator is built from
 * one; the same through libmpidynres's names (mpidynres.h). Errors: an
 * unknown set, an unknown operation, a caller in neither set. Under a
 * launcher that keeps no such sets (not Tessel's mpiexec) the calls fail
 * cleanly and only that is checked. */
#include <string.h>
#include "check.h"
#include <mpidynres.h>

static int size_of(MPI_Session s, const char *name) {
    MPI_Info info;
    OK(MPI_Session_get_pset_info(s, name, &info));
    char v[32];
    int flag = 0;
    MPI_Info_get(info, "mpi_size", sizeof v - 1, v, &flag);
    MPI_Info_free(&info);
    CHECK(flag, "mpi_size of %s", name);
    return atoi(v);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MPI_Session s;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MPI_Group wg;
    MPI_Comm world;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg));
    OK(MPI_Comm_create_from_group(wg, "psetops.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &world));
    MPI_Group_free(&wg);
    int rank, size, n0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        printf("library: %.60s\n", lib);
    }
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n0));
    /* Every process counts before rank 0 adds sets. */
    MPI_Barrier(world);
    char name[MPI_MAX_PSET_NAME_LEN];
    /* Without mpiexec --dynres nobody proposes resource changes. */
    int type = -1, tag;
    char delta[MPI_MAX_PSET_NAME_LEN];
    EXPECT(MPIX_Dynres_get(s, &type, delta, &tag, NULL), MPI_ERR_OTHER);
    if (!getenv("TESSEL_UNIVERSE")) {
        EXPECT(MPIX_Pset_create_op(s, MPI_INFO_NULL, "mpi://WORLD", "mpi://SELF", MPIX_PSET_DIFFERENCE, name),
               MPI_ERR_OTHER);
        goto done;
    }
    /* Rank 0 makes the sets (the seed's "main process"), then tells the others. */
    char names[3][MPI_MAX_PSET_NAME_LEN];
    if (rank == 0) {
        OK(MPIX_Pset_create_op(s, MPI_INFO_NULL, "mpi://WORLD", "mpi://SELF", MPIX_PSET_DIFFERENCE, names[0]));
        OK(MPIX_Pset_create_op(s, MPI_INFO_NULL, names[0], "mpi://SELF", MPIX_PSET_UNION, names[1]));
        OK(MPIDYNRES_pset_create_op(s, MPI_INFO_NULL, names[1], "mpi://SELF", MPIDYNRES_PSET_INTERSECT, names[2]));
        CHECK(strncmp(names[0], "mpix://difference/", 18) == 0, "name %s", names[0]);
        CHECK(strcmp(names[0], names[1]) && strcmp(names[1], names[2]), "unique names");
        /* Errors. */
        EXPECT(MPIX_Pset_create_op(s, MPI_INFO_NULL, "app://none", "mpi://SELF", MPIX_PSET_UNION, name), MPI_ERR_ARG);
        EXPECT(MPIX_Pset_create_op(s, MPI_INFO_NULL, "mpi://WORLD", "mpi://SELF", 99, name), MPI_ERR_ARG);
        /* names[0] is the world without rank 0: rank 0 is in neither. */
        EXPECT(MPIX_Pset_create_op(s, MPI_INFO_NULL, names[0], names[0], MPIX_PSET_UNION, name), MPI_ERR_ARG);
    }
    MPI_Bcast(names, sizeof names, MPI_CHAR, 0, world);
    int n1;
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n1));
    CHECK(n1 >= n0 + 3, "%d sets, %d before", n1, n0);
    /* The new sets come last, in creation order, and keep their index. */
    int found = 0;
    for (int i = 0; i < n1; i++) {
        char nth[MPI_MAX_PSET_NAME_LEN];
        int len = sizeof nth;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, nth));
        for (int k = 0; k < 3; k++) found += strcmp(nth, names[k]) == 0;
    }
    CHECK(found == 3, "all three sets listed (%d)", found);
    CHECK(size_of(s, names[0]) == size - 1, "difference size");
    CHECK(size_of(s, names[1]) == size, "union size");
    CHECK(size_of(s, names[2]) == 1, "intersection size");
    MPI_Info all;
    OK(MPI_Session_get_psets(s, MPI_INFO_NULL, &all));
    char v[32];
    int flag = 0;
    MPI_Info_get(all, names[1], sizeof v - 1, v, &flag);
    CHECK(flag && atoi(v) == size, "MPI_Session_get_psets lists %s", names[1]);
    MPI_Info_free(&all);
    /* A communicator from a created set: the union is the whole world, with
     * rank 0 last. */
    MPI_Group g;
    MPI_Comm c;
    OK(MPI_Group_from_session_pset(s, names[1], &g));
    OK(MPI_Comm_create_from_group(g, "psetops.union", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int crank, one = 1, sum = 0;
    MPI_Comm_rank(c, &crank);
    CHECK(crank == (rank + size - 1) % size, "rank %d in the union", crank);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == size, "allreduce over the union");
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
done:
    printf("psetops: rank %d ok\n", rank);
    MPI_Comm_free(&world);
    MPI_Session_finalize(&s);
    return 0;
}
