/* Functions MPI-4.1 added: the accessors of a status's public fields
 * (MPI_Status_get/set_source/tag/error, §3.2.5), the status of several
 * requests that leaves them as they are (MPI_Request_get_status_all/any/
 * some, §3.7.6), the removal of user error classes, codes and strings
 * (MPI_Remove_error_class/code/string, §9.5), and the hardware resources
 * of the process (MPI_Get_hw_resource_info). Runs on any number of
 * processes; where the standard leaves a choice to the implementation
 * (which error class an erroneous removal gets, MPI_LASTUSEDCODE after
 * removals, how splits agree with the resource info), Tessel's is checked
 * only on Tessel. Prints "mpi41: rank R ok". */
#include <string.h>
#include "check.h"

static int rank, size, next, prev;

static int is_tessel(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    return strncmp(lib, "Tessel", 6) == 0;
}

static int count_of(const MPI_Status *st) {
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    return n;
}

static int is_empty(const MPI_Status *st) {
    int cancelled = 1;
    MPI_Test_cancelled(st, &cancelled);
    return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count_of(st) == 0 &&
           !cancelled;
}

/* ------------------------------------------------------------------ */
/* MPI_Status_get/set_source/tag/error. */

static void status_fields(void) {
    MPI_Status st;
    int x = -1, code, cancelled = 0;
    memset(&st, 0, sizeof st);
    OK(MPI_Status_set_elements(&st, MPI_INT, 5));
    OK(MPI_Status_set_cancelled(&st, 1));
    /* Ordinary values, and the special ones, whose values differ between
     * the ABIs: each lands in the public field and reads back. */
    int sources[] = {0, size - 1, 12345, MPI_ANY_SOURCE, MPI_PROC_NULL};
    for (unsigned i = 0; i < sizeof sources / sizeof *sources; i++) {
        OK(MPI_Status_set_source(&st, sources[i]));
        CHECK(st.MPI_SOURCE == sources[i], "MPI_SOURCE %d, set %d", st.MPI_SOURCE, sources[i]);
        OK(MPI_Status_get_source(&st, &x));
        CHECK(x == sources[i], "get_source %d, set %d", x, sources[i]);
    }
    int tags[] = {0, 77, 32767, MPI_ANY_TAG};
    for (unsigned i = 0; i < sizeof tags / sizeof *tags; i++) {
        OK(MPI_Status_set_tag(&st, tags[i]));
        CHECK(st.MPI_TAG == tags[i], "MPI_TAG %d, set %d", st.MPI_TAG, tags[i]);
        OK(MPI_Status_get_tag(&st, &x));
        CHECK(x == tags[i], "get_tag %d, set %d", x, tags[i]);
    }
    OK(MPI_Add_error_code(MPI_ERR_OTHER, &code));
    int errors[] = {MPI_SUCCESS, MPI_ERR_TRUNCATE, MPI_ERR_IN_STATUS, MPI_ERR_PENDING, code};
    for (unsigned i = 0; i < sizeof errors / sizeof *errors; i++) {
        OK(MPI_Status_set_error(&st, errors[i]));
        CHECK(st.MPI_ERROR == errors[i], "MPI_ERROR %d, set %d", st.MPI_ERROR, errors[i]);
        OK(MPI_Status_get_error(&st, &x));
        CHECK(x == errors[i], "get_error %d, set %d", x, errors[i]);
    }
    OK(MPI_Remove_error_code(code));
    /* The fields that are not public stay. */
    OK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(count_of(&st) == 5 && cancelled, "count %d cancelled %d", count_of(&st), cancelled);

    /* The status of a receive. */
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, next, 41, &got, 1, MPI_INT, prev, 41, MPI_COMM_WORLD, &st);
    OK(MPI_Status_get_source(&st, &x));
    CHECK(x == prev && got == prev, "received from %d, source %d", got, x);
    OK(MPI_Status_get_tag(&st, &x));
    CHECK(x == 41, "tag %d", x);

    /* No status to read or write. */
    EXPECT(MPI_Status_get_source(MPI_STATUS_IGNORE, &x), MPI_ERR_ARG);
    EXPECT(MPI_Status_get_tag(MPI_STATUS_IGNORE, &x), MPI_ERR_ARG);
    EXPECT(MPI_Status_get_error(MPI_STATUS_IGNORE, &x), MPI_ERR_ARG);
    EXPECT(MPI_Status_set_source(MPI_STATUS_IGNORE, 0), MPI_ERR_ARG);
    EXPECT(MPI_Status_set_tag(MPI_STATUS_IGNORE, 0), MPI_ERR_ARG);
    EXPECT(MPI_Status_set_error(MPI_STATUS_IGNORE, 0), MPI_ERR_ARG);
    if (is_tessel()) {
        EXPECT(MPI_Status_get_source(&st, NULL), MPI_ERR_ARG);
        EXPECT(MPI_Status_get_error(&st, NULL), MPI_ERR_ARG);
    }
}

/* ------------------------------------------------------------------ */
/* MPI_Request_get_status_all/any/some. */

/* A generalized request's query function fills its status with the
 * accessors. */
static int queries;
static int query_fn(void *extra, MPI_Status *st) {
    queries++;
    MPI_Status_set_source(st, *(int *)extra);
    MPI_Status_set_tag(st, 77);
    MPI_Status_set_error(st, MPI_SUCCESS);
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}
static int free_fn(void *extra) {
    (void)extra;
    return MPI_SUCCESS;
}
static int cancel_fn(void *extra, int complete) {
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static void query_until_any(int n, MPI_Request *rq, int *index, MPI_Status *st) {
    int flag = 0;
    for (long spins = 0; !flag; spins++) {
        OK(MPI_Request_get_status_any(n, rq, index, &flag, st));
        CHECK(spins < 100000000L, "get_status_any never completed");
    }
}

static void several_requests(void) {
    int x = -1, token = rank * 10, flag = -1, index = -1, outcount = -1, indices[3];
    MPI_Request rq[3], pr;
    MPI_Status sts[3], st;
    /* [null, a receive, an inactive persistent receive] */
    OK(MPI_Recv_init(&x, 1, MPI_INT, prev, 43, MPI_COMM_WORLD, &pr));
    rq[0] = MPI_REQUEST_NULL;
    OK(MPI_Irecv(&x, 1, MPI_INT, prev, 42, MPI_COMM_WORLD, &rq[1]));
    rq[2] = pr;
    MPI_Barrier(MPI_COMM_WORLD);
    /* Nothing sent yet: nothing complete, nothing written. */
    sts[0].MPI_TAG = sts[1].MPI_TAG = sts[2].MPI_TAG = -77;
    OK(MPI_Request_get_status_all(3, rq, &flag, sts));
    CHECK(flag == 0, "get_status_all flag %d before the send", flag);
    if (is_tessel())
        CHECK(sts[0].MPI_TAG == -77 && sts[1].MPI_TAG == -77 && sts[2].MPI_TAG == -77,
              "statuses written by an incomplete get_status_all");
    OK(MPI_Request_get_status_any(3, rq, &index, &flag, &st));
    CHECK(flag == 0 && index == MPI_UNDEFINED, "get_status_any %d %d before the send", flag,
          index);
    OK(MPI_Request_get_status_some(3, rq, &outcount, indices, sts));
    CHECK(outcount == 0, "get_status_some outcount %d before the send", outcount);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Send(&token, 1, MPI_INT, next, 42, MPI_COMM_WORLD));

    /* Complete: each query reports it, again and again, and frees nothing. */
    query_until_any(3, rq, &index, &st);
    CHECK(index == 1 && st.MPI_SOURCE == prev && st.MPI_TAG == 42 && count_of(&st) == 1,
          "get_status_any: index %d source %d tag %d", index, st.MPI_SOURCE, st.MPI_TAG);
    CHECK(rq[1] != MPI_REQUEST_NULL && x == prev * 10, "request %s, x %d",
          rq[1] == MPI_REQUEST_NULL ? "freed" : "kept", x);
    for (int round = 0; round < 2; round++) {
        OK(MPI_Request_get_status_all(3, rq, &flag, sts));
        CHECK(flag == 1 && is_empty(&sts[0]) && is_empty(&sts[2]),
              "get_status_all: flag %d, null and inactive not empty", flag);
        CHECK(sts[1].MPI_SOURCE == prev && sts[1].MPI_TAG == 42 && count_of(&sts[1]) == 1,
              "get_status_all: source %d tag %d", sts[1].MPI_SOURCE, sts[1].MPI_TAG);
        OK(MPI_Request_get_status_some(3, rq, &outcount, indices, sts));
        CHECK(outcount == 1 && indices[0] == 1 && sts[0].MPI_SOURCE == prev &&
                  sts[0].MPI_TAG == 42,
              "get_status_some: outcount %d index %d source %d", outcount, indices[0],
              sts[0].MPI_SOURCE);
        OK(MPI_Request_get_status_any(3, rq, &index, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 1 && index == 1, "get_status_any ignoring the status: %d %d", flag,
              index);
        OK(MPI_Request_get_status_all(3, rq, &flag, MPI_STATUSES_IGNORE));
        CHECK(flag == 1, "get_status_all ignoring the statuses");
        OK(MPI_Request_get_status_some(3, rq, &outcount, indices, MPI_STATUSES_IGNORE));
        CHECK(outcount == 1 && indices[0] == 1, "get_status_some ignoring the statuses");
    }
    /* The request is still there for a wait. */
    OK(MPI_Wait(&rq[1], &st));
    CHECK(rq[1] == MPI_REQUEST_NULL && st.MPI_SOURCE == prev, "wait after the queries");

    /* Only null and inactive requests: complete at once, empty statuses. */
    OK(MPI_Request_get_status_any(3, rq, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED && is_empty(&st), "any of none active: %d %d",
          flag, index);
    OK(MPI_Request_get_status_some(3, rq, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "some of none active: %d", outcount);
    OK(MPI_Request_get_status_all(3, rq, &flag, sts));
    CHECK(flag == 1 && is_empty(&sts[0]) && is_empty(&sts[1]) && is_empty(&sts[2]),
          "all of none active");
    OK(MPI_Request_get_status_all(0, NULL, &flag, MPI_STATUSES_IGNORE));
    CHECK(flag == 1, "all of no request");
    OK(MPI_Request_get_status_any(0, NULL, &index, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 1 && index == MPI_UNDEFINED, "any of no request");
    OK(MPI_Request_get_status_some(0, NULL, &outcount, indices, MPI_STATUSES_IGNORE));
    CHECK(outcount == MPI_UNDEFINED, "some of no request");

    /* An active persistent request stays active until waited for. */
    OK(MPI_Start(&pr));
    OK(MPI_Send(&token, 1, MPI_INT, next, 43, MPI_COMM_WORLD));
    for (flag = 0; !flag;) OK(MPI_Request_get_status_all(1, &pr, &flag, &st));
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 43, "persistent: source %d", st.MPI_SOURCE);
    OK(MPI_Request_get_status_some(1, &pr, &outcount, indices, &st));
    CHECK(outcount == 1, "persistent still active: %d", outcount);
    OK(MPI_Wait(&pr, &st));
    CHECK(pr != MPI_REQUEST_NULL && st.MPI_TAG == 43, "persistent wait");
    OK(MPI_Request_get_status_some(1, &pr, &outcount, indices, &st));
    CHECK(outcount == MPI_UNDEFINED, "persistent inactive after the wait: %d", outcount);
    OK(MPI_Request_free(&pr));

    /* A generalized request: its query function runs for each query. */
    MPI_Request g[2];
    int source = 4242;
    queries = 0;
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &source, &g[0]));
    g[1] = MPI_REQUEST_NULL;
    OK(MPI_Request_get_status_any(2, g, &index, &flag, &st));
    CHECK(flag == 0 && queries == 0, "incomplete generalized request: %d %d", flag, queries);
    OK(MPI_Grequest_complete(g[0]));
    OK(MPI_Request_get_status_some(2, g, &outcount, indices, sts));
    CHECK(outcount == 1 && indices[0] == 0 && sts[0].MPI_SOURCE == 4242 &&
              sts[0].MPI_TAG == 77 && count_of(&sts[0]) == 3,
          "generalized: outcount %d source %d tag %d", outcount, sts[0].MPI_SOURCE,
          sts[0].MPI_TAG);
    OK(MPI_Request_get_status_all(2, g, &flag, sts));
    CHECK(flag == 1 && sts[0].MPI_SOURCE == 4242 && is_empty(&sts[1]), "generalized all");
    CHECK(queries >= 2 && g[0] != MPI_REQUEST_NULL, "queries %d", queries);
    OK(MPI_Wait(&g[0], &st));
    CHECK(g[0] == MPI_REQUEST_NULL && st.MPI_TAG == 77, "generalized wait");
}

/* A failed request: its error in its status (MPI_ERR_IN_STATUS) for the
 * "all" and "some" queries, the call's error for "any". */
static void failed_requests(void) {
    int big[4] = {1, 2, 3, 4}, small = 0, flag = -1, index = -1, outcount = -1, indices[2];
    MPI_Request rq[2];
    MPI_Status sts[2], st;
    OK(MPI_Irecv(&small, 1, MPI_INT, prev, 44, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(big, 4, MPI_INT, next, 44, MPI_COMM_WORLD, &rq[1]));
    /* The receive completes once the message arrives; the send then too. */
    do {
        int rc = MPI_Request_get_status_all(2, rq, &flag, sts), class = -1;
        MPI_Error_class(rc, &class);
        CHECK(class == (flag ? MPI_ERR_IN_STATUS : MPI_SUCCESS), "get_status_all: %d flag %d",
              class, flag);
    } while (!flag);
    int c0 = -1, c1 = -1;
    MPI_Error_class(sts[0].MPI_ERROR, &c0);
    MPI_Error_class(sts[1].MPI_ERROR, &c1);
    CHECK(c0 == MPI_ERR_TRUNCATE && c1 == MPI_SUCCESS, "statuses: %d %d", c0, c1);
    EXPECT(MPI_Request_get_status_some(2, rq, &outcount, indices, sts), MPI_ERR_IN_STATUS);
    CHECK(outcount == 2 && indices[0] == 0 && indices[1] == 1, "some: outcount %d", outcount);
    MPI_Error_class(sts[0].MPI_ERROR, &c0);
    MPI_Error_class(sts[1].MPI_ERROR, &c1);
    CHECK(c0 == MPI_ERR_TRUNCATE && c1 == MPI_SUCCESS, "some statuses: %d %d", c0, c1);
    EXPECT(MPI_Request_get_status_any(1, rq, &index, &flag, &st), MPI_ERR_TRUNCATE);
    CHECK(flag == 1 && index == 0, "any of the failed: %d %d", flag, index);
    CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "failed requests kept");
    EXPECT(MPI_Waitall(2, rq, sts), MPI_ERR_IN_STATUS);

    /* Bad arguments. */
    MPI_Request bad[2] = {MPI_REQUEST_NULL, (MPI_Request)0x12345};
    EXPECT(MPI_Request_get_status_all(2, bad, &flag, sts), MPI_ERR_REQUEST);
    EXPECT(MPI_Request_get_status_any(2, bad, &index, &flag, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Request_get_status_some(2, bad, &outcount, indices, sts), MPI_ERR_REQUEST);
    EXPECT(MPI_Request_get_status_all(-1, bad, &flag, sts), MPI_ERR_COUNT);
    EXPECT(MPI_Request_get_status_some(-1, bad, &outcount, indices, sts), MPI_ERR_COUNT);
    if (is_tessel()) {
        EXPECT(MPI_Request_get_status_all(1, bad, NULL, sts), MPI_ERR_ARG);
        EXPECT(MPI_Request_get_status_any(1, bad, NULL, &flag, &st), MPI_ERR_ARG);
        EXPECT(MPI_Request_get_status_some(1, bad, NULL, indices, sts), MPI_ERR_ARG);
    }
}

/* ------------------------------------------------------------------ */
/* MPI_Remove_error_class/code/string. */

static int last_used(void) {
    int *last = NULL, flag = 0;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last, "no MPI_LASTUSEDCODE");
    return *last;
}

static void error_removal(void) {
    int class, code, code2, x = -1, len;
    char text[MPI_MAX_ERROR_STRING];
    OK(MPI_Add_error_class(&class));
    OK(MPI_Add_error_code(class, &code));
    OK(MPI_Add_error_code(class, &code2));
    OK(MPI_Add_error_string(code, "mpi41 code"));
    OK(MPI_Add_error_string(class, "mpi41 class"));
    int last = last_used();
    CHECK(last >= class && last >= code && last >= code2 && last > MPI_ERR_LASTCODE,
          "MPI_LASTUSEDCODE %d", last);
    if (is_tessel()) {
        /* Out of order: a class with codes, a code with its string. */
        EXPECT(MPI_Remove_error_class(class), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_code(code), MPI_ERR_ARG);
        /* A class is no code, a code no class; predefined ones stay. */
        EXPECT(MPI_Remove_error_code(class), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_class(code2), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_class(MPI_ERR_ARG), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_code(MPI_ERR_TRUNCATE), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_string(MPI_ERR_OTHER), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_string(code2), MPI_ERR_ARG); /* has none */
    }
    /* Nothing was removed by the refusals. */
    OK(MPI_Error_class(code, &x));
    CHECK(x == class, "class of code %d", x);
    OK(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "mpi41 code") == 0, "string %s", text);

    OK(MPI_Remove_error_string(code));
    OK(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "mpi41 code") != 0, "string %s after removal", text);
    OK(MPI_Remove_error_code(code));
    OK(MPI_Remove_error_code(code2));
    /* A class's string goes first too (MPICH 5 and mpi4py's suite agree). */
    if (is_tessel()) EXPECT(MPI_Remove_error_class(class), MPI_ERR_ARG);
    OK(MPI_Remove_error_string(class));
    OK(MPI_Remove_error_class(class));
    if (is_tessel()) {
        /* Removed: no more a code, class or string of anything. */
        EXPECT(MPI_Error_class(code, &x), MPI_ERR_ARG);
        EXPECT(MPI_Error_class(class, &x), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_code(code), MPI_ERR_ARG);
        EXPECT(MPI_Remove_error_class(class), MPI_ERR_ARG);
        EXPECT(MPI_Add_error_code(class, &x), MPI_ERR_ARG);
        EXPECT(MPI_Add_error_string(code, "late"), MPI_ERR_ARG);
        /* No user code left (status_fields removed its own). */
        CHECK(last_used() == MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d after removing all",
              last_used());
    }
    /* A new class: a value never used before, MPI_LASTUSEDCODE follows. */
    int again;
    OK(MPI_Add_error_class(&again));
    CHECK(again != class && again != code && again != code2 && last_used() >= again,
          "new class %d, MPI_LASTUSEDCODE %d", again, last_used());
    if (is_tessel()) CHECK(again > last, "new class %d reuses a value (last %d)", again, last);
    OK(MPI_Remove_error_class(again));
}

/* ------------------------------------------------------------------ */
/* MPI_Get_hw_resource_info. */

static void hw_resources(void) {
    MPI_Info info = MPI_INFO_NULL;
    int nkeys = -1, root_nkeys;
    OK(MPI_Get_hw_resource_info(&info));
    CHECK(info != MPI_INFO_NULL, "no info object");
    OK(MPI_Info_get_nkeys(info, &nkeys));
    root_nkeys = nkeys;
    MPI_Bcast(&root_nkeys, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(nkeys == root_nkeys, "%d resource types, rank 0 has %d", nkeys, root_nkeys);
    if (is_tessel()) CHECK(nkeys > 0, "hwloc found no resource type");
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], root_key[MPI_MAX_INFO_KEY + 1], value[16];
        int len = sizeof value, flag = 0;
        OK(MPI_Info_get_nthkey(info, i, key));
        strcpy(root_key, key);
        MPI_Bcast(root_key, sizeof root_key, MPI_CHAR, 0, MPI_COMM_WORLD);
        CHECK(strcmp(key, root_key) == 0, "key %d is %s, rank 0 has %s", i, key, root_key);
        CHECK(strncmp(key, "hwloc://", 8) == 0 && key[8] != '\0', "key %s is no hwloc URI", key);
        OK(MPI_Info_get_string(info, key, &len, value, &flag));
        int restricted = strcmp(value, "true") == 0;
        CHECK(flag && (restricted || strcmp(value, "false") == 0), "%s = %s", key, value);
        /* The key names a resource type to split by: a process restricted
         * to one instance gets the communicator of it, others none. */
        MPI_Info hint;
        MPI_Comm c;
        OK(MPI_Info_create(&hint));
        OK(MPI_Info_set(hint, "mpi_hw_resource_type", key));
        OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hint, &c));
        if (is_tessel())
            CHECK((c != MPI_COMM_NULL) == restricted, "%s = %s, split gave %s", key, value,
                  c == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
        if (c != MPI_COMM_NULL) {
            int n = 0;
            OK(MPI_Comm_size(c, &n));
            CHECK(n >= 1 && n <= size, "%s: %d processes", key, n);
            OK(MPI_Comm_free(&c));
        }
        OK(MPI_Info_free(&hint));
    }
    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "freed info");
    /* Each call makes a new object. */
    MPI_Info a, b;
    OK(MPI_Get_hw_resource_info(&a));
    OK(MPI_Get_hw_resource_info(&b));
    CHECK(a != b, "the same info object twice");
    OK(MPI_Info_free(&a));
    OK(MPI_Info_free(&b));
    EXPECT(MPI_Get_hw_resource_info(NULL), MPI_ERR_ARG);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    status_fields();
    several_requests();
    failed_requests();
    error_removal();
    hw_resources();

    MPI_Barrier(MPI_COMM_WORLD);
    printf("mpi41: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
