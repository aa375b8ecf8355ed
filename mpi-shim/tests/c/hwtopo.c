/* The node's hardware as MPI sees it: the process sets mpix://node and
 * mpix://numa/<k>, and MPI_Comm_split_type with MPI_COMM_TYPE_HW_GUIDED
 * and MPI_COMM_TYPE_HW_UNGUIDED (MPI-4.0 §7.4.2). Checks only what holds
 * on any machine and binding: the NUMA split agrees with the NUMA sets,
 * finer splits nest in coarser ones, unguided splits shrink strictly.
 * Optional argument "bound": every process was bound to a core or a NUMA
 * node, so it has a NUMA node. Prints "hwtopo: rank R ok". */
#include <string.h>
#include "check.h"

/* The size of `set`'s group and whether this process is in it. */
static int pset_size(MPI_Session s, const char *set, int *member) {
    MPI_Group g;
    int size, rank;
    OK(MPI_Group_from_session_pset(s, set, &g));
    OK(MPI_Group_size(g, &size));
    OK(MPI_Group_rank(g, &rank));
    *member = rank != MPI_UNDEFINED;
    OK(MPI_Group_free(&g));
    return size;
}

/* The NUMA sets: their total size, and the k of the one holding this
 * process (-1 if none). Checks mpix://node against mpix://SHARED. */
static int numa_sets(int *total) {
    MPI_Session s;
    int n, mine = -1, member;
    *total = 0;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = sizeof name, k;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        if (sscanf(name, "mpix://numa/%d", &k) != 1) continue;
        int size = pset_size(s, name, &member);
        CHECK(size > 0, "%s is listed but empty", name);
        *total += size;
        if (member) {
            CHECK(mine == -1, "in mpix://numa/%d and %s", mine, name);
            mine = k;
        }
    }
    int shared_member, node_member;
    int shared = pset_size(s, "mpix://SHARED", &shared_member);
    int node = pset_size(s, "MPIX://node", &node_member);
    CHECK(shared == node && shared_member && node_member, "node %d, SHARED %d", node, shared);
    CHECK(*total <= shared, "NUMA sets hold %d of %d processes", *total, shared);
    OK(MPI_Session_finalize(&s));
    return mine;
}

/* MPI_Comm_split_type(comm, type, ...) with mpi_hw_resource_type = value
 * (no info object for NULL). */
static MPI_Comm split(MPI_Comm comm, int type, const char *value) {
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm c;
    int rank;
    OK(MPI_Comm_rank(comm, &rank));
    if (value) {
        OK(MPI_Info_create(&info));
        OK(MPI_Info_set(info, "mpi_hw_resource_type", value));
    }
    OK(MPI_Comm_split_type(comm, type, rank, info, &c));
    if (value) OK(MPI_Info_free(&info));
    return c;
}

static int size_of(MPI_Comm c) {
    int size = 0;
    if (c != MPI_COMM_NULL) OK(MPI_Comm_size(c, &size));
    return size;
}

/* Every member of `inner` is in `outer` (this process is in both). */
static int nested(MPI_Comm inner, MPI_Comm outer) {
    MPI_Group gi, go, both;
    int n, ni;
    OK(MPI_Comm_group(inner, &gi));
    OK(MPI_Comm_group(outer, &go));
    OK(MPI_Group_intersection(gi, go, &both));
    OK(MPI_Group_size(both, &n));
    OK(MPI_Group_size(gi, &ni));
    MPI_Group_free(&gi);
    MPI_Group_free(&go);
    MPI_Group_free(&both);
    return n == ni;
}

/* The NUMA split holds exactly the processes of this process's NUMA set,
 * and the splits' leaders account for every process of the NUMA sets. */
static void check_numa(MPI_Comm shared, int bound) {
    int total, k = numa_sets(&total);
    if (bound) CHECK(k >= 0, "a bound process in no NUMA set");
    MPI_Comm numa = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, "NUMANode");
    CHECK((numa != MPI_COMM_NULL) == (k >= 0), "NUMA split %s, NUMA set %d",
          numa == MPI_COMM_NULL ? "null" : "made", k);
    int lead = 0;
    if (numa != MPI_COMM_NULL) {
        int lo, hi, crank;
        OK(MPI_Allreduce(&k, &lo, 1, MPI_INT, MPI_MIN, numa));
        OK(MPI_Allreduce(&k, &hi, 1, MPI_INT, MPI_MAX, numa));
        CHECK(lo == k && hi == k, "NUMA split spans sets %d..%d", lo, hi);
        OK(MPI_Comm_rank(numa, &crank));
        if (crank == 0) lead = size_of(numa);
        /* hwloc's spelling with its URI prefix splits the same way. */
        MPI_Comm again = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, "hwloc://numanode");
        int same;
        OK(MPI_Comm_compare(numa, again, &same));
        CHECK(same == MPI_CONGRUENT, "hwloc://numanode split differs (%d)", same);
        OK(MPI_Comm_free(&again));
        CHECK(nested(numa, shared), "NUMA split leaves the node");
    } else {
        MPI_Comm again = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, "hwloc://numanode");
        CHECK(again == MPI_COMM_NULL, "hwloc://numanode split made");
    }
    int sum;
    OK(MPI_Allreduce(&lead, &sum, 1, MPI_INT, MPI_SUM, shared));
    CHECK(sum == total, "NUMA splits hold %d processes, NUMA sets %d", sum, total);
    if (numa != MPI_COMM_NULL) OK(MPI_Comm_free(&numa));
}

/* Finer levels nest in coarser ones, all in the node (a level the
 * machine does not describe gives MPI_COMM_NULL and is skipped). */
static void check_levels(MPI_Comm shared) {
    const char *levels[] = {"Core", "L2Cache", "L3Cache", "NUMANode", "Package"};
    MPI_Comm comms[5];
    for (int i = 0; i < 5; i++) comms[i] = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, levels[i]);
    for (int i = 0; i < 5; i++) {
        if (comms[i] == MPI_COMM_NULL) continue;
        CHECK(nested(comms[i], shared), "%s split leaves the node", levels[i]);
        for (int j = i + 1; j < 5; j++)
            if (comms[j] != MPI_COMM_NULL)
                CHECK(nested(comms[i], comms[j]), "%s split not inside %s", levels[i],
                      levels[j]);
    }
    for (int i = 0; i < 5; i++)
        if (comms[i] != MPI_COMM_NULL) OK(MPI_Comm_free(&comms[i]));
}

/* mpi_shared_memory is MPI_COMM_TYPE_SHARED; values the library does not
 * know, a missing key and no info at all give MPI_COMM_NULL everywhere. */
static void check_guided_values(MPI_Comm shared) {
    MPI_Comm c = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, "mpi_shared_memory");
    int same;
    OK(MPI_Comm_compare(c, shared, &same));
    CHECK(same == MPI_CONGRUENT, "mpi_shared_memory split differs from SHARED (%d)", same);
    OK(MPI_Comm_free(&c));
    c = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, "FluxCapacitor");
    CHECK(c == MPI_COMM_NULL, "unknown resource type gave a communicator");
    c = split(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, NULL);
    CHECK(c == MPI_COMM_NULL, "MPI_INFO_NULL gave a communicator");
    MPI_Info other;
    OK(MPI_Info_create(&other));
    OK(MPI_Info_set(other, "some_other_key", "Core"));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, other, &c));
    CHECK(c == MPI_COMM_NULL, "no mpi_hw_resource_type gave a communicator");
    OK(MPI_Info_free(&other));
}

/* Unguided splits from MPI_COMM_WORLD down: each strictly smaller than
 * its parent, named in the info object, and guided by that name again it
 * gives the same members. */
static void check_unguided(void) {
    MPI_Comm parent = MPI_COMM_WORLD;
    for (int level = 0; level < 8; level++) {
        MPI_Info info;
        MPI_Comm c;
        int rank;
        OK(MPI_Comm_rank(parent, &rank));
        OK(MPI_Info_create(&info));
        OK(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_UNGUIDED, rank, info, &c));
        if (c == MPI_COMM_NULL) {
            OK(MPI_Info_free(&info));
            break;
        }
        CHECK(size_of(c) < size_of(parent), "unguided split of %d processes has %d",
              size_of(parent), size_of(c));
        char value[MPI_MAX_INFO_VAL];
        int len = sizeof value, flag = 0;
        OK(MPI_Info_get_string(info, "mpi_hw_resource_type", &len, value, &flag));
        CHECK(flag, "unguided split did not name its resource");
        MPI_Comm guided = split(parent, MPI_COMM_TYPE_HW_GUIDED, value);
        int same;
        OK(MPI_Comm_compare(c, guided, &same));
        CHECK(same == MPI_CONGRUENT, "unguided split by %s differs from guided (%d)", value,
              same);
        OK(MPI_Comm_free(&guided));
        OK(MPI_Info_free(&info));
        if (parent != MPI_COMM_WORLD) OK(MPI_Comm_free(&parent));
        parent = c;
    }
    if (parent != MPI_COMM_WORLD) OK(MPI_Comm_free(&parent));
}

int main(int argc, char **argv) {
    int bound = argc > 1 && strcmp(argv[1], "bound") == 0, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    report_library();
    MPI_Comm shared;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    check_numa(shared, bound);
    check_levels(shared);
    check_guided_values(shared);
    check_unguided();
    OK(MPI_Comm_free(&shared));
    printf("hwtopo: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
