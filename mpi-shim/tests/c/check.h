/* Shared by the C tests: CHECK prints where a condition failed and ends
 * the job with exit code 1. */
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                 \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                   \
        }                                                                   \
    } while (0)

/* A call's error class (error codes may carry more than their class). */
#define EXPECT(call, class)                                                   \
    do {                                                                      \
        int rc_ = (call), class_ = -1;                                        \
        MPI_Error_class(rc_, &class_);                                        \
        CHECK(class_ == (class), "%s returned class %d, expected %s", #call,  \
              class_, #class);                                                \
    } while (0)

#define OK(call) EXPECT(call, MPI_SUCCESS)

/* Rank 0 names the MPI library it runs on, so that the tests can tell a
 * binary built against MPICH really ran on Tessel's library. */
__attribute__((unused)) static void report_library(void) {
    int rank, len;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_library_version(lib, &len);
    if (rank == 0) printf("library: %.60s\n", lib);
}
