/* Bad arguments return the right error class under MPI_ERRORS_RETURN;
 * truncation is reported with the status; the library keeps working. */
#include "check.h"

static void quiet(MPI_Comm *comm, int *code, ...) {
    (void)comm, (void)code;
}

static void quiet_session(MPI_Session *session, int *code, ...) {
    (void)session, (void)code;
}

/* Every handle to an error handler is freed once (MPI-4.1 §9.3): the one
 * its creation returned and each a get returned; a session's too. */
static void errhandler_handles(void) {
    MPI_Comm comm;
    MPI_Errhandler eh, got, fatal;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    OK(MPI_Comm_create_errhandler(quiet, &eh));
    OK(MPI_Comm_set_errhandler(comm, eh));
    OK(MPI_Comm_get_errhandler(comm, &got));
    CHECK(got == eh, "get gives the handler set");
    OK(MPI_Errhandler_free(&got));
    CHECK(got == MPI_ERRHANDLER_NULL, "freed handle is null");
    OK(MPI_Errhandler_free(&eh));
    got = eh;
    OK(MPI_Comm_get_errhandler(comm, &got));
    OK(MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER)); /* still set, still called */
    OK(MPI_Errhandler_free(&got));
    EXPECT(MPI_Errhandler_free(&got), MPI_ERR_ARG); /* null now */
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &fatal));
    OK(MPI_Errhandler_free(&fatal));
    OK(MPI_Comm_free(&comm));

    MPI_Errhandler seh;
    OK(MPI_Session_create_errhandler(quiet_session, &seh));
    OK(MPI_Errhandler_free(&seh));
    CHECK(seh == MPI_ERRHANDLER_NULL, "freed session handle is null");
}

int main(int argc, char **argv) {
    int flag;
    MPI_Initialized(&flag);
    CHECK(!flag, "initialized before MPI_Init");
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    EXPECT(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(&x, 1, (MPI_Datatype)0x12345, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Recv(&x, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    EXPECT(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Allreduce(&x, &flag, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    double dd = 1, de;
    EXPECT(MPI_Allreduce(&dd, &de, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    /* An invalid communicator goes to MPI_COMM_WORLD's handler. */
    EXPECT(MPI_Send(&x, 1, MPI_INT, 0, 0, (MPI_Comm)0x44000077), MPI_ERR_COMM);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    MPI_Request bad = (MPI_Request)0x12;
    EXPECT(MPI_Wait(&bad, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
#ifndef MPI_ABI_VERSION
    /* A null status is not MPI_STATUS_IGNORE (in MPICH's ABI that is
     * (MPI_Status *)1): the calls refuse it before doing anything. */
    MPI_Request none = MPI_REQUEST_NULL;
    EXPECT(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Wait(&none, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Test(&none, &flag, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Waitall(1, &none, NULL), MPI_ERR_ARG);
#else
    /* In the standard ABI a null status is MPI_STATUS_IGNORE. */
    MPI_Request none = MPI_REQUEST_NULL;
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, NULL));
    OK(MPI_Wait(&none, NULL));
    OK(MPI_Waitall(1, &none, NULL));
#endif
    /* A second MPI_Init is an error of class MPI_ERR_OTHER, returned under
     * MPI_ERRORS_RETURN; the library keeps working. */
    EXPECT(MPI_Init(&argc, &argv), MPI_ERR_OTHER);

    if (size > 1 && rank < 2) {
        int big[1000] = {0}, small[10];
        if (rank == 1) {
            MPI_Send(big, 1000, MPI_INT, 0, 3, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            EXPECT(MPI_Recv(small, 10, MPI_INT, 1, 3, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
            CHECK(st.MPI_ERROR == MPI_ERR_TRUNCATE, "status error %d", st.MPI_ERROR);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, v, sv;
    MPI_Get_processor_name(name, &len);
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&v, &sv);
#ifdef MPI_ABI_VERSION
    /* A standard-ABI binary may come from another implementation's
     * mpi.h, whose MPI_VERSION is that implementation's. */
    CHECK(len > 0 && v >= 4 && v <= MPI_VERSION, "version %d.%d", v, sv);
#else
    CHECK(len > 0 && v == MPI_VERSION && sv == MPI_SUBVERSION, "version");
#endif
    errhandler_handles();
    CHECK(MPI_Wtick() > 0 && MPI_Wtime() > 0, "clock");
    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag, "not finalized");
    printf("errors: rank %d ok\n", rank);
    return 0;
}
