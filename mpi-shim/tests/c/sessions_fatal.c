/* Misuse of the life cycle ends the job with a message: with argument
 * "world", MPI_COMM_WORLD in a process that has only a session (under
 * MPI_ERRORS_ARE_FATAL); with "reinit", MPI_Init after MPI_Finalize. */
#include <stdio.h>
#include <string.h>
#include <mpi.h>

int main(int argc, char **argv) {
    int size = 0;
    if (argc > 1 && strcmp(argv[1], "world") == 0) {
        MPI_Session s;
        MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &s);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        printf("sessions_fatal: MPI_Comm_size returned\n");
        MPI_Session_finalize(&s);
    } else {
        MPI_Init(&argc, &argv);
        MPI_Finalize();
        MPI_Init(&argc, &argv);
        printf("sessions_fatal: MPI_Init returned\n");
    }
    return 0;
}
