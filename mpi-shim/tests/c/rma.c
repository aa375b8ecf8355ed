/* One-sided communication: windows of every flavor (create, allocate,
 * allocate_shared with direct loads and stores, dynamic with attach);
 * put, get, accumulate, get_accumulate, fetch_and_op, compare_and_swap and
 * the request-based forms, with a derived target datatype; fence, locks
 * (exclusive, shared, lock_all, flush), post-start-complete-wait; the
 * predefined attributes, group, name, info and error handler; the errors
 * of operations outside an epoch and outside the window. */
#include <stdint.h>
#include <string.h>
#include "check.h"

enum { N = 16 };
static int rank, size;

/* Some checks are stricter than MPICH's own library: they run only on
 * Tessel's. */
static int is_tessel(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    return strncmp(lib, "Tessel", 6) == 0;
}

/* Active target: over the caller's own memory (`alloc_mem` false: reached
 * by messages), or over MPI_Alloc_mem memory (which node peers map and
 * reach with plain copies). */
static void fence_ops(int alloc_mem) {
    int stack[N], *buf = stack;
    if (alloc_mem) OK(MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &buf));
    for (int i = 0; i < N; i++) buf[i] = 100 * rank + i;
    MPI_Win win;
    OK(MPI_Win_create(buf, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Put my rank into my right neighbour's element 0; get its 1..3. */
    int got[3] = {-1, -1, -1};
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    OK(MPI_Get(got, 3, MPI_INT, right, 1, 3, MPI_INT, win));
    OK(MPI_Put(&rank, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(buf[0] == left, "put from the left gave %d", buf[0]);
    for (int i = 0; i < 3; i++)
        CHECK(got[i] == 100 * right + 1 + i, "get %d gave %d", i, got[i]);

    /* Everyone adds its rank + 1 to rank 0's element 5; a vector type at
     * the target (every other element from 8) takes a put. */
    int one = rank + 1;
    OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 5, 1, MPI_INT, MPI_SUM, win));
    MPI_Datatype every_other;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    int four[4] = {rank, rank + 1, rank + 2, rank + 3};
    OK(MPI_Put(four, 4, MPI_INT, right, 8, 1, every_other, win));
    OK(MPI_Win_fence(0, win));
    if (rank == 0) CHECK(buf[5] == 5 + size * (size + 1) / 2, "accumulate gave %d", buf[5]);
    /* (Element 15 may take the next epoch's put already.) */
    for (int k = 0; k < 4; k++) {
        CHECK(buf[8 + 2 * k] == left + k, "vector put element %d: %d", k, buf[8 + 2 * k]);
        if (k < 3) CHECK(buf[9 + 2 * k] == 100 * rank + 9 + 2 * k, "vector put touched %d", 9 + 2 * k);
    }
    OK(MPI_Type_free(&every_other));

    /* Request-based put and get inside a fence epoch. */
    MPI_Request reqs[2];
    int mine = 1000 + rank, theirs = -1;
    OK(MPI_Rput(&mine, 1, MPI_INT, right, 15, 1, MPI_INT, win, &reqs[0]));
    OK(MPI_Rget(&theirs, 1, MPI_INT, right, 13, 1, MPI_INT, win, &reqs[1]));
    OK(MPI_Waitall(2, reqs, (MPI_Status[2]){{0}}));
    CHECK(theirs == 100 * right + 13, "rget gave %d", theirs);
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(buf[15] == 1000 + left, "rput gave %d", buf[15]);

    /* Errors: no epoch is open now; a range past the window. */
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    EXPECT(MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_sync(win), MPI_ERR_RMA_SYNC);
    OK(MPI_Win_fence(0, win));
    /* (MPICH does not check the range.) */
    if (is_tessel()) EXPECT(MPI_Put(&rank, 2, MPI_INT, right, N - 1, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(&rank, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "freed window handle");
    if (alloc_mem) OK(MPI_Free_mem(buf));
}

static void passive_ops(void) {
    int *mem = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < N; i++) mem[i] = -1;
    mem[0] = 0;
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* A counter at rank 0: each fetch-and-add sees a distinct value. */
    int inc = 1, prev = -5;
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Fetch_and_op(&inc, &prev, MPI_INT, 0, 0, MPI_SUM, win));
    OK(MPI_Win_flush(0, win));
    OK(MPI_Win_unlock_all(win));
    int seen[64] = {0}, all[64];
    OK(MPI_Allgather(&prev, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        CHECK(all[r] >= 0 && all[r] < size && !seen[all[r]]++, "fetch_and_op values");
    }

    /* Every rank adds to one counter many times at once (rank 0's
     * element N - 2): node peers that map the window apply their adds
     * themselves, others send them, and every add must land once, so
     * that the fetched values are distinct and the count is exact. */
    enum { ADDS = 200 };
    static int fetched[ADDS], every[64 * ADDS];
    static unsigned char hit[64 * ADDS];
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        mem[N - 2] = 0;
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < ADDS; k++) {
        OK(MPI_Fetch_and_op(&inc, &fetched[k], MPI_INT, 0, N - 2, MPI_SUM, win));
        if (k % 3 == 0) {
            /* And plain accumulates between them (counted below). */
            OK(MPI_Accumulate(&inc, 1, MPI_INT, 0, N - 2, 1, MPI_INT, MPI_SUM, win));
        }
        OK(MPI_Win_flush(0, win));
    }
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Allgather(fetched, ADDS, MPI_INT, every, ADDS, MPI_INT, MPI_COMM_WORLD));
    int per_rank = ADDS + (ADDS + 2) / 3, total = size * per_rank;
    for (int i = 0; i < size * ADDS; i++) {
        CHECK(every[i] >= 0 && every[i] < total && !hit[every[i]]++,
              "fetch_and_op under contention fetched %d", every[i]);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(mem[N - 2] == total, "the counter reads %d, not %d", mem[N - 2], total);
        mem[N - 2] = -1;
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Compare-and-swap on rank 0's element 1 (-1): exactly one wins. */
    int cmp = -1, result = -7;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    OK(MPI_Compare_and_swap(&rank, &cmp, &result, MPI_INT, 0, 1, win));
    OK(MPI_Win_unlock(0, win));
    int won = result == -1, winners = 0;
    OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(winners == 1, "%d compare-and-swap winners", winners);

    /* Compare-and-swap retry loops: every rank adds 1 to rank 0's element
     * N - 2 (-1) ten times, each add a swap from the value it last saw;
     * a failed swap returns the value to retry from. */
    OK(MPI_Win_lock_all(0, win));
    int guess = -1, tries = 0;
    for (int k = 0; k < 10; k++) {
        for (;;) {
            int want = guess + 1, old = -7;
            OK(MPI_Compare_and_swap(&want, &guess, &old, MPI_INT, 0, N - 2, win));
            OK(MPI_Win_flush(0, win));
            tries++;
            CHECK(old >= -1 && old < 10 * size, "compare-and-swap returned %d", old);
            int swapped = old == guess;
            guess = swapped ? want : old;
            if (swapped)
                break;
        }
    }
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(mem[N - 2] == 10 * size - 1, "after the swaps the counter reads %d, not %d",
              mem[N - 2], 10 * size - 1);
        mem[N - 2] = -1; /* as the tests below expect */
        OK(MPI_Win_unlock(0, win));
    }
    CHECK(tries >= 10, "%d swaps", tries);

    /* Put and get to the right neighbour's last element, under an
     * exclusive lock; then read it back under a shared one. */
    int right = (rank + 1) % size, back = -1, mark = 1000 + rank;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    OK(MPI_Put(&mark, 1, MPI_INT, right, N - 1, 1, MPI_INT, win));
    OK(MPI_Win_flush(right, win));
    OK(MPI_Get(&back, 1, MPI_INT, right, N - 1, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right, win));
    CHECK(back == mark, "get after put and flush gave %d", back);

    /* Get_accumulate: swap my rank into my element at rank 0 (2 + rank,
     * inside the window for up to 14 processes), fetching the -1. */
    if (2 + rank < N) {
        int old = 0;
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        OK(MPI_Get_accumulate(&rank, 1, MPI_INT, &old, 1, MPI_INT, 0, 2 + rank, 1, MPI_INT,
                              MPI_REPLACE, win));
        OK(MPI_Win_unlock(0, win));
        CHECK(old == -1, "get_accumulate fetched %d", old);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(mem[N - 1] == 1000 + (rank + size - 1) % size, "put from the left gave %d", mem[N - 1]);
    if (rank == 0) {
        CHECK(mem[0] == size, "counter %d", mem[0]);
        for (int r = 0; r < size && 2 + r < N; r++) CHECK(mem[2 + r] == r, "element %d", 2 + r);
    }
    OK(MPI_Win_unlock(rank, win));

    /* Rank 0 polls its own window with MPI_Win_flush (a spin lock over
     * RMA does) until every other rank's accumulate arrived: the flush
     * must let the library apply them. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock_all(0, win));
    if (rank == 0) {
        for (;;) {
            OK(MPI_Win_flush(0, win));
            int arrived = 0;
            OK(MPI_Win_sync(win));
            for (int r = 1; r < size && 2 + r < N; r++) arrived += mem[2 + r] == -2;
            if (arrived == (size < N - 2 ? size : N - 2) - 1) break;
        }
    } else if (2 + rank < N) {
        int minus_two = -2;
        OK(MPI_Accumulate(&minus_two, 1, MPI_INT, 0, 2 + rank, 1, MPI_INT, MPI_REPLACE, win));
    }
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Attributes of an allocated window. */
    void *base = NULL;
    MPI_Aint *wsize = NULL;
    int *unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == mem, "MPI_WIN_BASE");
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == N * (MPI_Aint)sizeof(int), "MPI_WIN_SIZE");
    OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == sizeof(int), "MPI_WIN_DISP_UNIT");
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR");
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");
    OK(MPI_Win_free(&win));
}

/* Post-start-complete-wait around a ring: each exposes to its left
 * neighbour and accesses its right one. */
/* Every rank but 0 adds a vector of ones to rank 0's window again and
 * again, all at once: node peers that map the window apply their sums
 * themselves, rank 0 applies those that come as messages. None may be
 * lost. */
static void contended_vectors(void) {
    enum { LEN = 4096, ROUNDS = 50 };
    static int ones[LEN];
    int *mem = NULL;
    MPI_Win win;
    for (int i = 0; i < LEN; i++) ones[i] = 1;
    OK(MPI_Win_allocate(LEN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < LEN; i++) mem[i] = 0;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock_all(0, win));
    /* Rank 0 serves: it applies what comes as messages while its node
     * peers apply theirs. */
    for (int k = 0; k < ROUNDS && rank > 0; k++) {
        OK(MPI_Accumulate(ones, LEN, MPI_INT, 0, 0, LEN, MPI_INT, MPI_SUM, win));
        OK(MPI_Win_flush(0, win));
    }
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int i = 0; i < LEN; i++) {
            CHECK(mem[i] == (size - 1) * ROUNDS, "element %d of the sum reads %d, not %d", i,
                  mem[i], (size - 1) * ROUNDS);
        }
        OK(MPI_Win_unlock(0, win));
    }
    /* Every rank reads the whole sum back with one get-accumulate (a
     * fetched value far larger than one element). */
    static int back[LEN];
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    OK(MPI_Get_accumulate(NULL, 0, MPI_INT, back, LEN, MPI_INT, 0, 0, LEN, MPI_INT, MPI_NO_OP,
                          win));
    OK(MPI_Win_unlock(0, win));
    for (int i = 0; i < LEN; i++) {
        CHECK(back[i] == (size - 1) * ROUNDS, "element %d fetched %d, not %d", i, back[i],
              (size - 1) * ROUNDS);
    }
    OK(MPI_Win_free(&win));
}

/* Every rank but 0 adds 1 to rank 0's one counter many times, with no
 * flush between the adds: node peers that map the window apply theirs
 * under rank 0's accumulate lock, while rank 0 applies the others', which
 * queue up as messages, one after the other under the same lock. Both
 * kinds of read-add-write then run at once on one element, and none may
 * be lost. A message costs the origin about fifty times what a direct add
 * costs, so when there are other nodes, rank 0's node peers add fifty
 * times as often as the others, and all add for about as long. (The
 * vectors above rarely overlap in time: on virtual nodes this is the case
 * that needs the target to take its lock.) */
static void contended_counter(void) {
    enum { ADDS = 20000, NEAR = 50 };
    int *mem = NULL, one = 1;
    MPI_Win win;
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int zero_here = rank == 0, near = 0, far = 0;
    OK(MPI_Allreduce(MPI_IN_PLACE, &zero_here, 1, MPI_INT, MPI_MAX, node));
    int is_far = !zero_here;
    OK(MPI_Allreduce(&is_far, &far, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    near = size - far;
    int adds = rank == 0 ? 0 : is_far || far == 0 ? ADDS : NEAR * ADDS;
    int total = far * ADDS + (near - 1) * (far ? NEAR : 1) * ADDS;
    OK(MPI_Comm_free(&node));

    OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    mem[0] = 0;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < adds; k++) {
        OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
    }
    if (rank != 0) OK(MPI_Win_unlock_all(win));
    /* Rank 0 tests (and so applies messages as they come) until every
     * origin's unlock is through; a blocking wait could sleep instead.
     * The others wait, leaving the cores to rank 0 and the adders. */
    MPI_Request done;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &done));
    if (rank == 0) {
        for (int flag = 0; !flag;) OK(MPI_Test(&done, &flag, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Wait(&done, MPI_STATUS_IGNORE));
    }
    if (rank == 0) OK(MPI_Win_unlock_all(win));
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(mem[0] == total, "the counter reads %d, not %d", mem[0], total);
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Win_free(&win));
}

static void pscw(void) {
    int buf[2] = {-1, -1};
    MPI_Win win;
    OK(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Group world, left_g, right_g;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_incl(world, 1, &left, &left_g));
    OK(MPI_Group_incl(world, 1, &right, &right_g));
    for (int round = 0; round < 3; round++) {
        int v = 10 * round + rank;
        OK(MPI_Win_post(left_g, 0, win));
        OK(MPI_Win_start(right_g, 0, win));
        OK(MPI_Put(&v, 1, MPI_INT, right, round % 2, 1, MPI_INT, win));
        OK(MPI_Win_complete(win));
        if (round == 2) {
            int flag = 0;
            while (!flag) OK(MPI_Win_test(win, &flag));
        } else {
            OK(MPI_Win_wait(win));
        }
        CHECK(buf[round % 2] == 10 * round + left, "round %d gave %d", round, buf[round % 2]);
    }
    OK(MPI_Group_free(&left_g));
    OK(MPI_Group_free(&right_g));
    OK(MPI_Group_free(&world));
    OK(MPI_Win_free(&win));
}

/* A shared window over the node: contiguous, every process loads and
 * stores its neighbours' parts directly. */
static void shared(void) {
    MPI_Comm node;
    int nrank, nsize;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_rank(node, &nrank));
    OK(MPI_Comm_size(node, &nsize));
    long *mine = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate_shared(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, node, &mine, &win));
    /* The usual pattern: a passive epoch to every process, stores, then
     * MPI_Win_sync and a barrier before the loads. */
    OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    mine[0] = 7 * nrank;
    mine[1] = 0;
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(node));
    OK(MPI_Win_sync(win));
    int right = (nrank + 1) % nsize;
    MPI_Aint rsize;
    int runit;
    long *theirs = NULL;
    OK(MPI_Win_shared_query(win, right, &rsize, &runit, &theirs));
    CHECK(rsize == 2 * sizeof(long) && runit == sizeof(long), "shared query %ld %d", (long)rsize, runit);
    CHECK(theirs[0] == 7 * right, "direct load gave %ld", theirs[0]);
    if (right == nrank + 1) CHECK(theirs == mine + 2, "shared memory is contiguous");
    theirs[1] = nrank + 1;
    OK(MPI_Win_sync(win));
    OK(MPI_Barrier(node));
    OK(MPI_Win_sync(win));
    CHECK(mine[1] == (nrank + nsize - 1) % nsize + 1, "direct store gave %ld", mine[1]);
    OK(MPI_Win_unlock_all(win));
    /* One-sided calls on it too. */
    long v = 0;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    OK(MPI_Get(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, win));
    OK(MPI_Win_unlock(right, win));
    CHECK(v == 7 * right, "get from a shared window gave %ld", v);
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&node));
}

/* A dynamic window: each process attaches a buffer and publishes its
 * address; the left neighbour writes into it. */
static void dynamic(void) {
    MPI_Win win;
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int buf[4] = {0, 0, 0, 0};
    OK(MPI_Win_attach(win, buf, sizeof buf));
    MPI_Aint addr, addrs[64];
    OK(MPI_Get_address(buf, &addr));
    OK(MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int v[2] = {rank, -rank};
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    OK(MPI_Put(v, 2, MPI_INT, right, addrs[right] + sizeof(int), 2, MPI_INT, win));
    OK(MPI_Win_unlock(right, win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(buf[1] == left && buf[2] == -left && buf[0] == 0 && buf[3] == 0, "dynamic put gave %d %d",
          buf[1], buf[2]);
    /* A get from memory the target did not attach: Tessel's target
     * refuses it (and says so on stderr) and the origin does not hang. */
    if (is_tessel()) {
        int none = -9;
        OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        OK(MPI_Get(&none, 1, MPI_INT, right, addrs[right] + 64 * 1024, 1, MPI_INT, win));
        OK(MPI_Win_unlock(right, win));
        CHECK(none == -9, "a refused get wrote %d", none);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_detach(win, buf));
    OK(MPI_Win_free(&win));
}

static int win_deletes;

static int win_delete_fn(MPI_Win win, int keyval, void *value, void *extra) {
    (void)win;
    (void)keyval;
    CHECK(extra == &win_deletes && *(int *)value == 42, "delete callback arguments");
    win_deletes++;
    return MPI_SUCCESS;
}

static void queries(void) {
    int x = 0;
    MPI_Win win;
    OK(MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    /* A user attribute, deleted by MPI_Win_free. */
    static int value = 42;
    int key, flag = 0;
    int *got = NULL;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete_fn, &key, &win_deletes));
    OK(MPI_Win_set_attr(win, key, &value));
    OK(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag && got == &value, "window attribute");
    MPI_Group wg, cg;
    int cmp = -1, len = 0;
    OK(MPI_Win_get_group(win, &wg));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
    OK(MPI_Group_compare(wg, cg, &cmp));
    CHECK(cmp == MPI_IDENT, "window group compares %d", cmp);
    OK(MPI_Group_free(&wg));
    OK(MPI_Group_free(&cg));
    char name[MPI_MAX_OBJECT_NAME];
    OK(MPI_Win_set_name(win, "tessel window"));
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(strcmp(name, "tessel window") == 0 && len == 13, "name %s", name);
    OK(MPI_Win_get_name(MPI_WIN_NULL, name, &len));
    CHECK(strcmp(name, "MPI_WIN_NULL") == 0, "null name %s", name);
    MPI_Info info;
    OK(MPI_Win_get_info(win, &info));
    OK(MPI_Info_free(&info));
    MPI_Errhandler eh;
    OK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window error handler");
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_Win_free(&win));
    CHECK(win_deletes == 1, "MPI_Win_free deleted %d attributes", win_deletes);
    OK(MPI_Win_free_keyval(&key));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 processes");
    fence_ops(0);
    fence_ops(1);
    passive_ops();
    contended_vectors();
    contended_counter();
    pscw();
    shared();
    dynamic();
    queries();
    printf("rma: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
