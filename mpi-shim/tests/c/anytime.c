/* The functions MPI lets any thread call at any time, whatever the thread
 * level (MPI-4.1 §11.6.1 and the sessions chapter): at MPI_THREAD_FUNNELED
 * a second thread calls them over and over while the main thread passes
 * messages and runs collectives. The library takes its lock for the main
 * thread without a locked instruction, so these functions must exclude it
 * another way: every result stays right, nothing hangs, and the sessions
 * the second thread opened work afterwards. The last of them asks for
 * MPI_THREAD_MULTIPLE, which switches the library to threaded mode while
 * the main thread is calling.
 *
 * Runs on any number of processes; rank r pairs with r ^ 1 where that
 * rank exists. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 2000
#define SESSIONS 6
/* Rounds of the second thread between two sessions it opens. */
#define PER_SESSION 50

static int rank, size, provided;
static volatile int done;
static MPI_Session sessions[SESSIONS];
static int user_class, user_code;
static const char *user_text = "an error class the application added";

static void *any_time(void *unused) {
    (void)unused;
    long round = 0;
    int opened = 0;
    while (!done || opened < SESSIONS) {
        int flag = -1, level = -1, version = -1, sub = -1, class = -1, len = 0;
        char text[MPI_MAX_ERROR_STRING];
        OK(MPI_Initialized(&flag));
        CHECK(flag == 1, "MPI_Initialized says %d", flag);
        OK(MPI_Finalized(&flag));
        CHECK(flag == 0, "MPI_Finalized says %d", flag);
        OK(MPI_Query_thread(&level));
        CHECK(level == provided, "MPI_Query_thread says %d, MPI_Init_thread %d", level, provided);
        OK(MPI_Is_thread_main(&flag));
        CHECK(flag == 0, "MPI_Is_thread_main says %d on the second thread", flag);
        OK(MPI_Get_version(&version, &sub));
        CHECK(version >= 4, "MPI_Get_version says %d.%d", version, sub);
        OK(MPI_Error_class(user_code, &class));
        CHECK(class == user_class, "class %d of the user code, expected %d", class, user_class);
        OK(MPI_Error_string(user_code, text, &len));
        CHECK(strcmp(text, user_text) == 0, "user code's string %s", text);
        MPI_Info info;
        OK(MPI_Info_create(&info));
        const char *level_name =
            opened == SESSIONS - 1 ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SINGLE";
        OK(MPI_Info_set(info, "thread_level", level_name));
        if (opened < SESSIONS && round % PER_SESSION == 0)
            OK(MPI_Session_init(info, MPI_ERRORS_RETURN, &sessions[opened++]));
        OK(MPI_Info_free(&info));
        round++;
        /* A short nap: on fewer cores than processes, a thread that never
         * sleeps would take the cores from the ones communicating. */
        usleep(20);
    }
    return NULL;
}

/* Before MPI_Init_thread, on a thread other than the main one: the main
 * thread is the one that initializes, whoever asked first. */
static void *before_init(void *flag) {
    int level = -1;
    OK(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_SINGLE, "MPI_Query_thread before MPI_Init_thread says %d", level);
    OK(MPI_Is_thread_main(flag));
    return NULL;
}

int main(int argc, char **argv) {
    int flag = -1, level = -1;
    pthread_t early;
    CHECK(pthread_create(&early, NULL, before_init, &flag) == 0, "pthread_create");
    pthread_join(early, NULL);
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    CHECK(provided >= MPI_THREAD_FUNNELED, "provided %d", provided);
    report_library();
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "MPI_Is_thread_main says %d on the thread that initialized", flag);
    OK(MPI_Query_thread(&level));
    CHECK(level == provided, "MPI_Query_thread says %d, MPI_Init_thread %d", level, provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Add_error_class(&user_class));
    OK(MPI_Add_error_code(user_class, &user_code));
    OK(MPI_Add_error_string(user_code, user_text));

    pthread_t t;
    CHECK(pthread_create(&t, NULL, any_time, NULL) == 0, "pthread_create");
    int partner = rank ^ 1;
    for (int i = 0; i < ROUNDS; i++) {
        if (partner < size) {
            int out = rank * ROUNDS + i, in = -1;
            OK(MPI_Sendrecv(&out, 1, MPI_INT, partner, i % 7, &in, 1, MPI_INT, partner, i % 7,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(in == partner * ROUNDS + i, "round %d: got %d from %d", i, in, partner);
        }
        int sum = -1;
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == size * (size - 1) / 2, "round %d: allreduce %d", i, sum);
        if (i % 100 == 0)
            OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    done = 1;
    CHECK(pthread_join(t, NULL) == 0, "pthread_join");

    for (int s = 0; s < SESSIONS; s++) {
        int n = -1;
        OK(MPI_Session_get_num_psets(sessions[s], MPI_INFO_NULL, &n));
        CHECK(n >= 2, "session %d has %d process sets", s, n);
        OK(MPI_Session_finalize(&sessions[s]));
    }
    printf("anytime: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
