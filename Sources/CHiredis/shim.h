#ifndef HERALD_CHIREDIS_SHIM_H
#define HERALD_CHIREDIS_SHIM_H
// hiredis (Debian's libhiredis-dev 0.14) with its libuv adapter, so a Redis connection's
// replies arrive on heraldd's own loop (docs/cluster.md). The adapter's functions are static
// in its header; Swift calls redisLibuvAttach through the wrapper below.
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

/// Attaches an async context to a libuv loop. Returns REDIS_OK or REDIS_ERR.
static inline int herald_redis_attach(redisAsyncContext *context, uv_loop_t *loop) {
    return redisLibuvAttach(context, loop);
}
#endif
