/* The area the library does not support (MPI-IO) links, loads and
 * reports
 * MPI_ERR_UNSUPPORTED_OPERATION; the functions of those areas with a real
 * answer give it; the tool interface reports no variables. */
#include <string.h>
#include "check.h"

#define EXPECT_CLASS(call, class)                                             \
    do {                                                                      \
        int rc_ = (call), class_ = -1;                                        \
        CHECK(MPI_Error_class(rc_, &class_) == MPI_SUCCESS, "class of %d", rc_); \
        CHECK(class_ == (class), "%s returned class %d, expected %s", #call,  \
              class_, #class);                                                \
    } while (0)

#define UNSUPPORTED(call) EXPECT_CLASS(call, MPI_ERR_UNSUPPORTED_OPERATION)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_File fh = MPI_FILE_NULL;
    UNSUPPORTED(MPI_File_open(MPI_COMM_WORLD, "f", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    UNSUPPORTED(MPI_File_delete("f", MPI_INFO_NULL));
    UNSUPPORTED(MPI_Register_datarep("x", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL));
#ifdef MPI_ABI_VERSION
    CHECK(MPI_File_toint(MPI_FILE_NULL) == 0 && MPI_File_fromint(0) == MPI_FILE_NULL, "file conversions");
#else
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0 && MPI_File_f2c(0) == MPI_FILE_NULL, "file conversions");
#endif

    MPI_Win win = MPI_WIN_NULL;

    MPI_Comm inter = MPI_COMM_NULL;
    MPI_Comm parent = MPI_COMM_WORLD;
    CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent == MPI_COMM_NULL, "parent");
    /* A communicator argument that is none is that error first. */
    CHECK(MPI_Intercomm_merge(MPI_COMM_NULL, 1, &inter) == MPI_ERR_COMM, "merge of no communicator");
    CHECK(MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win) == MPI_ERR_COMM,
          "window over no communicator");
    /* Disconnecting: a barrier, then freed. */
    MPI_Comm dup = MPI_COMM_NULL, none_comm = MPI_COMM_NULL;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup) == MPI_SUCCESS, "dup");
    CHECK(MPI_Comm_disconnect(&dup) == MPI_SUCCESS && dup == MPI_COMM_NULL, "disconnect");
    CHECK(MPI_Comm_disconnect(&none_comm) == MPI_ERR_COMM, "disconnect of no communicator");

    int cls = -1;
    CHECK(MPI_Error_class(MPI_ERR_UNSUPPORTED_OPERATION, &cls) == MPI_SUCCESS &&
              cls == MPI_ERR_UNSUPPORTED_OPERATION, "class %d", cls);

    /* Memory for one-sided communication. */
    double *mem = NULL;
    CHECK(MPI_Alloc_mem(1024 * sizeof(double), MPI_INFO_NULL, &mem) == MPI_SUCCESS && mem, "alloc");
    for (int i = 0; i < 1024; i++) mem[i] = i;
    CHECK(mem[1023] == 1023, "memory");
    CHECK(MPI_Free_mem(mem) == MPI_SUCCESS, "free");
    void *none = NULL;
    EXPECT_CLASS(MPI_Alloc_mem(-1, MPI_INFO_NULL, &none), MPI_ERR_SIZE);

    /* The tool interface: no variables, categories or events. */
    int provided = -1, n = -1;
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "before MPI_T_init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    CHECK(MPI_T_cvar_get_num(&n) == MPI_SUCCESS && n == 0, "cvars %d", n);
    CHECK(MPI_T_pvar_get_num(&n) == MPI_SUCCESS && n == 0, "pvars %d", n);
    CHECK(MPI_T_category_get_num(&n) == MPI_SUCCESS && n == 0, "categories %d", n);
    int idx;
    CHECK(MPI_T_cvar_get_index("x", &idx) == MPI_T_ERR_INVALID_NAME, "cvar index");
    MPI_T_cvar_handle ch;
    CHECK(MPI_T_cvar_handle_alloc(0, NULL, &ch, &n) == MPI_T_ERR_INVALID_INDEX, "cvar handle");
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS && s != MPI_T_PVAR_SESSION_NULL, "session");
    CHECK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "start all");
    CHECK(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "stop all");
    CHECK(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, &x) == MPI_T_ERR_INVALID_HANDLE, "read all");
    MPI_T_pvar_session gone = s;
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS && s == MPI_T_PVAR_SESSION_NULL, "free session");
    CHECK(MPI_T_pvar_start(gone, MPI_T_PVAR_ALL_HANDLES) == MPI_T_ERR_INVALID_SESSION, "freed session");
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "second MPI_T_finalize");

    /* The profiling control, and statuses through their Fortran form
     * (which the standard ABI leaves to MPI_Abi_get_fortran_info). */
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS && MPI_Pcontrol(2, "x") == MPI_SUCCESS, "pcontrol");
#ifndef MPI_ABI_VERSION
    MPI_Status st, back;
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    MPI_Sendrecv(&rank, 1, MPI_INT, rank, 5, &x, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &st);
    CHECK(MPI_Status_c2f(&st, fst) == MPI_SUCCESS && fst[MPI_F_SOURCE] == rank && fst[MPI_F_TAG] == 5,
          "c2f");
    CHECK(MPI_Status_f2c(fst, &back) == MPI_SUCCESS, "f2c");
    int count = -1;
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK(back.MPI_SOURCE == rank && back.MPI_TAG == 5 && count == 1, "round trip");
    EXPECT_CLASS(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back), MPI_ERR_ARG);
#ifdef TESSEL_MPI
    /* And through the mpi_f08 form (Debian's MPICH declares these but its
     * library, built without mpi_f08, lacks them: a binary built against
     * it cannot link them). */
    MPI_F08_status f08;
    MPI_Fint fst2[MPI_F_STATUS_SIZE];
    CHECK(MPI_Status_c2f08(&st, &f08) == MPI_SUCCESS && f08.MPI_SOURCE == rank && f08.MPI_TAG == 5,
          "c2f08");
    CHECK(MPI_Status_f082f(&f08, fst2) == MPI_SUCCESS && fst2[MPI_F_TAG] == 5, "f082f");
    CHECK(MPI_Status_f2f08(fst2, &f08) == MPI_SUCCESS && MPI_Status_f082c(&f08, &back) == MPI_SUCCESS,
          "f2f08, f082c");
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK(back.MPI_SOURCE == rank && back.MPI_TAG == 5 && count == 1, "f08 round trip");
#endif
#endif

    /* The special addresses are distinct. */
    CHECK(MPI_UNWEIGHTED && MPI_WEIGHTS_EMPTY && MPI_UNWEIGHTED != MPI_WEIGHTS_EMPTY, "weights");

    /* The library still works. */
    int sum = 0;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce");
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);

    /* The communicator argument's error handler applies: MPI_COMM_SELF
     * keeps the default, MPI_ERRORS_ARE_FATAL. */
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        MPI_File_open(MPI_COMM_SELF, "f", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        printf("MPI_File_open returned\n");
    }

    MPI_Finalize();
    printf("unsupported: rank %d ok\n", rank);
    return 0;
}
