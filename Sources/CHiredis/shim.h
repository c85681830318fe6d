#ifndef HERALD_CHIREDIS_SHIM_H
#define HERALD_CHIREDIS_SHIM_H
// hiredis (Debian's libhiredis-dev 0.14) on heraldd's libuv loop (docs/cluster.md).
//
// Not hiredis's own adapters/libuv.h: in 0.14 its poll callback returns at once when libuv
// reports an error on the socket (`if (status != 0) return;`), so a Redis that died with a
// reset was never read again and the disconnect never noticed (seen in RedisLinkTests now
// and then). This adapter hands an error to hiredis as readiness for whatever it waits for,
// so hiredis's read or write fails, it reports the disconnect and frees the context.
//
// Writing (docs/architecture.md, "The Redis write path"): hiredis asks for WRITABLE
// (`addWrite`) after every command it buffers, and writes only when the loop next reports
// the socket writable: one more epoll pass per batch, and an epoll_ctl to start and one to
// stop watching for it. Here a connected context's new output is only marked pending:
// `herald_redis_flush` writes it at once (the engine calls it at the end of a loop pass's
// batch), and a prepare handle writes whatever is still pending before the loop next polls
// (commands issued in reply callbacks, timers, anything not flushed by hand). WRITABLE is
// watched only while a connect is under way or hiredis could not write everything (the
// socket would block). The poll handle is restarted only when what it waits for changes.
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

/// The adapter's state for one context: its poll and prepare handles, the events the poll
/// handle waits for, and whether hiredis holds output not yet tried.
typedef struct herald_redis_events {
    redisAsyncContext *context;
    uv_poll_t handle;
    uv_prepare_t prepare;
    int events;
    /// hiredis buffered output that no write has tried yet.
    int write_pending;
    /// Inside redisAsyncHandleWrite (an addWrite then means "the socket would block").
    int writing;
    /// Handles not closed yet: the state is freed in the last close callback.
    int open_handles;
} herald_redis_events;

static inline void herald_redis_poll(uv_poll_t *handle, int status, int events);

/// Makes the poll handle wait for `events`, touching it only when that changes (hiredis asks
/// for READABLE after every write).
static inline void herald_redis_update(herald_redis_events *state, int events) {
    if (events == state->events) return;
    state->events = events;
    if (events) {
        uv_poll_start(&state->handle, events, herald_redis_poll);
    } else {
        uv_poll_stop(&state->handle);
    }
}

/// Lets hiredis write what it holds. The state outlives a context freed meanwhile (it goes
/// in the close callbacks, later in the loop pass), and cleanup clears `context`.
static inline void herald_redis_write(herald_redis_events *state) {
    state->write_pending = 0;
    state->writing = 1;
    redisAsyncHandleWrite(state->context);
    state->writing = 0;
}

static inline void herald_redis_poll(uv_poll_t *handle, int status, int events) {
    herald_redis_events *state = (herald_redis_events *)handle->data;
    int ready = status != 0 ? state->events : events;
    // libuv stopped the handle on the error: whatever hiredis asks for next starts it again.
    if (status != 0) state->events = 0;
    if (state->context != NULL && (ready & UV_READABLE)) redisAsyncHandleRead(state->context);
    if (state->context != NULL && (ready & UV_WRITABLE)) herald_redis_write(state);
}

/// Writes pending output unless that is unsafe or pointless now: inside a write already
/// (hiredis's connect callback runs in one), inside one of this context's callbacks (a
/// failed write frees the context at once in hiredis 0.14, under the callback's feet), or
/// while WRITABLE is watched (the socket would block; the poll callback writes).
static inline void herald_redis_flush_state(herald_redis_events *state) {
    if (!state->write_pending || state->writing || state->context == NULL) return;
    if (state->events & UV_WRITABLE) return;
    if (state->context->c.flags & (REDIS_IN_CALLBACK | REDIS_FREEING)) return;
    herald_redis_write(state);
}

/// Before the loop polls: writes what no flush wrote in this pass.
static inline void herald_redis_prepared(uv_prepare_t *prepare) {
    herald_redis_flush_state((herald_redis_events *)prepare->data);
}

/// Writes a context's buffered commands now, in this loop pass (see the top of this file).
static inline void herald_redis_flush(redisAsyncContext *context) {
    herald_redis_events *state = (herald_redis_events *)context->ev.data;
    if (state != NULL) herald_redis_flush_state(state);
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
    int connected = state->context != NULL && (state->context->c.flags & REDIS_CONNECTED);
    if (state->writing || !connected) {
        // The socket took only part (or the connect is under way): wait until it is writable.
        herald_redis_update(state, state->events | UV_WRITABLE);
    } else {
        state->write_pending = 1;
    }
}

static inline void herald_redis_del_write(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    state->write_pending = 0;
    herald_redis_update(state, state->events & ~UV_WRITABLE);
}

static inline void herald_redis_closed(uv_handle_t *handle) {
    herald_redis_events *state = (herald_redis_events *)handle->data;
    if (--state->open_handles == 0) free(state);
}

static inline void herald_redis_cleanup(void *data) {
    herald_redis_events *state = (herald_redis_events *)data;
    state->context = NULL;  // the context is being freed: no more calls into it
    state->write_pending = 0;
    uv_close((uv_handle_t *)&state->handle, herald_redis_closed);
    uv_close((uv_handle_t *)&state->prepare, herald_redis_closed);
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
    uv_prepare_init(loop, &state->prepare);
    state->prepare.data = state;
    // Runs every pass but never keeps the loop alive: the poll handle and the link's own
    // timers decide that, as before.
    uv_prepare_start(&state->prepare, herald_redis_prepared);
    uv_unref((uv_handle_t *)&state->prepare);
    state->open_handles = 2;
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
