#ifndef HERALD_CLIBUV_SHIM_H
#define HERALD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Sets the calling thread's nice value (on Linux, nice is per thread). For the KDF work on
/// libuv's thread pool, which must not take CPU from the loops; libuv 1.44 has no
/// uv_thread_setpriority, and SYS_gettid is a macro Swift cannot import.
/// Returns 0, or -1 with errno set.
static inline int herald_set_thread_niceness(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness);
}
#endif
