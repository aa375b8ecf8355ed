/* MPI-4 Sessions without MPI_Init: process sets, groups and communicators
 * made from them, two sessions at once, finalize and initialize again,
 * error classes under MPI_ERRORS_RETURN. Rank 0 prints "pset: NAME size N"
 * for every process set (N is -1 when the info functions are missing). */
#include "sessions.h"

/* Info entry functions may come from elsewhere in the library: read the
 * mpi_size of a set's info only when MPI_Info_get_string is there. */
int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
    __attribute__((weak));
int MPI_Info_free(MPI_Info *info) __attribute__((weak));
int MPI_Info_create(MPI_Info *info) __attribute__((weak));
int MPI_Info_set(MPI_Info info, const char *key, const char *value) __attribute__((weak));

/* The size a set's info reports (-1 without the info entry functions). */
static int info_size(MPI_Session s, const char *name) {
    MPI_Info info = MPI_INFO_NULL;
    OK(MPI_Session_get_pset_info(s, name, &info));
    CHECK(info != MPI_INFO_NULL, "no info for %s", name);
    if (!MPI_Info_get_string) return -1;
    char value[32];
    int len = sizeof value, flag = 0;
    OK(MPI_Info_get_string(info, "mpi_size", &len, value, &flag));
    CHECK(flag, "no mpi_size in the info of %s", name);
    if (MPI_Info_free) MPI_Info_free(&info);
    return atoi(value);
}

/* List the sets; check the predefined ones and their sizes. */
static void check_psets(MPI_Session s, int wrank, int wsize) {
    int n = -1;
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 3, "%d process sets", n);
    const char *predefined[3] = {"mpi://WORLD", "mpi://SELF", "mpix://SHARED"};
    for (int i = 0; i < n; i++) {
        int len = 0;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        char name[MPI_MAX_PSET_NAME_LEN];
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "set %d has length %d", i, len);
        int cap = len;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &cap, name));
        CHECK(cap == len && (int)strlen(name) == len - 1, "set %d: %d %d %s", i, cap, len, name);
        if (i < 3) CHECK(strcmp(name, predefined[i]) == 0, "set %d is %s", i, name);
        /* A short buffer truncates and says how much was needed. */
        char small[4] = "xxx";
        cap = 3;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &cap, small));
        CHECK(cap == len && strncmp(small, name, 2) == 0 && small[2] == 0,
              "truncated %s to %s (%d)", name, small, cap);
        int size = info_size(s, name);
        if (wrank == 0) printf("pset: %s size %d\n", name, size);
    }
    int len = 0;
    EXPECT(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, n, &len, NULL), MPI_ERR_ARG);
    int world = info_size(s, "mpi://WORLD"), self = info_size(s, "mpi://self");
    CHECK(world == -1 || world == wsize, "mpi://WORLD has size %d of %d", world, wsize);
    CHECK(self == -1 || self == 1, "mpi://SELF has size %d", self);
}

/* A session asked for MPI_THREAD_MULTIPLE reports that it provides it
 * (only when the info entry functions are there). */
static void check_thread_level(void) {
    if (!MPI_Info_create || !MPI_Info_set || !MPI_Info_get_string || !MPI_Info_free) return;
    MPI_Info ask, used;
    OK(MPI_Info_create(&ask));
    OK(MPI_Info_set(ask, "thread_level", "MPI_THREAD_MULTIPLE"));
    MPI_Session t;
    OK(MPI_Session_init(ask, MPI_ERRORS_RETURN, &t));
    OK(MPI_Session_get_info(t, &used));
    char value[64];
    int len = sizeof value, flag = 0;
    OK(MPI_Info_get_string(used, "thread_level", &len, value, &flag));
    CHECK(flag && strcmp(value, "MPI_THREAD_MULTIPLE") == 0, "thread_level %s", value);
    MPI_Info_free(&ask);
    MPI_Info_free(&used);
    OK(MPI_Session_finalize(&t));
}

/* What the user's session error handler saw. */
static int handler_calls, handler_code;
static MPI_Session handler_session;

static void on_session_error(MPI_Session *session, int *code, ...) {
    handler_calls++;
    handler_session = *session;
    handler_code = *code;
    /* MPI may be called from the handler. */
    int n;
    MPI_Session_get_num_psets(*session, MPI_INFO_NULL, &n);
}

/* A user-defined session handler is called with the session and the
 * error; the call then returns the error (MPI_SUCCESS through
 * MPI_Session_call_errhandler). */
static void check_user_errhandler(MPI_Session s) {
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got;
    OK(MPI_Session_create_errhandler(on_session_error, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL, "no error handler");
    OK(MPI_Session_set_errhandler(s, eh));
    OK(MPI_Session_get_errhandler(s, &got));
    CHECK(got == eh, "session has handler %#x, set %#x", got, eh);
    MPI_Group g;
    EXPECT(MPI_Group_from_session_pset(s, "app://nothing-here", &g), MPI_ERR_ARG);
    CHECK(handler_calls == 1 && handler_session == s && handler_code == MPI_ERR_ARG,
          "handler: %d calls, session %#x, code %d", handler_calls, handler_session,
          handler_code);
    OK(MPI_Session_call_errhandler(s, MPI_ERR_INTERN));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_INTERN, "handler: %d calls, code %d",
          handler_calls, handler_code);
    /* A session may start with it. */
    MPI_Session t;
    OK(MPI_Session_init(MPI_INFO_NULL, eh, &t));
    EXPECT(MPI_Session_get_pset_info(t, NULL, &(MPI_Info){0}), MPI_ERR_ARG);
    CHECK(handler_calls == 3 && handler_session == t, "handler: %d calls", handler_calls);
    OK(MPI_Session_finalize(&t));
    OK(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
}

/* The usual idiom for part of a set: the even ranks of `world` make a
 * communicator, the others pass MPI_GROUP_EMPTY and get MPI_COMM_NULL. */
static void check_part_of_set(MPI_Comm world, int wrank, int wsize) {
    MPI_Group all, evens, mine;
    OK(MPI_Comm_group(world, &all));
    int ranks[64], n = 0;
    for (int r = 0; r < wsize && n < 64; r += 2) ranks[n++] = r;
    OK(MPI_Group_incl(all, n, ranks, &evens));
    mine = wrank % 2 == 0 ? evens : MPI_GROUP_EMPTY;
    MPI_Comm part = MPI_COMM_WORLD;
    OK(MPI_Comm_create_from_group(mine, "sessions.evens", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                  &part));
    if (wrank % 2 == 0) {
        int size = -1;
        OK(MPI_Comm_size(part, &size));
        CHECK(size == n, "the even ranks' communicator has %d, not %d", size, n);
        exercise(part, 400);
        OK(MPI_Comm_free(&part));
    } else {
        CHECK(part == MPI_COMM_NULL, "rank %d, left out, got a communicator", wrank);
    }
    OK(MPI_Group_free(&evens));
    OK(MPI_Group_free(&all));
}

int main(void) {
    int flag = -1;
    MPI_Session s = open_session();
    MPI_Initialized(&flag);
    CHECK(!flag, "a session made MPI_Initialized true");

    MPI_Comm world = comm_of(s, "mpi://world", "sessions.world");
    abort_comm = world;
    int wrank, wsize;
    OK(MPI_Comm_rank(world, &wrank));
    OK(MPI_Comm_size(world, &wsize));
    report_library_as(wrank);
    check_psets(s, wrank, wsize);
    exercise(world, 100);
    check_part_of_set(world, wrank, wsize);

    /* SELF and SHARED, names in any case. */
    MPI_Comm self = comm_of(s, "MPI://Self", "sessions.self");
    int n;
    OK(MPI_Comm_size(self, &n));
    CHECK(n == 1, "mpi://SELF communicator of size %d", n);
    exercise(self, 200);
    MPI_Comm shared = comm_of(s, "mpix://shared", "sessions.shared");
    OK(MPI_Comm_size(shared, &n));
    int expected = info_size(s, "MPIX://SHARED");
    CHECK(expected == -1 || n == expected, "shared communicator %d, set %d", n, expected);
    const char *local = getenv("TESSEL_LOCAL_SIZE");
    CHECK(!local || n == atoi(local), "shared communicator %d, node %s", n, local);
    CHECK(n >= 1 && n <= wsize, "shared communicator of size %d", n);
    printf("shared: rank %d size %d\n", wrank, n);
    exercise(shared, 300);

    /* Without MPI_Init there is no MPI_COMM_WORLD. */
    EXPECT(MPI_Comm_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);

    /* Errors under MPI_ERRORS_RETURN. */
    MPI_Group g;
    EXPECT(MPI_Group_from_session_pset(s, "mpi://nowhere", &g), MPI_ERR_ARG);
    EXPECT(MPI_Session_get_num_psets((MPI_Session)0x12345, MPI_INFO_NULL, &n), MPI_ERR_SESSION);
    EXPECT(MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n), MPI_ERR_SESSION);
    MPI_Info info;
    EXPECT(MPI_Session_get_pset_info(s, "app://no-such-set", &info), MPI_ERR_ARG);
    EXPECT(MPI_Session_set_errhandler(s, (MPI_Errhandler)0x77), MPI_ERR_ARG);
    MPI_Errhandler eh;
    OK(MPI_Session_get_errhandler(s, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "session error handler %#x", eh);
    OK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    /* A process left out of the new group passes the empty group and
     * gets MPI_COMM_NULL (MPI-4.1 §7.4.2; MPICH 5 does the same). */
    MPI_Comm none = MPI_COMM_WORLD;
    OK(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, &none));
    CHECK(none == MPI_COMM_NULL, "the empty group gave no MPI_COMM_NULL");
    EXPECT(MPI_Comm_create_from_group((MPI_Group)0x88000777, "t", MPI_INFO_NULL,
                                      MPI_ERRORS_RETURN, &none),
           MPI_ERR_GROUP);
    OK(MPI_Group_from_session_pset(s, "mpi://SELF", &g));
    EXPECT(MPI_Comm_create_from_group(g, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &none),
           MPI_ERR_ARG);
    CHECK(none == MPI_COMM_NULL, "a failed creation returned %#x", none);
    check_user_errhandler(s);
    check_thread_level();
    MPI_Info used = MPI_INFO_NULL;
    OK(MPI_Session_get_info(s, &used));
    CHECK(used != MPI_INFO_NULL, "no session info");

    /* A second session at once, with its own communicator over the same
     * processes: messages on the two do not mix. */
    MPI_Session s2 = open_session();
    CHECK(s2 != s, "two sessions with one handle");
    MPI_Comm world2 = comm_of(s2, "mpi://WORLD", "sessions.world");
    int next = (wrank + 1) % wsize, prev = (wrank + wsize - 1) % wsize;
    int a = 1000 + wrank, b = 2000 + wrank, ga = -1, gb = -1;
    MPI_Request r[2];
    OK(MPI_Irecv(&gb, 1, MPI_INT, prev, 5, world2, &r[1]));
    OK(MPI_Irecv(&ga, 1, MPI_INT, prev, 5, world, &r[0]));
    OK(MPI_Send(&a, 1, MPI_INT, next, 5, world));
    OK(MPI_Send(&b, 1, MPI_INT, next, 5, world2));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK(ga == 1000 + prev && gb == 2000 + prev, "crossed messages %d %d", ga, gb);
    exercise(world2, 400);

    OK(MPI_Comm_free(&world2));
    OK(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "finalize left the handle %#x", s2);
    OK(MPI_Comm_free(&self));
    OK(MPI_Comm_free(&shared));
    abort_comm = MPI_COMM_NULL;
    OK(MPI_Comm_free(&world));
    MPI_Session old = s;
    OK(MPI_Session_finalize(&s));

    /* Initialize again: a fresh session works like the first. */
    s = open_session();
    EXPECT(MPI_Session_get_num_psets(old == s ? (MPI_Session)0x12345 : old, MPI_INFO_NULL, &n),
           MPI_ERR_SESSION);
    MPI_Comm again = comm_of(s, "mpi://WORLD", "sessions.again");
    abort_comm = again;
    exercise(again, 500);
    OK(MPI_Barrier(again));
    abort_comm = MPI_COMM_NULL;
    OK(MPI_Comm_free(&again));
    OK(MPI_Session_finalize(&s));

    MPI_Initialized(&flag);
    CHECK(!flag, "sessions made MPI_Initialized true");
    MPI_Finalized(&flag);
    CHECK(!flag, "sessions made MPI_Finalized true");
    printf("sessions: rank %d ok\n", wrank);
    return 0;
}
