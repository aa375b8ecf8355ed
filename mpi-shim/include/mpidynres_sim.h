/* mpidynres_sim.h: libmpidynres's start-up, for programs written for it.
 * libmpidynres emulates dynamic resources on a fixed communicator, so its
 * programs start the emulated application through MPIDYNRES_SIM_start.
 * With Tessel the processes are real (mpiexec --dynres adds and removes
 * them), so MPIDYNRES_SIM_start runs the application's entry at once in
 * every process, the new ones included; the configuration's communicator
 * and manager info are not used: mpiexec's --dynres POLICY decides. */
#ifndef TESSEL_MPIDYNRES_SIM_H
#define TESSEL_MPIDYNRES_SIM_H

#include <mpidynres.h>

#ifdef __cplusplus
extern "C" {
#endif

struct MPIDYNRES_SIM_config {
    MPI_Comm base_communicator;
    MPI_Info manager_config;
};
typedef struct MPIDYNRES_SIM_config MPIDYNRES_SIM_config;
typedef int (*MPIDYNRES_main_func)(int argc, char *argv[]);

static inline int MPIDYNRES_SIM_start(MPIDYNRES_SIM_config config, int argc, char *argv[],
                                      MPIDYNRES_main_func main_func)
{
    (void)config;
    return main_func(argc, argv);
}

#ifdef __cplusplus
}
#endif

#endif
