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
/// The bytes glibc malloc holds free in its heaps (`mallinfo2().fordblks`), and the bytes of
/// its heaps (`arena`): freed memory it has not given back to the system.
static inline void herald_malloc_heap(size_t *free_bytes, size_t *heap_bytes) {
    struct mallinfo2 info = mallinfo2();
    *free_bytes = info.fordblks;
    *heap_bytes = info.arena;
}

/// Gives free heap pages back to the system (`malloc_trim(0)`: the top of each heap, and the
/// whole free pages inside it). Returns 1 when memory was released.
static inline int herald_malloc_trim(void) {
    return malloc_trim(0);
}
#endif
