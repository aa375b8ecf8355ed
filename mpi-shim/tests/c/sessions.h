/* Shared by the C tests of sessions, which may have no MPI_COMM_WORLD:
 * CHECK prints where a condition failed and aborts on `abort_comm` (or
 * exits when there is none); EXPECT compares an error class. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

/* The communicator to abort on when a check fails (none: exit). */
static MPI_Comm abort_comm = MPI_COMM_NULL;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__,  \
                    #cond);                                                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            if (abort_comm != MPI_COMM_NULL) MPI_Abort(abort_comm, 1);        \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Error codes may carry more than their class: compare classes. */
#define EXPECT(call, class)                                                   \
    do {                                                                      \
        int rc_ = (call), class_ = -1;                                        \
        MPI_Error_class(rc_, &class_);                                        \
        CHECK(class_ == (class), "%s returned class %d, expected %s", #call,  \
              class_, #class);                                                \
    } while (0)

#define OK(call) EXPECT(call, MPI_SUCCESS)

/* Rank `rank` of a communicator names the library it runs on (what
 * report_library of check.h does, without MPI_COMM_WORLD). */
static inline void report_library_as(int rank) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    if (rank == 0) printf("library: %.60s\n", lib);
}

/* A session with MPI_ERRORS_RETURN. */
static inline MPI_Session open_session(void) {
    MPI_Session s = MPI_SESSION_NULL;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK(s != MPI_SESSION_NULL, "no session handle");
    return s;
}

/* A communicator over process set `name` of session `s`. */
static inline MPI_Comm comm_of(MPI_Session s, const char *name, const char *tag) {
    MPI_Group g = MPI_GROUP_NULL;
    MPI_Comm c = MPI_COMM_NULL;
    OK(MPI_Group_from_session_pset(s, name, &g));
    OK(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK(c != MPI_COMM_NULL, "no communicator for %s", name);
    return c;
}

/* Each rank sends `base + rank` to the next and checks what the previous
 * sent; then an allreduce of the ranks. */
static inline void exercise(MPI_Comm c, int base) {
    int rank, size, got = -1, sum = -1;
    OK(MPI_Comm_rank(c, &rank));
    OK(MPI_Comm_size(c, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, mine = base + rank;
    MPI_Request r;
    OK(MPI_Irecv(&got, 1, MPI_INT, prev, 7, c, &r));
    OK(MPI_Send(&mine, 1, MPI_INT, next, 7, c));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(got == base + prev, "got %d from %d, expected %d", got, prev, base + prev);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2, "allreduce %d over %d ranks", sum, size);
}
