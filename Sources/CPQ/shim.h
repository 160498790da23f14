#ifndef CLARION_CPQ_SHIM_H
#define CLARION_CPQ_SHIM_H
#include <libpq-fe.h>
#include <spawn.h>

/// Closes every descriptor from `from` up in the spawned child (glibc 2.34+), for the embedded cluster's programs.
static inline int clarion_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
#endif
