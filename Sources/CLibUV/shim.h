#ifndef HERALD_CLIBUV_SHIM_H
#define HERALD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <malloc.h>

/// Sets the calling thread's nice value (on Linux, nice is per thread). For the KDF work on
/// libuv's thread pool, which must not take CPU from the loops; libuv 1.44 has no
/// uv_thread_setpriority, and SYS_gettid is a macro Swift cannot import.
/// Returns 0, or -1 with errno set.
static inline int herald_set_thread_niceness(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness);
}

/// Turns glibc malloc's fastbins off (issue 32, item 3): a connection leaving with 1,000,000
/// subscriptions freed millions of small blocks into fastbins, and the next free of a large
/// block made malloc_consolidate merge them all at once, a 340-380 ms stall of the loop
/// (perf: malloc_consolidate and unlink_chunk led that window). Without fastbins a free
/// merges with its neighbours as it goes; small blocks still pass through the per-thread
/// cache first. `malloc.h` is not part of Swift's Glibc module, hence this shim.
/// Returns mallopt's result: 1 on success.
static inline int herald_disable_malloc_fastbins(void) {
    return mallopt(M_MXFAST, 0);
}
#endif
