#ifndef HERALD_CHIREDIS_SHIM_H
#define HERALD_CHIREDIS_SHIM_H
// hiredis (Debian's libhiredis-dev 0.14) on heraldd's libuv loop (docs/cluster.md).
//
// Not hiredis's own adapters/libuv.h: in 0.14 its poll callback returns at once when libuv
// reports an error on the socket (`if (status != 0) return;`), so a Redis that died with a
// reset was never read again and the disconnect never noticed (seen in RedisLinkTests now
// and then). This adapter hands an error to hiredis as readiness for whatever it waits for,
// so hiredis's read or write fails, it reports the disconnect and frees the context.
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

/// The adapter's state for one context: its poll handle and the events it waits for.
typedef struct herald_redis_events {
    redisAsyncContext *context;
    uv_poll_t handle;
    int events;
} herald_redis_events;

static inline void herald_redis_poll(uv_poll_t *handle, int status, int events) {
    herald_redis_events *state = (herald_redis_events *)handle->data;
    int ready = status != 0 ? state->events : events;
    if (state->context != NULL && (ready & UV_READABLE)) redisAsyncHandleRead(state->context);
    if (state->context != NULL && (ready & UV_WRITABLE)) redisAsyncHandleWrite(state->context);
}

static inline void herald_redis_update(herald_redis_events *state, int events) {
    state->events = events;
    if (events) {
        uv_poll_start(&state->handle, events, herald_redis_poll);
    } else {
        uv_poll_stop(&state->handle);
    }
}

static inline void herald_redis_add_read(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    herald_redis_update(state, state->events | UV_READABLE);
}

static inline void herald_redis_del_read(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    herald_redis_update(state, state->events & ~UV_READABLE);
}

static inline void herald_redis_add_write(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    herald_redis_update(state, state->events | UV_WRITABLE);
}

static inline void herald_redis_del_write(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    herald_redis_update(state, state->events & ~UV_WRITABLE);
}

static inline void herald_redis_closed(uv_handle_t *handle) {
    free(handle->data);
}

static inline void herald_redis_cleanup(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    state->context = NULL;  // the context is being freed: no more calls into it
    uv_close((uv_handle_t *)&state->handle, herald_redis_closed);
}

/// Attaches an async context to a libuv loop. Returns REDIS_OK or REDIS_ERR.
static inline int herald_redis_attach(redisAsyncContext *context, uv_loop_t *loop) {
    if (context->ev.data != NULL) return REDIS_ERR;
    herald_redis_events *state = (herald_redis_events *)calloc(1, sizeof(herald_redis_events));
    if (state == NULL) return REDIS_ERR;
    if (uv_poll_init(loop, &state->handle, context->c.fd) != 0) {
        free(state);
        return REDIS_ERR;
    }
    state->handle.data = state;
    state->context = context;
    context->ev.addRead = herald_redis_add_read;
    context->ev.delRead = herald_redis_del_read;
    context->ev.addWrite = herald_redis_add_write;
    context->ev.delWrite = herald_redis_del_write;
    context->ev.cleanup = herald_redis_cleanup;
    context->ev.data = state;
    return REDIS_OK;
}
#endif
