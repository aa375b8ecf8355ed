/* Under the default MPI_ERRORS_ARE_FATAL, a bad argument ends the job
 * with a message naming the function and the reason. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size, x = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    printf("fatal: MPI_Send returned\n");
    MPI_Finalize();
    return 0;
}
