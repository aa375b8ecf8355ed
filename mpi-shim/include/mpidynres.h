/* mpidynres.h: the process-set calls of libmpidynres ("An Emulation Layer
 * for Dynamic Resources with MPI Sessions") on Tessel's MPIX_ functions,
 * so that programs written for that library build unchanged with
 * Tessel's mpicc and run on real process sets kept by mpiexec.
 *
 * Provided: MPI_Session_get_psets, MPIDYNRES_pset_create_op and its
 * operations. Not yet provided (a program that calls them does not
 * build): resource changes (MPIDYNRES_RC_get, MPIDYNRES_RC_accept),
 * MPIDYNRES_pset_free, MPIDYNRES_exit and the MPIDYNRES_SIM_* start-up. */
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

/* The sets the caller's session sees: name -> size (decimal). */
static inline int MPI_Session_get_psets(MPI_Session session, MPI_Info info, MPI_Info *psets)
{
    return MPIX_Session_get_psets(session, info, psets);
}

static inline int MPIDYNRES_pset_create_op(MPI_Session session, MPI_Info hints,
                                           char const pset1[], char const pset2[],
                                           MPIDYNRES_pset_op op, char pset_result[])
{
    return MPIX_Pset_create_op(session, hints, pset1, pset2, (int)op, pset_result);
}

#ifdef __cplusplus
}
#endif

#endif
