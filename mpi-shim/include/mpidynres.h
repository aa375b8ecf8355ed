/* mpidynres.h: the process-set calls of libmpidynres ("An Emulation Layer
 * for Dynamic Resources with MPI Sessions") on Tessel's MPIX_ functions,
 * so that programs written for that library build unchanged with
 * Tessel's mpicc and run on real process sets kept by mpiexec.
 *
 * Provided: MPI_Session_get_psets, MPIDYNRES_pset_create_op and its
 * operations, MPIDYNRES_pset_free, resource changes (MPIDYNRES_RC_get,
 * MPIDYNRES_RC_accept: mpiexec --dynres POLICY proposes them),
 * MPIDYNRES_exit, and the start-up of mpidynres_sim.h. */
#ifndef TESSEL_MPIDYNRES_H
#define TESSEL_MPIDYNRES_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

enum MPIDYNRES_pset_op {
    MPIDYNRES_PSET_UNION = MPIX_PSET_UNION,
    MPIDYNRES_PSET_INTERSECT = MPIX_PSET_INTERSECTION,
    MPIDYNRES_PSET_DIFFERENCE = MPIX_PSET_DIFFERENCE
};
typedef enum MPIDYNRES_pset_op MPIDYNRES_pset_op;
/* An older spelling of the difference. */
#define MPIDYNRES_PSET_SUBTRACT MPIDYNRES_PSET_DIFFERENCE

enum MPIDYNRES_RC_type {
    MPIDYNRES_RC_NONE = MPIX_DYNRES_NONE,
    MPIDYNRES_RC_ADD = MPIX_DYNRES_ADD,
    MPIDYNRES_RC_SUB = MPIX_DYNRES_SUB
};
typedef enum MPIDYNRES_RC_type MPIDYNRES_RC_type;
typedef int MPIDYNRES_RC_tag;

/* The sets the caller is in: name -> size (decimal). libmpidynres spells
 * the predefined sets in lower case: both spellings are keys here. */
static inline int MPI_Session_get_psets(MPI_Session session, MPI_Info info, MPI_Info *psets)
{
    int rc = MPIX_Session_get_psets(session, info, psets), flag = 0;
    char v[32];
    if (rc != MPI_SUCCESS) return rc;
    MPI_Info_get(*psets, "mpi://WORLD", (int)sizeof v - 1, v, &flag);
    if (flag) MPI_Info_set(*psets, "mpi://world", v);
    MPI_Info_get(*psets, "mpi://SELF", (int)sizeof v - 1, v, &flag);
    if (flag) MPI_Info_set(*psets, "mpi://self", v);
    return MPI_SUCCESS;
}

static inline int MPIDYNRES_pset_create_op(MPI_Session session, MPI_Info hints,
                                           char const pset1[], char const pset2[],
                                           MPIDYNRES_pset_op op, char pset_result[])
{
    return MPIX_Pset_create_op(session, hints, pset1, pset2, (int)op, pset_result);
}

/* Sets are immutable and kept for the job's life: nothing to free. */
static inline int MPIDYNRES_pset_free(MPI_Session session, char const pset_name[])
{
    (void)session;
    (void)pset_name;
    return MPI_SUCCESS;
}

static inline int MPIDYNRES_RC_get(MPI_Session session, MPIDYNRES_RC_type *rc_type,
                                   char delta_pset[], MPIDYNRES_RC_tag *tag, MPI_Info *info)
{
    int type = MPIX_DYNRES_NONE, rc = MPIX_Dynres_get(session, &type, delta_pset, tag, info);
    *rc_type = (MPIDYNRES_RC_type)type;
    if (rc == MPI_SUCCESS && type == MPIX_DYNRES_NONE && info) *info = MPI_INFO_NULL;
    return rc;
}

static inline int MPIDYNRES_RC_accept(MPI_Session session, MPIDYNRES_RC_tag tag, MPI_Info info)
{
    return MPIX_Dynres_accept(session, tag, info);
}

/* A process of a removal's delta set calls it before leaving; here it
 * leaves by returning from main (its sessions finalized), so there is
 * nothing to do. */
static inline int MPIDYNRES_exit(void)
{
    return MPI_SUCCESS;
}

#ifdef __cplusplus
}
#endif

#endif
