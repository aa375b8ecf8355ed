/* Communicators, groups, attributes, info objects and error handlers:
 * split, split_type, create, create_group, compare, names, every group
 * operation, attribute callbacks on dup/free/set/delete, predefined
 * attributes, info objects (before MPI_Init too), user error handlers and
 * user error codes, bad arguments under MPI_ERRORS_RETURN.
 * Optional argument: processes per node, to check MPI_COMM_TYPE_SHARED. */
#include <string.h>
#include "check.h"

/* Some checks are stricter than MPICH's own library: they run only on
 * Tessel's. */
static int is_tessel(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    return strncmp(lib, "Tessel", 6) == 0;
}

static int copies, deletes;

/* MPI_COMM_WORLD, or with processes per node given, the node's
 * communicator: the engine has no inter-node transport yet. */
static MPI_Comm world;
static int job_size;

/* Copy callback that calls MPI (the library lock must be free). */
static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out,
                   int *flag) {
    int size;
    (void)keyval;
    OK(MPI_Comm_size(comm, &size));
    CHECK(extra == &copies, "extra state %p", extra);
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    int rank;
    (void)keyval;
    (void)value;
    OK(MPI_Comm_rank(comm, &rank));
    CHECK(extra == &copies, "extra state %p", extra);
    deletes++;
    return MPI_SUCCESS;
}

/* Attributes of derived types: copied by MPI_Type_dup, deleted by
 * MPI_Type_free. */
static int attr_copies, attr_deletes;
static int count_copy(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag) {
    (void)t;
    (void)keyval;
    (void)extra;
    *(void **)out = in;
    *flag = 1;
    attr_copies++;
    return MPI_SUCCESS;
}
static int count_delete(MPI_Datatype t, int keyval, void *value, void *extra) {
    (void)t;
    (void)keyval;
    (void)extra;
    CHECK(*(int *)value == 7, "deleted value %d", *(int *)value);
    attr_deletes++;
    return MPI_SUCCESS;
}

static int type_deletes;
static int type_delete_fn(MPI_Datatype t, int keyval, void *value, void *extra) {
    (void)keyval;
    (void)extra;
    CHECK(t == MPI_INT, "type %x", (unsigned)t);
    CHECK(*(int *)value == 99, "value %d", *(int *)value);
    type_deletes++;
    return MPI_SUCCESS;
}

/* MPI_Finalize deletes the attributes of MPI_COMM_SELF, the last set
 * first. */
static int self_deleted[2], self_deletes;
static int self_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)keyval;
    (void)extra;
    CHECK(comm == MPI_COMM_SELF, "comm %x", (unsigned)comm);
    if (self_deletes < 2) self_deleted[self_deletes] = *(int *)value;
    self_deletes++;
    return MPI_SUCCESS;
}

static int handler_calls, handler_code;
static MPI_Comm handler_comm;

static void handler(MPI_Comm *comm, int *code, ...) {
    char text[MPI_MAX_ERROR_STRING];
    int len;
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
    /* Handlers may call MPI. */
    MPI_Error_string(*code, text, &len);
}

static void info_before_init(void) {
    MPI_Info info, dup;
    char value[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY + 1], small[3];
    int flag, n, len, buflen;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "color", "blue"));
    OK(MPI_Info_set(info, "shape", "round"));
    OK(MPI_Info_set(info, "color", "green"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2, "nkeys %d", n);
    OK(MPI_Info_get(info, "color", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "green") == 0, "color %d %s", flag, value);
    OK(MPI_Info_get(info, "size", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(!flag, "size found");
    OK(MPI_Info_get_valuelen(info, "shape", &len, &flag));
    CHECK(flag && len == 5, "valuelen %d", len);
    buflen = sizeof small;
    OK(MPI_Info_get_string(info, "shape", &buflen, small, &flag));
    CHECK(flag && buflen == 6 && strcmp(small, "ro") == 0, "get_string %d %s",
          buflen, small);
    OK(MPI_Info_get_nthkey(info, 1, key));
    CHECK(strcmp(key, "shape") == 0, "key 1 %s", key);
    OK(MPI_Info_dup(info, &dup));
    OK(MPI_Info_delete(info, "color"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 1, "nkeys after delete %d", n);
    OK(MPI_Info_get_nkeys(dup, &n));
    CHECK(n == 2, "dup nkeys %d", n);
    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "info not nulled");
    OK(MPI_Info_free(&dup));
    /* What MPI_INFO_ENV holds is up to the library: Tessel's names the
     * command. */
    OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    if (is_tessel()) {
        OK(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, value, &flag));
        CHECK(n >= 1 && flag && strstr(value, "comms") != NULL, "command %d %s", flag,
              value);
    }
}

static void bad_info_arguments(void) {
    MPI_Info info;
    char key[300], value[8];
    int flag;
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    OK(MPI_Info_create(&info));
    EXPECT(MPI_Info_set(info, key, "x"), MPI_ERR_INFO_KEY);
    EXPECT(MPI_Info_set(info, "", "x"), MPI_ERR_INFO_KEY);
    EXPECT(MPI_Info_delete(info, "nothing"), MPI_ERR_INFO_NOKEY);
    EXPECT(MPI_Info_get(info, "k", -1, value, &flag), MPI_ERR_ARG);
    EXPECT(MPI_Info_get_nthkey(info, 0, value), MPI_ERR_ARG);
    if (is_tessel()) EXPECT(MPI_Info_free(&(MPI_Info){MPI_INFO_ENV}), MPI_ERR_INFO);
    EXPECT(MPI_Info_set((MPI_Info)0x12345, "k", "v"), MPI_ERR_INFO);
    OK(MPI_Info_free(&info));
}

static void names(void) {
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm dup;
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world %s", name);
    OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0, "self %s", name);
    OK(MPI_Comm_dup(world, &dup));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(len == 0 && name[0] == 0, "dup named %s", name);
    OK(MPI_Comm_set_name(dup, "mine"));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "mine") == 0 && len == 4, "dup %s", name);
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "not nulled");
}

static void splits(int rank, int size) {
    MPI_Comm half, rev, none, node, dup;
    int r, n, sum, flag, result;
    MPI_Request req;

    /* Even and odd ranks, each in reverse order. */
    OK(MPI_Comm_split(world, rank % 2, -rank, &half));
    OK(MPI_Comm_size(half, &n));
    OK(MPI_Comm_rank(half, &r));
    CHECK(n == (size + 1 - rank % 2) / 2, "half size %d", n);
    CHECK(r == n - 1 - rank / 2, "half rank %d", r);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    int expect = 0;
    for (int i = rank % 2; i < size; i += 2) expect += i;
    CHECK(sum == expect, "sum over half %d, expected %d", sum, expect);

    OK(MPI_Comm_split(world, 0, size - rank, &rev));
    OK(MPI_Comm_compare(world, world, &result));
    CHECK(result == MPI_IDENT, "world vs world %d", result);
    OK(MPI_Comm_compare(world, rev, &result));
    CHECK(result == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "world vs reversed %d",
          result);
    OK(MPI_Comm_idup(world, &dup, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Comm_compare(world, dup, &result));
    CHECK(result == MPI_CONGRUENT, "world vs dup %d", result);
    MPI_Comm idup2, parent;
    OK(MPI_Comm_idup_with_info(world, MPI_INFO_NULL, &idup2, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Comm_compare(world, idup2, &result));
    CHECK(result == MPI_CONGRUENT, "world vs idup_with_info %d", result);
    OK(MPI_Comm_free(&idup2));
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "a parent?");
    OK(MPI_Comm_compare(MPI_COMM_SELF, world, &result));
    CHECK(result == (size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT), "self vs world %d", result);

    OK(MPI_Comm_split(world, rank == 0 ? MPI_UNDEFINED : 1, 0, &none));
    CHECK((rank == 0) == (none == MPI_COMM_NULL), "undefined color gave %x",
          (unsigned)none);
    if (none != MPI_COMM_NULL) {
        OK(MPI_Comm_size(none, &n));
        CHECK(n == size - 1, "size without rank 0: %d", n);
        OK(MPI_Comm_free(&none));
    }

    OK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                           &node));
    OK(MPI_Comm_size(node, &n));
    OK(MPI_Comm_rank(node, &r));
    int leader = r == 0, leaders, total;
    OK(MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, world));
    int mine = leader ? n : 0;
    OK(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, world));
    CHECK(total == size, "node sizes add up to %d", total);
    CHECK(leaders >= 1 && r < n, "%d nodes, rank %d of %d", leaders, r, n);
    OK(MPI_Comm_split_type(world, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none));
    CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED split type");

    OK(MPI_Comm_test_inter(half, &flag));
    CHECK(!flag, "intercommunicator?");
    if (is_tessel()) EXPECT(MPI_Comm_remote_size(half, &n), MPI_ERR_COMM);
    if (is_tessel()) EXPECT(MPI_Comm_split(world, -5, 0, &none), MPI_ERR_ARG);
    EXPECT(MPI_Comm_size((MPI_Comm)0x12345, &n), MPI_ERR_COMM);
    EXPECT(MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM);
    OK(MPI_Comm_free(&half));
    OK(MPI_Comm_free(&rev));
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_free(&dup));
}

/* MPI_Comm_idup does not wait for the other members: each rank
 * duplicates, then passes a token down the line; a rank receives the token
 * before it duplicates (a blocking duplication deadlocks here). Two
 * duplications are in flight at once, with a collective on another
 * communicator between them. */
static void idup_in_flight(int rank, int size) {
    MPI_Comm a, b, other;
    MPI_Request reqs[2];
    int token = 0, sum = -1, n = -1;
    OK(MPI_Comm_dup(world, &other));
    if (rank > 0) OK(MPI_Recv(&token, 1, MPI_INT, rank - 1, 9, world, MPI_STATUS_IGNORE));
    OK(MPI_Comm_idup(world, &a, &reqs[0]));
    OK(MPI_Comm_idup(other, &b, &reqs[1]));
    token++;
    if (rank + 1 < size) OK(MPI_Send(&token, 1, MPI_INT, rank + 1, 9, world));
    CHECK(token == rank + 1, "token %d", token);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, world));
    CHECK(sum == size * (size - 1) / 2, "allreduce during the duplications: %d", sum);
    OK(MPI_Waitall(2, reqs, (MPI_Status[2]){{0}}));
    /* The three communicators carry their own traffic. */
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, a));
    CHECK(sum == size - 1, "allreduce over the first duplicate: %d", sum);
    OK(MPI_Allreduce(&rank, &n, 1, MPI_INT, MPI_MIN, b));
    CHECK(n == 0, "allreduce over the second duplicate: %d", n);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got[3];
    MPI_Comm comms[3] = {a, b, other};
    MPI_Request rr[6];
    for (int k = 0; k < 3; k++) {
        int v = 100 * k + rank;
        OK(MPI_Irecv(&got[k], 1, MPI_INT, left, 3, comms[k], &rr[2 * k]));
        OK(MPI_Isend(&v, 1, MPI_INT, right, 3, comms[k], &rr[2 * k + 1]));
        OK(MPI_Wait(&rr[2 * k + 1], MPI_STATUS_IGNORE));
    }
    for (int k = 0; k < 3; k++) {
        OK(MPI_Wait(&rr[2 * k], MPI_STATUS_IGNORE));
        CHECK(got[k] == 100 * k + left, "message on communicator %d: %d", k, got[k]);
    }
    OK(MPI_Comm_free(&a));
    OK(MPI_Comm_free(&b));
    OK(MPI_Comm_free(&other));
}

static void groups(int rank, int size) {
    MPI_Group wg, rev, evens, odds, u, i, d, e, self;
    int n, r, result;
    int *ranks = malloc(size * sizeof(int)), *out = malloc(size * sizeof(int));

    OK(MPI_Comm_group(world, &wg));
    OK(MPI_Group_size(wg, &n));
    OK(MPI_Group_rank(wg, &r));
    CHECK(n == size && r == rank, "wg group %d/%d", r, n);
    for (int k = 0; k < size; k++) ranks[k] = size - 1 - k;
    OK(MPI_Group_incl(wg, size, ranks, &rev));
    OK(MPI_Group_rank(rev, &r));
    CHECK(r == size - 1 - rank, "reversed rank %d", r);
    OK(MPI_Group_compare(wg, rev, &result));
    CHECK(result == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "compare %d", result);
    OK(MPI_Group_translate_ranks(wg, size, ranks, rev, out));
    for (int k = 0; k < size; k++) CHECK(out[k] == k, "translate %d -> %d", ranks[k], out[k]);

    int even_range[1][3] = {{0, size - 1, 2}};
    OK(MPI_Group_range_incl(wg, 1, even_range, &evens));
    OK(MPI_Group_range_excl(wg, 1, even_range, &odds));
    OK(MPI_Group_size(evens, &n));
    CHECK(n == (size + 1) / 2, "evens %d", n);
    OK(MPI_Group_rank(odds, &r));
    CHECK(r == (rank % 2 ? rank / 2 : MPI_UNDEFINED), "odd rank %d", r);
    OK(MPI_Group_union(odds, evens, &u));
    OK(MPI_Group_compare(u, wg, &result));
    CHECK(result == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "union %d", result);
    OK(MPI_Group_intersection(odds, evens, &i));
    CHECK(i == MPI_GROUP_EMPTY, "intersection not empty");
    OK(MPI_Group_difference(wg, odds, &d));
    OK(MPI_Group_compare(d, evens, &result));
    CHECK(result == MPI_IDENT, "difference %d", result);
    OK(MPI_Group_excl(wg, 1, (int[]){0}, &e));
    OK(MPI_Group_size(e, &n));
    CHECK(n == size - 1, "excl %d", n);
    OK(MPI_Comm_group(MPI_COMM_SELF, &self));
    OK(MPI_Group_translate_ranks(self, 1, (int[]){0}, wg, out));
    CHECK(out[0] == rank, "self in wg %d", out[0]);
    OK(MPI_Group_size(MPI_GROUP_EMPTY, &n));
    CHECK(n == 0, "empty %d", n);

    /* MPI_Comm_create: the even ranks (collective over the world). */
    MPI_Comm ce, cg;
    OK(MPI_Comm_create(world, evens, &ce));
    CHECK((rank % 2 == 0) == (ce != MPI_COMM_NULL), "create gave %x", (unsigned)ce);
    if (ce != MPI_COMM_NULL) {
        OK(MPI_Comm_rank(ce, &r));
        CHECK(r == rank / 2, "even comm rank %d", r);
        OK(MPI_Barrier(ce));
        OK(MPI_Comm_free(&ce));
    }
    /* MPI_Comm_create_group: only the odd ranks take part. */
    if (rank % 2) {
        OK(MPI_Comm_create_group(world, odds, 7, &cg));
        int one = 1, count;
        OK(MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, cg));
        CHECK(count == size / 2, "odd comm size %d", count);
        OK(MPI_Comm_free(&cg));
    } else {
        /* Not in the group: MPI_COMM_NULL at once. */
        OK(MPI_Comm_create_group(world, odds, 7, &cg));
        CHECK(cg == MPI_COMM_NULL, "not a member but got a communicator");
    }
    OK(MPI_Barrier(world));

    EXPECT(MPI_Group_incl(wg, 1, (int[]){size}, &e), MPI_ERR_RANK);
    if (is_tessel()) EXPECT(MPI_Group_incl(wg, 2, (int[]){0, 0}, &e), MPI_ERR_RANK);
    EXPECT(MPI_Group_range_incl(wg, 1, (int[][3]){{0, 0, 0}}, &e), MPI_ERR_ARG);
    EXPECT(MPI_Group_size((MPI_Group)0x12345, &n), MPI_ERR_GROUP);
    EXPECT(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP);
    EXPECT(MPI_Comm_create_group(world, odds, -1, &cg), MPI_ERR_TAG);

    MPI_Group *all[] = {&wg, &rev, &evens, &odds, &u, &i, &d, &e, &self};
    for (unsigned k = 0; k < sizeof all / sizeof *all; k++) {
        OK(MPI_Group_free(all[k]));
        CHECK(*all[k] == MPI_GROUP_NULL, "group %u not nulled", k);
    }
    EXPECT(MPI_Group_free(&wg), MPI_ERR_GROUP);
    free(ranks);
    free(out);
}

static void attributes(void) {
    MPI_Comm a, b;
    int keyval, nocopy, old, flag, value = 42, other = 7, *got;

    OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &keyval, &copies));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nocopy,
                              NULL));
    OK(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &old, NULL));
    int dupkv;
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupkv, NULL));
    OK(MPI_Comm_dup(world, &a));
    OK(MPI_Comm_get_attr(a, keyval, &got, &flag));
    CHECK(!flag, "attribute before set");
    OK(MPI_Comm_set_attr(a, keyval, &value));
    OK(MPI_Comm_set_attr(a, nocopy, &value));
    OK(MPI_Attr_put(a, old, &other));
    OK(MPI_Comm_set_attr(a, dupkv, &other));
    OK(MPI_Comm_get_attr(a, keyval, &got, &flag));
    CHECK(flag && got == &value, "get %d %p", flag, (void *)got);

    OK(MPI_Comm_dup(a, &b));
    CHECK(copies == 1, "copies %d", copies);
    OK(MPI_Comm_get_attr(b, keyval, &got, &flag));
    CHECK(flag && got == &value, "copied attribute %d", flag);
    OK(MPI_Comm_get_attr(b, nocopy, &got, &flag));
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN copied");
    OK(MPI_Attr_get(b, old, &got, &flag));
    CHECK(flag && got == &other, "MPI_DUP_FN did not copy");
    OK(MPI_Comm_get_attr(b, dupkv, &got, &flag));
    CHECK(flag && got == &other, "MPI_COMM_DUP_FN did not copy");

    /* Setting over a value deletes the old one. */
    OK(MPI_Comm_set_attr(b, keyval, &other));
    CHECK(deletes == 1, "deletes after set-over %d", deletes);
    OK(MPI_Comm_delete_attr(b, keyval));
    CHECK(deletes == 2, "deletes after delete %d", deletes);
    OK(MPI_Comm_get_attr(b, keyval, &got, &flag));
    CHECK(!flag, "deleted attribute still there");
    OK(MPI_Comm_free(&b));
    CHECK(deletes == 2, "free of b deleted %d", deletes);
    /* The keyval may be freed while attributes still use it. */
    OK(MPI_Comm_free_keyval(&keyval));
    CHECK(keyval == MPI_KEYVAL_INVALID, "keyval not invalidated");
    OK(MPI_Comm_free(&a));
    CHECK(deletes == 3, "free of a: deletes %d", deletes);
    OK(MPI_Comm_free_keyval(&nocopy));
    OK(MPI_Keyval_free(&old));
    OK(MPI_Comm_free_keyval(&dupkv));

    /* Predefined attributes. */
    int *v;
    OK(MPI_Comm_get_attr(world, MPI_TAG_UB, &v, &flag));
    CHECK(flag && *v >= 32767, "MPI_TAG_UB %d", flag ? *v : -1);
    OK(MPI_Comm_get_attr(world, MPI_HOST, &v, &flag));
    CHECK(flag && *v == MPI_PROC_NULL, "MPI_HOST");
    OK(MPI_Comm_get_attr(world, MPI_IO, &v, &flag));
    CHECK(flag && *v == MPI_ANY_SOURCE, "MPI_IO");
    OK(MPI_Comm_get_attr(world, MPI_WTIME_IS_GLOBAL, &v, &flag));
    CHECK(flag && *v == 0, "MPI_WTIME_IS_GLOBAL");
    OK(MPI_Comm_get_attr(world, MPI_UNIVERSE_SIZE, &v, &flag));
    /* The room mpiexec leaves for spawned processes: its TESSEL_UNIVERSE
     * says BASE SIZE ID. */
    const char *universe = getenv("TESSEL_UNIVERSE");
    int usize = job_size;
    if (universe) sscanf(universe, "%*d %d", &usize);
    if (is_tessel()) CHECK(flag && *v == usize && *v >= job_size, "MPI_UNIVERSE_SIZE %d", *v);
    OK(MPI_Attr_get(world, MPI_APPNUM, &v, &flag));
    CHECK(flag && *v == 0, "MPI_APPNUM");
    EXPECT(MPI_Comm_set_attr(world, MPI_TAG_UB, &value), MPI_ERR_KEYVAL);
    EXPECT(MPI_Comm_get_attr(world, 0x12345, &v, &flag), MPI_ERR_KEYVAL);

    /* Datatype attributes. */
    int tk, nine = 99;
    OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete_fn, &tk, NULL));
    OK(MPI_Type_set_attr(MPI_INT, tk, &nine));
    OK(MPI_Type_get_attr(MPI_INT, tk, &got, &flag));
    CHECK(flag && got == &nine, "type attribute");
    OK(MPI_Type_get_attr(MPI_DOUBLE, tk, &got, &flag));
    CHECK(!flag, "attribute on another type");
    EXPECT(MPI_Comm_set_attr(world, tk, &nine), MPI_ERR_KEYVAL);
    OK(MPI_Type_delete_attr(MPI_INT, tk));
    CHECK(type_deletes == 1, "type deletes %d", type_deletes);
    OK(MPI_Type_free_keyval(&tk));

    int dk, seven = 7;
    MPI_Datatype pair, copy;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_create_keyval(count_copy, count_delete, &dk, NULL));
    OK(MPI_Type_set_attr(pair, dk, &seven));
    OK(MPI_Type_dup(pair, &copy));
    OK(MPI_Type_get_attr(copy, dk, &got, &flag));
    CHECK(flag && got == &seven && attr_copies == 1, "dup's attribute %d, %d copies", flag,
          attr_copies);
    OK(MPI_Type_free(&copy));
    CHECK(attr_deletes == 1, "%d deletes after freeing the dup", attr_deletes);
    OK(MPI_Type_free(&pair));
    CHECK(attr_deletes == 2, "%d deletes after freeing the original", attr_deletes);
    OK(MPI_Type_free_keyval(&dk));
}

static void comm_info(void) {
    MPI_Info info, used;
    MPI_Comm c;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    OK(MPI_Comm_dup_with_info(world, info, &c));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "true") == 0, "hint %d", flag);
    OK(MPI_Info_free(&used));
    OK(MPI_Info_set(info, "mpi_assert_no_any_tag", "false"));
    OK(MPI_Comm_set_info(c, info));
    OK(MPI_Comm_get_info(c, &used));
    OK(MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "false") == 0, "hint after set %d", flag);
    OK(MPI_Info_free(&used));
    OK(MPI_Info_free(&info));
    EXPECT(MPI_Comm_set_info(c, (MPI_Info)0x12345), MPI_ERR_INFO);
    OK(MPI_Comm_free(&c));
}

static void error_handlers(int size) {
    MPI_Errhandler eh, got;
    MPI_Comm c;
    int x = 0, class, code, last, *lastp, flag, len;
    char text[MPI_MAX_ERROR_STRING];

    OK(MPI_Comm_create_errhandler(handler, &eh));
    OK(MPI_Comm_dup(world, &c));
    OK(MPI_Comm_set_errhandler(c, eh));
    OK(MPI_Comm_get_errhandler(c, &got));
    CHECK(got == eh, "handler %x", (unsigned)got);
    OK(MPI_Errhandler_free(&got)); /* each get's handle is freed too */
#ifndef MPI_ABI_VERSION /* the standard ABI has no MPI-1 error handler calls */
    OK(MPI_Errhandler_get(c, &got));
    CHECK(got == eh, "MPI-1 get: handler %x", (unsigned)got);
    OK(MPI_Errhandler_free(&got));
#endif
    MPI_Errhandler freed = eh;
    OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "handler not nulled");
    if (is_tessel()) EXPECT(MPI_Comm_set_errhandler(world, freed), MPI_ERR_ARG);

    int rc = MPI_Send(&x, 1, MPI_INT, size, 0, c);
    CHECK(rc != MPI_SUCCESS && handler_calls == 1, "handler calls %d", handler_calls);
    OK(MPI_Error_class(handler_code, &class));
    CHECK(class == MPI_ERR_RANK && handler_comm == c, "handler got class %d", class);

    OK(MPI_Add_error_class(&class));
    OK(MPI_Add_error_code(class, &code));
    OK(MPI_Add_error_string(code, "the sky fell"));
    OK(MPI_Error_class(code, &x));
    CHECK(x == class, "class of user code %d", x);
    OK(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "the sky fell") == 0 && len == 12, "string %s", text);
    OK(MPI_Comm_get_attr(world, MPI_LASTUSEDCODE, &lastp, &flag));
    last = *lastp;
    CHECK(flag, "no MPI_LASTUSEDCODE");
    if (is_tessel())
        CHECK(last >= code && last >= class, "MPI_LASTUSEDCODE %d", last);
    OK(MPI_Comm_call_errhandler(c, code));
    CHECK(handler_calls == 2 && handler_code == code, "call_errhandler %d %d",
          handler_calls, handler_code);
    if (is_tessel()) {
        EXPECT(MPI_Add_error_code(code + 1000, &x), MPI_ERR_ARG);
        EXPECT(MPI_Add_error_string(MPI_ERR_ARG, "no"), MPI_ERR_ARG);
        EXPECT(MPI_Comm_set_errhandler(c, (MPI_Errhandler)0x12345), MPI_ERR_ARG);
    }
    OK(MPI_Comm_free(&c));
}

/* With processes per node given: MPI_COMM_TYPE_SHARED gives this
 * process's virtual node, of ranks r / ppn. */
static MPI_Comm node_of(int ppn) {
    MPI_Comm node;
    int rank, n, r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                           &node));
    OK(MPI_Comm_size(node, &n));
    OK(MPI_Comm_rank(node, &r));
    int first = rank / ppn * ppn;
    int expect = job_size - first < ppn ? job_size - first : ppn;
    CHECK(n == expect && r == rank - first, "node communicator %d/%d, expected %d/%d",
          r, n, rank - first, expect);
    return node;
}

int main(int argc, char **argv) {
    int rank, size, ppn = argc > 1 ? atoi(argv[1]) : 0;
    info_before_init();
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &job_size);
    world = ppn > 0 ? node_of(ppn) : MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);

    bad_info_arguments();
    names();
    splits(rank, size);
    idup_in_flight(rank, size);
    groups(rank, size);
    attributes();
    comm_info();
    error_handlers(size);

    static int first = 1, second = 2;
    int self_key;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &self_key, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, &first));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, &first));
    int other_key;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &other_key, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, other_key, &second));
    CHECK(self_deletes == 1, "set-over deleted %d", self_deletes);
    self_deletes = 0;

    OK(MPI_Barrier(world));
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    /* Across virtual nodes MPI_Finalize cannot synchronise (no inter-node
     * transport): its error is returned, not fatal. */
    MPI_Finalize();
    CHECK(self_deletes == 2 && self_deleted[0] == 2 && self_deleted[1] == 1,
          "MPI_COMM_SELF attributes deleted %d: %d %d", self_deletes, self_deleted[0],
          self_deleted[1]);
    printf("comms: rank %d ok\n", world_rank);
    return 0;
}
