/* A profiling library in the way mpiP or Score-P are made: it defines
 * some MPI_ functions, counts their calls and forwards each to its PMPI_
 * twin; MPI_Finalize prints the counts. Built as a shared library, it
 * wraps a program through LD_PRELOAD or by being linked before -lmpi.
 * Functions the library might use inside others (Isend, Irecv, Wait,
 * Send inside Sendrecv or a collective) are counted too: a count above
 * what the program calls means the library's own calls went through the
 * wrapper. */
#include <mpi.h>
#include <stdio.h>

static long sends, recvs, sendrecvs, allreduces, isends, irecvs, waits, barriers;

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    sends++;
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    recvs++;
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                 MPI_Comm comm, MPI_Status *status)
{
    sendrecvs++;
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                         comm, status);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    allreduces++;
    return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    isends++;
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    irecvs++;
    return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    waits++;
    return PMPI_Wait(request, status);
}

int MPI_Barrier(MPI_Comm comm)
{
    barriers++;
    return PMPI_Barrier(comm);
}

int MPI_Finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("pmpi: rank %d send %ld recv %ld sendrecv %ld allreduce %ld isend %ld irecv %ld "
           "wait %ld barrier %ld\n",
           rank, sends, recvs, sendrecvs, allreduces, isends, irecvs, waits, barriers);
    fflush(stdout);
    return PMPI_Finalize();
}
