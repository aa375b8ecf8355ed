/* Process sets as the launcher gives them, without MPI_Init: rank 0 prints
 * "pset: NAME" for every set; every rank prints "shared: rank R size N"
 * for its mpix://SHARED communicator (made and used on its node only).
 * With the argument "app", every member of an app:// set makes a
 * communicator from it, and the set's rank 0 prints "NAME: size N sum S",
 * S the sum of the members' mpi://WORLD ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#define OK(call)                                                              \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != MPI_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__,    \
                    #call, rc_);                                              \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* This process's rank in mpi://WORLD, from the launcher (a communicator
 * over mpi://WORLD would span virtual nodes, which the engine cannot
 * connect yet). */
static int world_rank(void) {
    const char *r = getenv("PMI_RANK");
    return r ? atoi(r) : 0;
}

static MPI_Comm comm_of(MPI_Session s, const char *name, int *rc) {
    MPI_Group g;
    MPI_Comm c = MPI_COMM_NULL;
    OK(MPI_Group_from_session_pset(s, name, &g));
    *rc = MPI_Comm_create_from_group(g, name, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    return c;
}

int main(int argc, char **argv) {
    int app = argc > 1 && strcmp(argv[1], "app") == 0;
    int wrank = world_rank(), n, rc;
    MPI_Session s;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = sizeof name;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        if (wrank == 0) printf("pset: %s\n", name);
        if (!app || strncmp(name, "app://", 6) != 0) continue;
        MPI_Comm c = comm_of(s, name, &rc);
        if (rc == MPI_ERR_GROUP) continue; /* not a member */
        OK(rc);
        int crank, csize, sum = -1;
        OK(MPI_Comm_rank(c, &crank));
        OK(MPI_Comm_size(c, &csize));
        OK(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, c));
        if (crank == 0) printf("%s: size %d sum %d\n", name, csize, sum);
        OK(MPI_Comm_free(&c));
    }
    MPI_Comm shared = comm_of(s, "mpix://SHARED", &rc);
    OK(rc);
    int size, one = 1, total = 0;
    OK(MPI_Comm_size(shared, &size));
    OK(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, shared));
    if (total != size) {
        fprintf(stderr, "allreduce over mpix://SHARED: %d of %d\n", total, size);
        return 1;
    }
    printf("shared: rank %d size %d\n", wrank, size);
    OK(MPI_Comm_free(&shared));
    OK(MPI_Session_finalize(&s));
    return 0;
}
