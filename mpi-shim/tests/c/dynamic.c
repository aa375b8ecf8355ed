/* Dynamic processes (MPI-4.1 §11.8): spawning copies of this program
 * (which then run the child part below), spawn_multiple, a spawn by every
 * rank at once, the errors of a spawn; ports between two halves of the
 * world with name publishing; MPI_Comm_join over a TCP socket.
 *
 * Spawning needs room in the universe (MPI_UNIVERSE_SIZE above the world
 * size: Tessel's mpiexec on one node); names need Tessel's mpiexec. Where
 * either is missing (virtual nodes, another launcher), those parts are
 * skipped and the rest still runs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "check.h"

/* A child: its role is argv[1]. */
static int child(int argc, char **argv, MPI_Comm parent) {
    int rank, size, rsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_remote_size(parent, &rsize);
    int inter = 0;
    MPI_Comm_test_inter(parent, &inter);
    CHECK(inter, "the parent communicator is an intercommunicator");
    CHECK(argc >= 2, "a child gets its role as an argument");
    if (strcmp(argv[1], "pair") == 0) {
        /* Two children of a spawn by the whole world. */
        CHECK(size == 2 && argc == 3 && strcmp(argv[2], "x y") == 0, "pair: size %d, argc %d", size, argc);
        int v = -1;
        /* The parents' root broadcasts; the children answer with a reduce. */
        MPI_Bcast(&v, 1, MPI_INT, 0, parent);
        CHECK(v == 42, "bcast from the parents: %d", v);
        int one = 1, sum = 0;
        MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, parent);
        /* Point-to-point with each parent. */
        for (int p = 0; p < rsize; p++) {
            int got = -1;
            MPI_Sendrecv(&rank, 1, MPI_INT, p, 7, &got, 1, MPI_INT, p, 7, parent, MPI_STATUS_IGNORE);
            CHECK(got == p, "parent %d sent %d", p, got);
        }
        /* The merged intracommunicator: parents first. */
        MPI_Comm all;
        MPI_Intercomm_merge(parent, 1, &all);
        int arank, asize, total = 0, me = 1;
        MPI_Comm_rank(all, &arank);
        MPI_Comm_size(all, &asize);
        CHECK(asize == rsize + 2 && arank == rsize + rank, "merged: rank %d of %d", arank, asize);
        MPI_Allreduce(&me, &total, 1, MPI_INT, MPI_SUM, all);
        CHECK(total == asize, "allreduce over the merged communicator: %d", total);
        MPI_Comm_free(&all);
    } else if (strcmp(argv[1], "multi") == 0) {
        /* spawn_multiple: command i runs with argument i. */
        CHECK(size == 3 && argc == 3, "multi: size %d argc %d", size, argc);
        int expected = rank == 0 ? 0 : 1, *appnum = NULL, flag = 0;
        CHECK(atoi(argv[2]) == expected, "multi: rank %d got %s", rank, argv[2]);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
        CHECK(flag && *appnum == expected, "multi: MPI_APPNUM of rank %d", rank);
        MPI_Barrier(parent);
    } else if (strcmp(argv[1], "self") == 0) {
        CHECK(size == 1 && rsize == 1, "self: %d %d", size, rsize);
        int who = -1;
        MPI_Recv(&who, 1, MPI_INT, 0, 3, parent, MPI_STATUS_IGNORE);
        who += 1000;
        MPI_Send(&who, 1, MPI_INT, 0, 3, parent);
    } else {
        CHECK(0, "unknown role %s", argv[1]);
    }
    MPI_Comm_disconnect(&parent);
    CHECK(parent == MPI_COMM_NULL, "disconnect nulls the handle");
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "no parent after disconnecting");
    printf("dynamic child %s: rank %d ok\n", argv[1], rank);
    MPI_Finalize();
    return 0;
}

static void spawning(const char *self, int rank, int size) {
    /* The whole world spawns two children, arguments given at the root only. */
    char *args[] = {"pair", "x y", NULL};
    int codes[2] = {-1, -1};
    MPI_Comm inter;
    if (rank == 0)
        OK(MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
    else
        OK(MPI_Comm_spawn(NULL, NULL, -1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "error codes %d %d", codes[0], codes[1]);
    int rsize, lsize;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    CHECK(rsize == 2 && lsize == size, "spawn intercommunicator %d/%d", lsize, rsize);
    int v = 42;
    MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    int sum = 0, dummy = 0;
    MPI_Reduce(&dummy, &sum, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    CHECK(rank != 0 || sum == 2, "reduce from the children: %d", sum);
    for (int c = 0; c < 2; c++) {
        int got = -1;
        MPI_Sendrecv(&rank, 1, MPI_INT, c, 7, &got, 1, MPI_INT, c, 7, inter, MPI_STATUS_IGNORE);
        CHECK(got == c, "child %d sent %d", c, got);
    }
    MPI_Comm all;
    MPI_Intercomm_merge(inter, 0, &all);
    int arank, asize, total = 0, me = 1;
    MPI_Comm_rank(all, &arank);
    MPI_Comm_size(all, &asize);
    CHECK(asize == size + 2 && arank == rank, "merged: rank %d of %d", arank, asize);
    MPI_Allreduce(&me, &total, 1, MPI_INT, MPI_SUM, all);
    CHECK(total == asize, "allreduce over the merged communicator: %d", total);
    MPI_Comm_free(&all);
    OK(MPI_Comm_disconnect(&inter));

    /* spawn_multiple: two commands, one and two processes. */
    char *argv0[] = {"multi", "0", NULL}, *argv1[] = {"multi", "1", NULL};
    char *cmds[] = {(char *)self, (char *)self};
    char **argvs[] = {argv0, argv1};
    int procs[] = {1, 2};
    MPI_Info infos[] = {MPI_INFO_NULL, MPI_INFO_NULL};
    int mcodes[3];
    OK(MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &inter, mcodes));
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == 3, "spawn_multiple started %d", rsize);
    MPI_Barrier(inter);
    OK(MPI_Comm_disconnect(&inter));

    /* Every rank spawns its own child at once. */
    char *sargs[] = {"self", NULL};
    OK(MPI_Comm_spawn(self, sargs, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE));
    int back = -1;
    MPI_Send(&rank, 1, MPI_INT, 0, 3, inter);
    MPI_Recv(&back, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE);
    CHECK(back == rank + 1000, "self child answered %d", back);
    OK(MPI_Comm_disconnect(&inter));

    /* Errors: a command that does not exist, more processes than the
     * universe has room for; the error codes say so at the root. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad[2] = {0, 0};
    inter = MPI_COMM_WORLD;
    EXPECT(MPI_Comm_spawn("/nonexistent/tessel-test", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, bad),
           MPI_ERR_SPAWN);
    int cls = -1;
    MPI_Error_class(bad[0], &cls);
    CHECK(rank != 0 || (cls == MPI_ERR_SPAWN && bad[1] == bad[0]), "error codes of a failed spawn: class %d", cls);
    EXPECT(MPI_Comm_spawn(self, sargs, 1 << 20, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE),
           MPI_ERR_SPAWN);
    EXPECT(MPI_Comm_spawn(self, sargs, 1, MPI_INFO_NULL, size, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE),
           MPI_ERR_ROOT);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Two halves of the world meet through a port, found by name. */
static void ports(int rank, int size, int names) {
    MPI_Comm half;
    int color = rank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    char port[MPI_MAX_PORT_NAME] = "";
    if (color == 1 && rank == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK(strncmp(port, "tessel:", 7) == 0, "port name %s", port);
        if (names) OK(MPI_Publish_name("tessel-test-service", MPI_INFO_NULL, port));
    }
    if (!names) MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm inter;
    if (color == 1) {
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    } else {
        char found[MPI_MAX_PORT_NAME] = "";
        if (names && rank == size / 2) OK(MPI_Lookup_name("tessel-test-service", MPI_INFO_NULL, found));
        OK(MPI_Comm_connect(names ? found : port, MPI_INFO_NULL, 0, half, &inter));
    }
    int rsize, one = 1, total = 0;
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == (color ? size - size / 2 : size / 2), "remote size %d", rsize);
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, inter);
    CHECK(total == rsize, "allreduce across the port: %d", total);
    OK(MPI_Comm_disconnect(&inter));
    MPI_Barrier(MPI_COMM_WORLD);
    if (color == 1 && rank == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (names) {
            OK(MPI_Unpublish_name("tessel-test-service", MPI_INFO_NULL, port));
            char none[MPI_MAX_PORT_NAME];
            EXPECT(MPI_Lookup_name("tessel-test-service", MPI_INFO_NULL, none), MPI_ERR_NAME);
            EXPECT(MPI_Unpublish_name("tessel-test-service", MPI_INFO_NULL, port), MPI_ERR_SERVICE);
        }
        OK(MPI_Close_port(port));
        EXPECT(MPI_Close_port(port), MPI_ERR_PORT);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    MPI_Comm_free(&half);
}

/* MPI_Comm_join between ranks 0 and 1 over a loopback TCP connection. */
static void join(int rank) {
    int fd = -1;
    if (rank == 0) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
                  getsockname(l, (struct sockaddr *)&a, &len) == 0,
              "listening socket");
        int p = ntohs(a.sin_port);
        MPI_Send(&p, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        fd = accept(l, NULL, NULL);
        close(l);
    } else {
        int p;
        MPI_Recv(&p, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(p), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    }
    CHECK(fd >= 0, "socket");
    MPI_Comm inter;
    OK(MPI_Comm_join(fd, &inter));
    int got = -1, other = 1 - rank;
    MPI_Sendrecv(&rank, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE);
    CHECK(got == other, "join peer sent %d", got);
    OK(MPI_Comm_disconnect(&inter));
    close(fd);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) return child(argc, argv, parent);
    report_library();
    int rank, size, flag = 0, *usize = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag && *usize >= size, "MPI_UNIVERSE_SIZE");
    /* Tessel's mpiexec tells its processes their universe. */
    int ours = getenv("TESSEL_UNIVERSE") != NULL;
    if (ours && *usize >= size + 3 + size) spawning(argv[0], rank, size);
    if (size >= 2) {
        ports(rank, size, ours);
        if (rank < 2) join(rank);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm none;
    EXPECT(MPI_Comm_connect("not-a-port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &none), MPI_ERR_PORT);
    EXPECT(MPI_Comm_accept("tessel:1:2:3", MPI_INFO_NULL, 0, MPI_COMM_SELF, &none), MPI_ERR_PORT);
    OK(MPI_Open_port(MPI_INFO_NULL, port));
    OK(MPI_Close_port(port));
    printf("dynamic: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
