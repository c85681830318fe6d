// Herald JavaScript client: one ES module, no dependencies. Runs in browsers and in any
// runtime with a standard WebSocket (pass `WebSocket` in the options where there is none).
// It speaks heraldd's line protocol in WebSocket text messages (docs/protocol.md,
// "WebSocket"); the guide is docs/client-js.md, the types are herald.d.ts beside this file.
// heraldd serves this file at GET /herald.mjs on its ws_port.

/** The version of this client. */
export const VERSION = '0.1.0';

/**
 * An error with a stable code: the daemon's wire code (`bad_channel`, `forbidden`,
 * `conflict`, `timeout`, `no_responders`, `unknown_op`, …) or one of the client's own
 * (`not_connected`, `disconnected`, `closed`, `cancelled`, `connection_failed`,
 * `auth_rejected`, `history_lost`, `restore_failed`, `handler_failed`, `gap`, `bad_frame`).
 */
export class HeraldError extends Error {
  /**
   * @param {string} code the wire code or the client's own code
   * @param {string} message human text
   * @param {{op?: string, rid?: unknown, rev?: number, frame?: object, cause?: unknown, channel?: string, subscription?: string}} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'HeraldError';
    /** @type {string} */
    this.code = code;
    /** @type {string | undefined} the op the daemon refused */
    this.op = details.op;
    /** @type {unknown} the request id of the refused frame */
    this.rid = details.rid;
    /** @type {number | undefined} the channel's rev (a `conflict`) */
    this.rev = details.rev;
    /** @type {string | undefined} the channel concerned, when known */
    this.channel = details.channel;
    /** @type {string | undefined} the subscription concerned, when known */
    this.subscription = details.subscription;
    /** @type {object | undefined} the error frame as the daemon sent it */
    this.frame = details.frame;
  }

  /**
   * Builds the error of an `{"error":…}` frame.
   * @param {any} frame
   * @returns {HeraldError}
   */
  static fromFrame(frame) {
    return new HeraldError(String(frame.error), String(frame.message ?? frame.error), {
      op: frame.op, rid: frame.rid, rev: frame.rev, frame,
    });
  }
}

/**
 * Connects to heraldd and resolves once the connection is up (the `info` line came and
 * `hello` was answered).
 * @param {string | string[]} url `ws://host:port` or `wss://…`; several for failover (the
 *   first connection tries each once before it rejects; later ones go round robin)
 * @param {import('./herald').ConnectOptions} [options]
 * @returns {Promise<HeraldClient>}
 */
export async function connect(url, options = {}) {
  const client = new HeraldClient(url, options);
  await client._start();
  return client;
}

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

/**
 * Whether a channel string is a pattern (a `*` or `>` segment).
 * @param {string} channel
 * @returns {boolean}
 */
export function isPattern(channel) {
  return channel.split('.').some((segment) => segment === '*' || segment === '>');
}

/**
 * Whether `pattern` matches the concrete `channel` (`*` one segment, a final `>` one or
 * more; a first-segment wildcard does not match `$…` names).
 * @param {string} pattern
 * @param {string} channel
 * @returns {boolean}
 */
export function matches(pattern, channel) {
  const p = pattern.split('.');
  const c = channel.split('.');
  if ((p[0] === '*' || p[0] === '>') && channel.startsWith('$')) return false;
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return i === p.length - 1 && c.length > i;
    if (i >= c.length) return false;
    if (p[i] !== '*' && p[i] !== c[i]) return false;
  }
  return p.length === c.length;
}

/**
 * A promise with its resolve and reject at hand.
 * @returns {{promise: Promise<any>, resolve: (value?: any) => void, reject: (error?: any) => void}}
 */
/** A random id for `instance`: a UUID where the runtime makes them. @returns {string} */
function randomId() {
  if (typeof globalThis.crypto?.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const hex = () => Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, '0');
  return `${hex()}-${hex()}-${hex()}-${hex()}`;
}

/** A client id's number (`c7` → 7), the daemon's listing order. @param {string} client */
const clientNumber = (client) => (/^c\d+$/.test(client) ? Number(client.slice(1)) : Infinity);

function deferred() {
  /** @type {(value?: any) => void} */
  let resolve = () => {};
  /** @type {(error?: any) => void} */
  let reject = () => {};
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

/**
 * Rejects at once when `signal` is already aborted; else calls `onAbort` when it aborts.
 * @returns {() => void} removes the listener
 */
function onAbort(signal, handler) {
  if (!signal) return () => {};
  const listener = () => handler(cancelled(signal));
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

function cancelled(signal) {
  return new HeraldError('cancelled', 'cancelled by its AbortSignal', { cause: signal?.reason });
}

/** Calls `fn` and reports a throw or a rejected promise through `report`. */
function guarded(fn, report) {
  try {
    const result = fn();
    if (result && typeof result.then === 'function') result.then(undefined, report);
  } catch (error) {
    report(error);
  }
}

/**
 * A client of heraldd over WebSocket. Made by `connect`. It reconnects on its own (with
 * backoff and jitter) and restores what it holds: declared channels, links, locks,
 * subscriptions, signal handlers and mirrors, catching up with `since`.
 */
export class HeraldClient {
  /**
   * @param {string | string[]} url
   * @param {import('./herald').ConnectOptions} options
   */
  constructor(url, options) {
    /** @type {string[]} */
    this.urls = Array.isArray(url) ? [...url] : [url];
    /** @type {string | null} the URL of the current connection (or of the attempt under way) */
    this.url = null;
    if (this.urls.length === 0) throw new HeraldError('bad_field', 'connect needs at least one URL');
    this.options = options;
    const reconnect = options.reconnect === false ? { maxAttempts: 0 } : (options.reconnect ?? {});
    this._backoff = {
      initialDelayMs: reconnect.initialDelayMs ?? 100,
      maxDelayMs: reconnect.maxDelayMs ?? 5000,
      maxAttempts: reconnect.maxAttempts ?? Infinity,
    };
    /** @type {string} the app instance named in `hello`'s `info` (option `instance`, else a random id made once per client) */
    this.instance = options.instance ?? randomId();
    this._WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this._WebSocket !== 'function') {
      throw new HeraldError('connection_failed', 'no WebSocket in this runtime: pass options.WebSocket');
    }
    /** @type {'connecting' | 'restoring' | 'connected' | 'reconnecting' | 'closed'} */
    this.state = 'connecting';
    /** @type {any} the daemon's `info` object of the current connection */
    this.serverInfo = null;
    /** @type {string | null} this connection's client id (`c7`) */
    this.clientId = null;
    /** @type {string | null} the daemon's epoch (new at each start) */
    this.epoch = null;
    this._ws = null;
    this._generation = 0;
    this._urlIndex = 0;
    this._attempt = 0;
    this._firstFailures = 0;
    this._rid = 0;
    this._subNumber = 0;
    /** @type {Map<string, any>} rid → pending answer */
    this._pending = new Map();
    /** @type {Map<string, Subscription>} name → subscription, in creation order */
    this._subs = new Map();
    /** @type {Set<string>} */
    this._declared = new Set();
    /** @type {Map<string, string>} channel → parent */
    this._links = new Map();
    /** @type {Array<{key: string, frame: () => any, ch?: string, sub?: string}>} locks held, in order taken */
    this._locks = [];
    /** @type {Set<any>} mirrors */
    this._mirrors = new Set();
    /** @type {Map<string, any>} rid → signal under way */
    this._signals = new Map();
    /** @type {Map<string, any>} signal id → signal under way */
    this._signalsById = new Map();
    /** @type {Map<string, any[]>} signal id → callbacks waiting for their signal's name */
    this._heldCallbacks = new Map();
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();
    this._outbox = [];
    this._flushScheduled = false;
    const offline = options.offlinePublishing;
    /** Publishes kept until answered (option `offlinePublishing`), or null when off. */
    this._kept = offline ? {
      maxCount: offline.maxCount ?? 1000,
      maxBytes: offline.maxBytes ?? 1 << 20,
      /** @type {Array<{frame: any, bytes: number, resolve: Function, reject: Function, generation: number}>} */
      entries: [],
      bytes: 0,
      number: 0,
    } : null;
    this._lastReceived = 0;
    this._heartbeatTimer = null;
    this._reconnectTimer = null;
    this._connectTimer = null;
    this._closed = deferred();
  }

  // MARK: events of the client

  /**
   * Listens to the client: `state` (`(state, detail)` on every change), `error` (a
   * HeraldError nobody awaited: an error frame without a request, a refused restore,
   * `history_lost`, a handler that threw), `restored` (after a reconnect's restore).
   * @param {'state' | 'error' | 'restored'} name
   * @param {Function} listener
   * @returns {() => void} removes the listener
   */
  on(name, listener) {
    if (!this._listeners.has(name)) this._listeners.set(name, new Set());
    this._listeners.get(name).add(listener);
    return () => this._listeners.get(name)?.delete(listener);
  }

  _emit(name, ...args) {
    const listeners = this._listeners.get(name);
    if (!listeners || listeners.size === 0) {
      if (name === 'error' && globalThis.console) console.warn('herald:', args[0]);
      return;
    }
    for (const listener of [...listeners]) {
      try { listener(...args); } catch (error) {
        if (name !== 'error') this._report(new HeraldError('handler_failed', `a ${name} listener threw: ${error}`, { cause: error }));
      }
    }
  }

  _report(error) {
    this._emit('error', error);
  }

  _setState(state, detail) {
    if (this.state === state && detail === undefined) return;
    this.state = state;
    this._emit('state', state, detail);
  }

  // MARK: connection

  /** The first connection (with `waitForConnectivity`, the first that works). */
  _start() {
    const signal = this.options.signal;
    if (signal?.aborted) {
      this.close();
      return Promise.reject(cancelled(signal));
    }
    this._first = deferred();
    const stop = onAbort(signal, (error) => {
      if (this._first) { this._first.reject(error); this._first = null; this.close(); }
    });
    this._open();
    return this._first.promise.finally(stop);
  }

  _open() {
    ++this._generation;
    const url = this.urls[this._urlIndex % this.urls.length];
    this._urlIndex++;
    this.url = url;
    let ws;
    try {
      ws = new this._WebSocket(url);
    } catch (error) {
      this._failedAttempt(new HeraldError('connection_failed', `${url}: ${error?.message ?? error}`, { cause: error }));
      return;
    }
    this._ws = ws;
    ws.onmessage = (message) => { if (this._ws === ws) this._received(message.data); };
    ws.onclose = (event) => { if (this._ws === ws) this._lost(event); };
    ws.onerror = () => {};
    this._connectTimer = setTimeout(() => {
      if (this._ws === ws && this.state !== 'connected' && this.state !== 'restoring') {
        this._ws = null;
        try { ws.close(); } catch { /* already closing */ }
        this._lost({ code: 0, reason: 'connect timeout' });
      }
    }, this.options.connectTimeoutMs ?? 5000);
  }

  /**
   * `hello`'s `info`: `{instance, ...options.info}` (an `instance` of the app's own wins); a
   * value that is not an object is sent as it is. The instance is what lets the daemon's
   * `presence_grace_ms` keep a reconnecting client's place in presence, with no leave and no
   * join for the watchers.
   */
  _helloInfo() {
    const info = this.options.info;
    if (info === undefined) return { instance: this.instance };
    if (info === null || typeof info !== 'object' || Array.isArray(info)) return info;
    return { instance: this.instance, ...info };
  }

  /** The `info` line: says hello, then restores. */
  _greeted(info) {
    clearTimeout(this._connectTimer);
    const previousEpoch = this.epoch;
    this.serverInfo = info;
    this.clientId = info.client ?? null;
    this.epoch = info.epoch ?? null;
    const epochChanged = previousEpoch !== null && previousEpoch !== this.epoch;
    const hello = { op: 'hello' };
    if (this.options.name !== undefined) hello.name = this.options.name;
    if (this.options.token !== undefined) hello.token = this.options.token;
    if (this.options.user !== undefined) hello.user = this.options.user;
    if (this.options.echo !== undefined) hello.echo = this.options.echo;
    hello.info = this._helloInfo();
    const generation = this._generation;
    this._helloDone = false;
    this._ask(hello, { anyState: true }).then((answer) => {
      if (generation !== this._generation) return;
      this.clientId = answer.client ?? this.clientId;
      this._helloDone = true;
      this._attempt = 0;
      this._startHeartbeat();
      const first = this._first;
      if (!first) this._setState('restoring');
      this._restore(generation, epochChanged).then((summary) => {
        if (generation !== this._generation) return;
        this._setState('connected');
        this._resendKept();
        if (first) { this._first = null; first.resolve(this); }
        else this._emit('restored', summary);
      });
    }, (error) => {
      if (generation !== this._generation) return;
      if (error.code === 'forbidden' || error.code === 'auth_required' || error.code === 'too_many_attempts') {
        const rejected = new HeraldError('auth_rejected', `hello refused: ${error.code}: ${error.message}`, { cause: error, op: 'hello' });
        if (this._first) { this._first.reject(rejected); this._first = null; }
        else this._report(rejected);
        this._shutdown(rejected, 'auth_rejected');
        return;
      }
      // No answer in time (or another refusal): drop this connection and try again.
      const ws = this._ws;
      if (ws && error.code !== 'disconnected' && error.code !== 'closed') {
        try { ws.close(4000, 'hello failed'); } catch { /* closing */ }
        this._lost({ code: 4000, reason: `hello failed: ${error.code}` });
      }
    });
  }

  /** The socket closed (or never opened): fail what waited, then reconnect or give up. */
  _lost(event) {
    clearTimeout(this._connectTimer);
    this._stopHeartbeat();
    const wasUp = this._helloDone;
    this._ws = null;
    this._helloDone = false;
    this._outbox = [];
    this._generation++;
    const error = new HeraldError('disconnected', `connection lost (code ${event?.code ?? 0}${event?.reason ? ': ' + event.reason : ''})`);
    this._failPending(error);
    if (this.state === 'closed') return;
    this._failedAttempt(wasUp ? null : new HeraldError('connection_failed',
      `could not connect to ${this.urls.join(', ')} (code ${event?.code ?? 0})`));
  }

  /** Schedules the next attempt, or ends the client when none is left. */
  _failedAttempt(error) {
    const waiting = this._first && !this.options.waitForConnectivity;
    if (waiting) {
      // A first connection tries each URL of the list once, at once, before it gives up:
      // a cluster with one node down must not fail the page when the others are up.
      if (++this._firstFailures < this.urls.length) {
        this._open();
        return;
      }
      this._first.reject(error ?? new HeraldError('connection_failed', 'could not connect'));
      this._first = null;
      this._shutdown(null, 'connection_failed');
      return;
    }
    this._attempt++;
    if (this._attempt > this._backoff.maxAttempts) {
      const final = error ?? new HeraldError('disconnected', 'connection lost; no reconnect attempts left');
      if (this._first) { this._first.reject(final); this._first = null; }
      this._shutdown(final, 'gave_up');
      return;
    }
    const ceiling = Math.min(this._backoff.maxDelayMs, this._backoff.initialDelayMs * 2 ** Math.min(this._attempt - 1, 30));
    const delay = ceiling / 2 + Math.random() * ceiling / 2;
    this._setState('reconnecting', { attempt: this._attempt, delayMs: Math.round(delay) });
    this._reconnectTimer = setTimeout(() => {
      this._reconnectTimer = null;
      if (this.state !== 'closed') this._open();
    }, delay);
  }

  _failPending(error) {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const entry of pending) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
    const signals = [...this._signals.values()];
    this._signals.clear();
    this._signalsById.clear();
    this._heldCallbacks.clear();
    for (const call of signals) call.fail(error);
  }

  /**
   * Closes the connection for good: subscriptions end (`closed`), waiting calls fail
   * with `closed`, nothing reconnects.
   * @returns {Promise<void>} resolves once the socket is closed
   */
  close() {
    this._shutdown(new HeraldError('closed', 'the client was closed'), 'closed');
    return this._closed.promise;
  }

  _shutdown(error, reason) {
    if (this.state === 'closed') return;
    clearTimeout(this._reconnectTimer);
    clearTimeout(this._connectTimer);
    this._stopHeartbeat();
    const ws = this._ws;
    this._ws = null;
    this._generation++;
    this.state = 'closed';
    const failure = error ?? new HeraldError('closed', 'the client was closed');
    if (this._first) { this._first.reject(failure); this._first = null; }
    this._failPending(failure.code === 'closed' ? failure : new HeraldError('closed', `the client stopped: ${failure.message}`, { cause: failure }));
    if (this._kept) {
      const unsent = this._kept.entries;
      this._kept.entries = [];
      this._kept.bytes = 0;
      for (const entry of unsent) entry.reject(new HeraldError('closed', 'the client stopped before this publish was answered', { op: 'pub' }));
    }
    for (const sub of [...this._subs.values()]) sub._end({ reason: 'closed', error: failure });
    this._subs.clear();
    for (const mirror of [...this._mirrors]) mirror._closed();
    this._emit('state', 'closed', { reason, error: failure });
    if (ws) {
      try {
        this._flushTo(ws);
        ws.onclose = () => this._closed.resolve();
        ws.close(1000);
        setTimeout(() => this._closed.resolve(), 2000);
      } catch {
        this._closed.resolve();
      }
    } else {
      this._closed.resolve();
    }
  }

  // MARK: heartbeat

  _startHeartbeat() {
    this._stopHeartbeat();
    const interval = this.serverInfo?.heartbeat_ms ?? 30000;
    if (!interval) return;
    const ws = this._ws;
    this._heartbeatTimer = setInterval(() => {
      if (this._ws !== ws) return;
      const silence = Date.now() - this._lastReceived;
      if (silence >= 3 * interval) {
        // The daemon would have answered a ping by now: the link is dead.
        this._ws = null;
        try { ws.close(4000, 'heartbeat'); } catch { /* closing */ }
        this._lost({ code: 4000, reason: 'no answer to heartbeat pings' });
      } else if (silence >= interval) {
        this._sendFrame({ op: 'ping' });
      }
    }, interval);
  }

  _stopHeartbeat() {
    if (this._heartbeatTimer) clearInterval(this._heartbeatTimer);
    this._heartbeatTimer = null;
  }

  // MARK: sending

  /** Whether frames can go out now (hello answered; restoring counts). */
  get isConnected() {
    return this._ws !== null && this._helloDone && (this.state === 'connected' || this.state === 'restoring');
  }

  _sendFrame(frame) {
    const ws = this._ws;
    if (!ws) throw new HeraldError('not_connected', 'not connected', { op: frame.op });
    this._outbox.push(JSON.stringify(frame) + '\n');
    if (!this._flushScheduled) {
      this._flushScheduled = true;
      queueMicrotask(() => {
        this._flushScheduled = false;
        if (this._ws === ws) this._flushTo(ws);
      });
    }
  }

  /** Sends the frames queued in this turn as one text message. */
  _flushTo(ws) {
    if (this._outbox.length === 0) return;
    const text = this._outbox.join('');
    this._outbox = [];
    ws.send(text);
  }

  /**
   * Sends `frame` with a fresh `rid` and resolves with the answer frame.
   * @param {any} frame
   * @param {{signal?: AbortSignal, timeoutMs?: number, anyState?: boolean, cancelOnAbort?: boolean}} [options]
   */
  _ask(frame, options = {}) {
    if (this.state === 'closed') return Promise.reject(new HeraldError('closed', 'the client was closed', { op: frame.op }));
    if (!options.anyState && !this.isConnected) {
      return Promise.reject(new HeraldError('not_connected', `not connected (${this.state})`, { op: frame.op }));
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(cancelled(signal));
    const rid = String(++this._rid);
    const sent = { ...frame, rid };
    const { promise, resolve, reject } = deferred();
    const generation = this._generation;
    let stopAbort = () => {};
    const entry = {
      op: frame.op,
      resolve: (answer) => { stopAbort(); resolve(answer); },
      reject: (error) => { stopAbort(); reject(error); },
      timer: null,
    };
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs ?? 10000;
    if (timeoutMs > 0) {
      entry.timer = setTimeout(() => {
        if (this._pending.get(rid) !== entry) return;
        this._pending.delete(rid);
        entry.reject(new HeraldError('timeout', `no answer to ${frame.op} within ${timeoutMs} ms`, { op: frame.op, rid }));
      }, timeoutMs);
    }
    stopAbort = onAbort(signal, (error) => {
      if (this._pending.get(rid) !== entry) return;
      this._pending.delete(rid);
      clearTimeout(entry.timer);
      if (options.cancelOnAbort && generation === this._generation && this._ws) {
        try { this._sendFrame({ op: 'cancel', of: rid }); } catch { /* gone */ }
      }
      reject(error);
    });
    this._pending.set(rid, entry);
    try {
      this._sendFrame(sent);
    } catch (error) {
      this._pending.delete(rid);
      clearTimeout(entry.timer);
      stopAbort();
      return Promise.reject(error);
    }
    return promise;
  }

  // MARK: receiving

  _received(data) {
    this._lastReceived = Date.now();
    if (typeof data !== 'string') {
      this._report(new HeraldError('bad_frame', 'the daemon sent a binary message'));
      return;
    }
    let start = 0;
    while (start < data.length) {
      let end = data.indexOf('\n', start);
      if (end < 0) end = data.length;
      const line = data.slice(start, end);
      start = end + 1;
      if (line.length === 0) continue;
      let frame;
      try {
        frame = JSON.parse(line);
      } catch {
        this._report(new HeraldError('bad_frame', `the daemon sent a line that is not JSON: ${line.slice(0, 200)}`));
        continue;
      }
      try {
        this._dispatch(frame);
      } catch (error) {
        this._report(new HeraldError('bad_frame', `handling ${line.slice(0, 200)} failed: ${error}`, { cause: error }));
      }
      if (this._ws === null) return;   // closed by a handler or a fatal frame
    }
  }

  _dispatch(frame) {
    if (hasOwn(frame, 'event')) return this._event(frame);
    if (hasOwn(frame, 'ok')) return this._answer(frame, null);
    if (hasOwn(frame, 'error')) return this._errorFrame(frame);
    if (hasOwn(frame, 'signal')) return this._signalOffer(frame);
    if (hasOwn(frame, 'callback')) return this._callbackFrame(frame);
    if (hasOwn(frame, 'removed')) return this._subs.get(frame.sub)?._removed(frame);
    if (hasOwn(frame, 'gap')) return this._gap(frame);
    if (hasOwn(frame, 'ping')) return this._sendFrame({ op: 'pong' });
    if (hasOwn(frame, 'pong')) return frame.rid !== undefined ? this._answer(frame, null) : undefined;
    if (hasOwn(frame, 'info')) return this._greeted(frame.info);
  }

  _answer(frame, error) {
    if (frame.rid === undefined) {
      if (error) this._report(error);
      return;
    }
    const rid = String(frame.rid);
    const entry = this._pending.get(rid);
    if (!entry) {
      // A signal's result, or an answer whose caller gave up.
      const call = this._signals.get(rid);
      if (call) {
        this._signals.delete(rid);
        if (call.id) this._signalsById.delete(call.id);
        if (error) call.fail(error);
        else call.finish(frame, this._heldCallbacks);
      }
      return;
    }
    this._pending.delete(rid);
    clearTimeout(entry.timer);
    if (error) entry.reject(error);
    else entry.resolve(frame);
  }

  _errorFrame(frame) {
    const error = HeraldError.fromFrame(frame);
    // Only asks carry a rid: one nobody waits for any more (its caller gave up) is dropped.
    if (frame.rid !== undefined) this._answer(frame, error);
    else this._report(error);
  }

  _event(frame) {
    const sub = this._subs.get(frame.sub);
    if (sub) sub._deliver(frame);
  }

  _gap(frame) {
    const sub = this._subs.get(frame.sub);
    const gap = { channel: frame.gap, subscription: frame.sub, from: frame.from, to: frame.to };
    if (sub) sub._gap(gap);
  }

  // MARK: publishing and requests

  /**
   * Publishes an event. Without `receipt` it is fire-and-forget (a refusal reaches the
   * `error` listeners); with it, resolves with the daemon's receipt.
   * @param {string} channel a concrete channel
   * @param {unknown} [data] any JSON value (omitted when undefined)
   * @param {import('./herald').PublishOptions} [options]
   * @returns {Promise<import('./herald').Receipt | undefined>}
   */
  publish(channel, data, options = {}) {
    const frame = { op: 'pub', ch: channel };
    if (options.id !== undefined) frame.id = options.id;
    if (data !== undefined) frame.data = data;
    if (this._kept) return this._publishKept(frame, options);
    if (options.receipt) {
      return this._ask(frame, { signal: options.signal }).then((answer) => {
        const receipt = { seq: answer.seq, receivers: answer.receivers };
        if (answer.duplicate) receipt.duplicate = true;
        return receipt;
      });
    }
    if (!this.isConnected) return Promise.reject(new HeraldError('not_connected', `not connected (${this.state})`, { op: 'pub' }));
    try {
      this._sendFrame(frame);
    } catch (error) {
      return Promise.reject(error);
    }
    return Promise.resolve(undefined);
  }

  /**
   * A publish with `offlinePublishing` on: given an idempotency `id` (unless it has one),
   * kept until the daemon answers it, sent now when connected, else after the next restore;
   * one whose answer a lost connection took is sent again with the same `id`, so the daemon
   * delivers it once (its dedup window). Past the bounds it is refused at once with
   * `offline_queue_full`. A refusal by the daemon is final and not retried.
   */
  _publishKept(frame, options) {
    const kept = this._kept;
    if (this.state === 'closed') return Promise.reject(new HeraldError('closed', 'the client was closed', { op: 'pub' }));
    if (options.signal?.aborted) return Promise.reject(cancelled(options.signal));
    if (frame.id === undefined) frame.id = `${this.instance}.${++kept.number}`;
    const bytes = JSON.stringify(frame).length;
    if (kept.entries.length + 1 > kept.maxCount || kept.bytes + bytes > kept.maxBytes) {
      return Promise.reject(new HeraldError('offline_queue_full',
        `${kept.entries.length} publishes (${kept.bytes} bytes) wait to be sent: offlinePublishing holds ` +
        `${kept.maxCount} and ${kept.maxBytes} bytes`, { op: 'pub' }));
    }
    const { promise, resolve, reject } = deferred();
    const entry = { frame, bytes, resolve, reject, generation: -1 };
    kept.entries.push(entry);
    kept.bytes += bytes;
    if (this.state === 'connected') this._sendKept(entry);
    if (options.receipt) return promise;
    promise.catch((error) => this._report(error));
    return Promise.resolve(undefined);
  }

  /** Sends a kept publish on this connection; it leaves the list once answered. */
  _sendKept(entry) {
    entry.generation = this._generation;
    // No timeout: it waits for its answer or for its connection to go (then it is sent again).
    this._ask(entry.frame, { anyState: true, timeoutMs: 0 }).then((answer) => {
      this._dropKept(entry);
      const receipt = { seq: answer.seq, receivers: answer.receivers };
      if (answer.duplicate) receipt.duplicate = true;
      entry.resolve(receipt);
    }, (error) => {
      // Lost with its connection: sent again after the restore, with the same id.
      if (error.code === 'disconnected' || error.code === 'not_connected') return;
      this._dropKept(entry);
      entry.reject(error);
    });
  }

  _dropKept(entry) {
    const kept = this._kept;
    const at = kept.entries.indexOf(entry);
    if (at < 0) return;
    kept.entries.splice(at, 1);
    kept.bytes -= entry.bytes;
  }

  /** After a restore: every kept publish not answered on this connection goes out, in order. */
  _resendKept() {
    if (!this._kept) return;
    for (const entry of this._kept.entries) {
      if (entry.generation !== this._generation) this._sendKept(entry);
    }
  }

  /** Publishes kept for sending (option `offlinePublishing`): how many, and their bytes. */
  get keptPublishes() {
    return this._kept ? { count: this._kept.entries.length, bytes: this._kept.bytes } : { count: 0, bytes: 0 };
  }

  /**
   * Sends a request and resolves with the first reply's data (`detail: true`: with `from`).
   * Rejects with `no_responders` (nobody subscribes) or `timeout`. Aborting withdraws the
   * request on the daemon too (`cancel`).
   * @param {string} channel
   * @param {unknown} [data]
   * @param {import('./herald').RequestOptions} [options]
   * @returns {Promise<any>}
   */
  request(channel, data, options = {}) {
    const frame = { op: 'req', ch: channel };
    if (options.timeoutMs !== undefined) frame.timeout_ms = options.timeoutMs;
    if (data !== undefined) frame.data = data;
    const guard = (options.timeoutMs ?? 1000) + 5000;
    return this._ask(frame, { signal: options.signal, timeoutMs: guard, cancelOnAbort: true }).then((answer) =>
      options.detail ? { from: answer.from, data: answer.data } : answer.data);
  }

  /**
   * Answers a request event's `reply` token (the first reply wins).
   * @param {string} token the event's `reply`
   * @param {unknown} [data]
   */
  reply(token, data) {
    const frame = { op: 'reply', to: token };
    if (data !== undefined) frame.data = data;
    this._sendFrame(frame);
  }

  /**
   * A responder: subscribes to `pattern` and answers every request with what `handler`
   * returns (or resolves to). Plain events (no reply token) are ignored. A handler that
   * throws sends no reply and is reported (`handler_failed`).
   * @param {string} pattern
   * @param {(data: any, event: HeraldEvent) => unknown} handler
   * @param {import('./herald').SubscribeOptions} [options]
   * @returns {Promise<Subscription>}
   */
  respond(pattern, handler, options = {}) {
    return this.subscribe(pattern, (event) => {
      if (!event.reply) return;
      const token = event.reply;
      Promise.resolve().then(() => handler(event.data, event)).then((result) => {
        if (this.isConnected) this.reply(token, result);
      }, (error) => {
        this._report(new HeraldError('handler_failed', `responder on ${event.channel} threw: ${error?.message ?? error}`, { cause: error, channel: event.channel }));
      });
    }, options);
  }

  // MARK: subscriptions

  /**
   * Subscribes to a channel or pattern. Resolves once the daemon confirmed it (after the
   * `ok`; `current` events follow at once). Without a handler, iterate the subscription
   * with `for await`.
   * @param {string} pattern
   * @param {((event: HeraldEvent) => unknown) | import('./herald').SubscribeOptions | null} [handler]
   * @param {import('./herald').SubscribeOptions} [options]
   * @returns {Promise<Subscription>}
   */
  subscribe(pattern, handler, options) {
    if (handler !== null && typeof handler === 'object' && options === undefined) {
      options = handler;
      handler = null;
    }
    return this._subscribe(pattern, handler ?? null, options ?? {}, 'events');
  }

  /**
   * Handles signals that reach `pattern` (a `handle:true` subscription). The handler gets
   * the offer and a context with `callback(data)`; it answers `'stop'` (handled: the route
   * ends) or `'pass'` (anything else), possibly asynchronously.
   * @param {string} pattern
   * @param {(offer: SignalOffer) => unknown} handler
   * @param {import('./herald').SubscribeOptions} [options]
   * @returns {Promise<Subscription>}
   */
  handle(pattern, handler, options = {}) {
    return this._subscribe(pattern, handler, options, 'signals');
  }

  _subscribe(pattern, handler, options, mode) {
    if (this.state === 'closed') return Promise.reject(new HeraldError('closed', 'the client was closed', { op: 'sub' }));
    if (options.signal?.aborted) return Promise.reject(cancelled(options.signal));
    if (options.once && options.max !== undefined && options.max !== 1) {
      return Promise.reject(new HeraldError('bad_field', 'once with another max', { op: 'sub' }));
    }
    const name = options.name ?? `s${++this._subNumber}`;
    const sub = new Subscription(this, name, pattern, handler, options, mode);
    const previous = this._subs.get(name);
    if (previous) {
      this._subs.delete(name);
      previous._end({ reason: 'replaced' });
    }
    this._subs.set(name, sub);
    if (options.signal) {
      const stop = onAbort(options.signal, (error) => {
        if (!sub._confirmed) sub._refuse(error);
        sub.unsubscribe().catch(() => {});
      });
      sub.ended.then(stop);
    }
    if (this.isConnected) this._sendSub(sub, false);
    return sub._ready.promise;
  }

  /** The `sub` frame of `sub` as it stands (remaining max, since when it can catch up). */
  _subFrame(sub, restoring) {
    const frame = { op: 'sub', ch: sub.pattern, sub: sub.name };
    const o = sub.options;
    if (sub.mode === 'signals') frame.handle = true;
    if (o.group !== undefined) frame.group = o.group;
    if (o.args !== undefined) frame.args = o.args;
    if (o.current) frame.current = true;
    const max = o.once ? 1 : o.max;
    if (max !== undefined) frame.max = Math.max(1, max - sub.delivered);
    if (!restoring) {
      if (o.since !== undefined) frame.since = o.since;
    } else if (sub.lastSeq !== null && sub._canCatchUp()) {
      frame.since = sub.lastSeq;
    }
    return frame;
  }

  _sendSub(sub, restoring) {
    const frame = this._subFrame(sub, restoring);
    const asked = frame.since !== undefined;
    return this._ask(frame, { timeoutMs: 0, anyState: restoring }).then((answer) => {
      if (this._subs.get(sub.name) !== sub) return;
      if (asked) {
        sub.recovered = answer.recovered !== false;
        if (!sub.recovered) this._historyLost(sub);
      }
      sub._confirm();
    }, (error) => {
      if (error.code === 'disconnected' || error.code === 'closed') return;   // restored later, or ended
      if (this._subs.get(sub.name) === sub) this._subs.delete(sub.name);
      sub._refuse(error);
      if (restoring) {
        this._report(new HeraldError('restore_failed', `subscription ${sub.name} (${sub.pattern}) could not be restored: ${error.code}`, { cause: error, subscription: sub.name, channel: sub.pattern }));
      }
    });
  }

  _historyLost(sub) {
    this._report(new HeraldError('history_lost', `subscription ${sub.name} on ${sub.pattern} could not catch up: events were missed`, { subscription: sub.name, channel: sub.pattern }));
  }

  _unsubscribe(sub) {
    if (this._subs.get(sub.name) === sub) this._subs.delete(sub.name);
    if (!this.isConnected) return Promise.resolve(0);
    return this._ask({ op: 'unsub', sub: sub.name }).then((answer) => answer.count, (error) => {
      if (error.code === 'disconnected' || error.code === 'closed') return 0;
      throw error;
    });
  }

  // MARK: signals

  /**
   * Sends a signal up the channel hierarchy and resolves with its result. Callbacks from
   * handlers reach `onCallback` (in order, before the result). Aborting withdraws it.
   * @param {string} channel
   * @param {unknown} [data]
   * @param {import('./herald').SignalOptions} [options]
   * @returns {Promise<import('./herald').SignalResult>}
   */
  signal(channel, data, options = {}) {
    if (this.state === 'closed') return Promise.reject(new HeraldError('closed', 'the client was closed', { op: 'signal' }));
    if (!this.isConnected) return Promise.reject(new HeraldError('not_connected', `not connected (${this.state})`, { op: 'signal' }));
    if (options.signal?.aborted) return Promise.reject(cancelled(options.signal));
    const frame = { op: 'signal', ch: channel };
    if (options.tag !== undefined) frame.tag = options.tag;
    if (options.timeoutMs !== undefined) frame.timeout_ms = options.timeoutMs;
    if (data !== undefined) frame.data = data;
    const rid = String(++this._rid);
    const { promise, resolve, reject } = deferred();
    const generation = this._generation;
    const report = (error) => this._report(new HeraldError('handler_failed', `onCallback threw: ${error?.message ?? error}`, { cause: error }));
    let stopAbort = () => {};
    const call = {
      id: null,
      deliver: (callback) => {
        if (options.onCallback) guarded(() => options.onCallback({ from: callback.from, data: callback.data }), report);
      },
      finish: (answer, held) => {
        stopAbort();
        if (answer.id !== undefined) {
          const waiting = held.get(answer.id);
          if (waiting) { held.delete(answer.id); for (const c of waiting) call.deliver(c); }
        }
        resolve({
          id: answer.id, handledBy: answer.handled_by ?? null, at: answer.at ?? null,
          hops: answer.hops ?? 0, timeouts: answer.timeouts ?? [],
          get handled() { return this.handledBy !== null; },
        });
      },
      fail: (error) => { stopAbort(); reject(error); },
    };
    stopAbort = onAbort(options.signal, (error) => {
      if (this._signals.get(rid) !== call) return;
      this._signals.delete(rid);
      if (call.id) this._signalsById.delete(call.id);
      if (generation === this._generation && this._ws) {
        try { this._sendFrame({ op: 'cancel', of: rid }); } catch { /* gone */ }
      }
      reject(error);
    });
    this._signals.set(rid, call);
    try {
      this._sendFrame({ ...frame, rid });
    } catch (error) {
      this._signals.delete(rid);
      stopAbort();
      return Promise.reject(error);
    }
    return promise;
  }

  /**
   * A callback frame names its signal only by id, which the sender learns from the final
   * `ok`: a new id goes to the one unnamed signal under way; with several under way, the
   * callbacks wait until an `ok` names their signal and are delivered right before it.
   */
  _callbackFrame(frame) {
    const id = String(frame.callback);
    let call = this._signalsById.get(id);
    if (!call) {
      const unnamed = [...this._signals.values()].filter((c) => c.id === null);
      if (unnamed.length === 1) {
        call = unnamed[0];
        call.id = id;
        this._signalsById.set(id, call);
        // Callbacks that came while several were unnamed go first, in their order.
        const held = this._heldCallbacks.get(id);
        if (held) {
          this._heldCallbacks.delete(id);
          for (const earlier of held) call.deliver(earlier);
        }
      }
    }
    if (call) {
      call.deliver(frame);
      return;
    }
    if (!this._heldCallbacks.has(id)) this._heldCallbacks.set(id, []);
    this._heldCallbacks.get(id).push(frame);
  }

  _signalOffer(frame) {
    const sub = this._subs.get(frame.sub);
    if (!sub || sub.mode !== 'signals') {
      // Nobody here handles it any more: pass at once rather than make the route wait.
      this._sendHandled(frame.id, 'pass');
      return;
    }
    sub._offer(frame);
  }

  _sendHandled(id, action) {
    if (!this._ws) return;
    try { this._sendFrame({ op: 'handled', id, action }); } catch { /* gone */ }
  }

  /**
   * Overrides `channel`'s next level for signals (remade after every reconnect).
   * @param {string} channel
   * @param {string} parent
   * @param {{signal?: AbortSignal}} [options]
   */
  async link(channel, parent, options = {}) {
    await this._ask({ op: 'link', ch: channel, parent }, options);
    this._links.set(channel, parent);
  }

  /**
   * Removes this client's link of `channel`.
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   */
  async unlink(channel, options = {}) {
    this._links.delete(channel);
    await this._ask({ op: 'unlink', ch: channel }, options);
  }

  /** The links this client holds: channel → parent. @returns {Map<string, string>} */
  get links() { return new Map(this._links); }

  // MARK: retained state

  /**
   * Sets a channel's retained value (an array makes a list).
   * @param {string} channel
   * @param {unknown} value
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number}>}
   */
  async set(channel, value, options = {}) {
    const frame = { op: 'set', ch: channel, value: value === undefined ? null : value };
    if (options.ifRev !== undefined) frame.if_rev = options.ifRev;
    const answer = await this._ask(frame, options);
    return { rev: answer.rev };
  }

  /**
   * Reads a channel's retained value (`null` and rev 0 when it never had one).
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number, value: any}>}
   */
  async get(channel, options = {}) {
    const answer = await this._ask({ op: 'get', ch: channel }, options);
    return { rev: answer.rev, value: answer.value ?? null };
  }

  /**
   * Clears a channel's value or list.
   * @param {string} channel
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number}>}
   */
  async del(channel, options = {}) {
    const frame = { op: 'del', ch: channel };
    if (options.ifRev !== undefined) frame.if_rev = options.ifRev;
    const answer = await this._ask(frame, options);
    return { rev: answer.rev };
  }

  /**
   * Re-sends the current state to subscribers as a `touch` event (same rev).
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number}>}
   */
  async touch(channel, options = {}) {
    const answer = await this._ask({ op: 'touch', ch: channel }, options);
    return { rev: answer.rev };
  }

  /**
   * Appends to a list.
   * @param {string} channel
   * @param {unknown} value
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number, index: number}>}
   */
  async append(channel, value, options = {}) {
    const frame = { op: 'append', ch: channel, value: value === undefined ? null : value };
    if (options.ifRev !== undefined) frame.if_rev = options.ifRev;
    const answer = await this._ask(frame, options);
    return { rev: answer.rev, index: answer.index };
  }

  /**
   * Replaces one element of a list.
   * @param {string} channel
   * @param {number} index
   * @param {unknown} value
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number}>}
   */
  async assign(channel, index, value, options = {}) {
    const frame = { op: 'assign', ch: channel, index, value: value === undefined ? null : value };
    if (options.ifRev !== undefined) frame.if_rev = options.ifRev;
    const answer = await this._ask(frame, options);
    return { rev: answer.rev };
  }

  /**
   * Removes `remove` elements at `index` and inserts `insert` there.
   * @param {string} channel
   * @param {number} index
   * @param {number} remove
   * @param {unknown[]} [insert]
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<{rev: number}>}
   */
  async splice(channel, index, remove, insert = [], options = {}) {
    const frame = { op: 'splice', ch: channel, index, remove, insert };
    if (options.ifRev !== undefined) frame.if_rev = options.ifRev;
    const answer = await this._ask(frame, options);
    return { rev: answer.rev };
  }

  /**
   * A mirror of one channel's value, kept current by a `current:true` subscription (and
   * restored after a reconnect). Resolves once it holds the current state.
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<RemoteValue>}
   */
  async remoteValue(channel, options = {}) {
    const mirror = new RemoteValue(this, channel);
    await mirror._start(options.signal);
    return mirror;
  }

  /**
   * A mirror of one channel's list, patched by its `index` and `splice` events, fetched
   * again when it sees it missed a change.
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<RemoteList>}
   */
  async remoteList(channel, options = {}) {
    const mirror = new RemoteList(this, channel);
    await mirror._start(options.signal);
    return mirror;
  }

  // MARK: locks

  /**
   * Locks a channel or pattern (for everyone's subscriptions, or only `subscriptions`:
   * global ids `cN/NAME`; this client's own are rewritten to its new id after a
   * reconnect). Resolves with the global ids it silences now.
   * @param {string} channel
   * @param {{subscriptions?: string[], signal?: AbortSignal}} [options]
   * @returns {Promise<{subs: string[], truncated: boolean}>}
   */
  async lock(channel, options = {}) {
    const entry = this._lockEntry({ ch: channel, subs: options.subscriptions });
    const answer = await this._ask(entry.frame(), options);
    if (!this._locks.some((lock) => lock.key === entry.key)) this._locks.push(entry);
    return { subs: answer.subs ?? [], truncated: answer.truncated === true };
  }

  /**
   * Locks one of this client's own subscriptions by name: it receives nothing.
   * @param {string} name
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{subs: string[]}>}
   */
  async lockSubscription(name, options = {}) {
    const entry = this._lockEntry({ sub: name });
    const answer = await this._ask(entry.frame(), options);
    if (!this._locks.some((lock) => lock.key === entry.key)) this._locks.push(entry);
    return { subs: answer.subs ?? [] };
  }

  /**
   * Releases this client's lock with the same selector.
   * @param {string} channel
   * @param {{subscriptions?: string[], signal?: AbortSignal}} [options]
   * @returns {Promise<{released: number}>}
   */
  async unlock(channel, options = {}) {
    const entry = this._lockEntry({ ch: channel, subs: options.subscriptions });
    this._locks = this._locks.filter((lock) => lock.key !== entry.key);
    const answer = await this._ask({ ...entry.frame(), op: 'unlock' }, options);
    return { released: answer.released ?? 0 };
  }

  /**
   * Releases the lock on this client's own subscription `name`.
   * @param {string} name
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{released: number}>}
   */
  async unlockSubscription(name, options = {}) {
    const entry = this._lockEntry({ sub: name });
    this._locks = this._locks.filter((lock) => lock.key !== entry.key);
    const answer = await this._ask({ ...entry.frame(), op: 'unlock' }, options);
    return { released: answer.released ?? 0 };
  }

  /**
   * Which subscriptions an event on `channel` would reach, split by whether a lock
   * suppresses it now.
   * @param {string} channel a concrete channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{locked: string[], unlocked: string[]}>}
   */
  async locks(channel, options = {}) {
    const answer = await this._ask({ op: 'locks', ch: channel }, options);
    return { locked: answer.locked ?? [], unlocked: answer.unlocked ?? [] };
  }

  /**
   * A lock as remembered for restores; own global ids are kept as names.
   * @param {{ch?: string, subs?: string[], sub?: string}} selector
   * @returns {{key: string, frame: () => any, ch?: string, sub?: string}}
   */
  _lockEntry({ ch, subs, sub }) {
    if (sub !== undefined) {
      return { key: `sub\u0000${sub}`, sub, frame: () => ({ op: 'lock', sub }) };
    }
    const own = this.clientId ? this.clientId + '/' : null;
    const ids = subs?.map((id) => (own && id.startsWith(own) ? { own: id.slice(own.length) } : { id }));
    const render = () => ids?.map((item) => (item.own !== undefined ? `${this.clientId}/${item.own}` : item.id));
    const key = `ch\u0000${ch}\u0000${ids ? JSON.stringify(ids) : ''}`;
    return { key, ch, frame: () => (ids ? { op: 'lock', ch, subs: render() } : { op: 'lock', ch }) };
  }

  // MARK: instance channels

  /**
   * Makes this connection the owner of an instance channel (declared again after every
   * reconnect).
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   */
  async declare(channel, options = {}) {
    await this._ask({ op: 'declare', ch: channel }, options);
    this._declared.add(channel);
  }

  /**
   * Removes an instance channel this client owns: its exact subscribers get `removed`.
   * @param {string} channel
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{count: number}>}
   */
  async remove(channel, options = {}) {
    this._declared.delete(channel);
    const answer = await this._ask({ op: 'remove', ch: channel }, options);
    return { count: answer.count ?? 0 };
  }

  /**
   * Removes every instance channel this client owns.
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{count: number}>}
   */
  async removeAll(options = {}) {
    this._declared.clear();
    const answer = await this._ask({ op: 'remove', all: true }, options);
    return { count: answer.count ?? 0 };
  }

  /** The instance channels this client owns. @returns {string[]} */
  get declaredChannels() { return [...this._declared]; }

  // MARK: other ops

  /**
   * Who is in `channel`: connections subscribed to exactly it (the daemon's `presence` op),
   * every page (`limit` members per page, default 1000), as `{count, members}`; with
   * `countOnly` only `{count}`. With `after` (a `next` of an earlier answer) it answers that
   * one page, `next` included when more follow. A daemon without the op answers `unknown_op`.
   * @param {string} channel
   * @param {{limit?: number, after?: string, countOnly?: boolean, signal?: AbortSignal}} [options]
   * @returns {Promise<{count: number, members?: Array<{client: string, user?: string, info?: unknown}>, next?: string}>}
   */
  async presence(channel, options = {}) {
    const page = async (after) => {
      const frame = { op: 'presence', ch: channel };
      if (options.countOnly) frame.count_only = true;
      else frame.limit = options.limit ?? 1000;
      if (after !== undefined) frame.after = after;
      return this._ask(frame, options);
    };
    if (options.after !== undefined) {
      const answer = await page(options.after);
      const result = { count: answer.count, members: answer.members ?? [] };
      if (answer.next !== undefined) result.next = answer.next;
      return result;
    }
    let answer = await page(undefined);
    if (options.countOnly) return { count: answer.count };
    const members = [...(answer.members ?? [])];
    while (answer.next !== undefined && (answer.members ?? []).length > 0) {
      answer = await page(answer.next);
      members.push(...(answer.members ?? []));
    }
    return { count: answer.count, members };
  }

  /**
   * Keeps `{count, members}` of `channel` current: a subscription to `$presence.CHANNEL`
   * (join, leave and count events) and the member list read after the subscription is
   * confirmed, again after every reconnect, `gap`, count event or leave of an unknown member.
   * `onChange(state, change)` hears every change (`change.kind`: `'resync'` for a whole read,
   * the first included, `'join'`, `'leave'`, `'count'`). Resolves once the list is read.
   * Past `maxListed` members (default 1000) only the count is kept (`countOnly`).
   * @param {string} channel
   * @param {((state: any, change: any) => void) | null} [onChange]
   * @param {{pageSize?: number, maxListed?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<PresenceWatcher>}
   */
  async watchPresence(channel, onChange, options = {}) {
    if (typeof channel !== 'string' || isPattern(channel) || channel.startsWith('$')) {
      throw new HeraldError('bad_channel', `presence needs a concrete application channel, not ${JSON.stringify(channel)}`);
    }
    const watcher = new PresenceWatcher(this, channel, options);
    if (onChange) watcher.observe(onChange, { alertNow: false });
    await watcher._start(options.signal);
    return watcher;
  }

  /**
   * The daemon's clock, and a round trip.
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<{serverTime: number, roundTripMs: number}>}
   */
  async ping(options = {}) {
    const started = Date.now();
    const answer = await this._ask({ op: 'ping' }, options);
    return { serverTime: answer.pong, roundTripMs: Date.now() - started };
  }

  /**
   * Sends any op with `fields` and resolves with the whole answer frame (tools, new ops).
   * @param {string} op
   * @param {Record<string, unknown>} [fields]
   * @param {{signal?: AbortSignal, timeoutMs?: number}} [options]
   * @returns {Promise<any>}
   */
  call(op, fields = {}, options = {}) {
    return this._ask({ ...fields, op }, options);
  }

  // MARK: restore

  /**
   * After a reconnect: declared channels, links, channel locks, then every subscription
   * (with its name locks right after it) and the mirrors' reads, pipelined in that order
   * (the daemon handles a connection's lines in order). Refusals that may pass
   * (`conflict` for a channel or link: the old connection may still hold it; `unavailable`)
   * are retried with backoff for `restoreRetryTimeoutMs`; the rest are reported.
   */
  _restore(generation, epochChanged) {
    const work = [];
    const summary = { declared: 0, links: 0, locks: 0, subscriptions: 0, failed: 0 };
    const limit = this.options.restoreRetryTimeoutMs ?? 30000;
    const started = Date.now();
    const attempt = (frame, retryable, onOk, onFail, delay = 100) =>
      this._ask(frame, { anyState: true, timeoutMs: 0 }).then(onOk, (error) => {
        if (generation !== this._generation || error.code === 'disconnected' || error.code === 'closed') return;
        if ((error.code === 'unavailable' || retryable.includes(error.code)) && Date.now() - started < limit) {
          return new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * delay / 2)).then(() => {
            if (generation !== this._generation) return;
            return attempt(frame, retryable, onOk, onFail, Math.min(delay * 2, 1000));
          });
        }
        summary.failed++;
        onFail(error);
      });
    const failed = (kind, channel, error) => this._report(new HeraldError('restore_failed',
      `${kind} ${channel} could not be restored: ${error.code}: ${error.message}`, { cause: error, channel }));

    for (const channel of this._declared) {
      work.push(attempt({ op: 'declare', ch: channel }, ['conflict'], () => { summary.declared++; }, (error) => {
        this._declared.delete(channel);
        failed('instance channel', channel, error);
      }));
    }
    for (const [channel, parent] of this._links) {
      work.push(attempt({ op: 'link', ch: channel, parent }, ['conflict'], () => { summary.links++; }, (error) => {
        this._links.delete(channel);
        failed('link', channel, error);
      }));
    }
    const dropLock = (entry) => { this._locks = this._locks.filter((lock) => lock !== entry); };
    for (const entry of this._locks.filter((lock) => lock.sub === undefined)) {
      work.push(attempt(entry.frame(), [], () => { summary.locks++; }, (error) => { dropLock(entry); failed('lock on', entry.ch, error); }));
    }
    for (const sub of [...this._subs.values()]) {
      if (epochChanged) {
        // A new daemon life: seqs start again and `since` cannot help.
        if (sub.lastSeq !== null && sub._canCatchUp()) {
          sub.recovered = false;
          this._historyLost(sub);
        }
        sub.lastSeq = null;
      }
      work.push(this._sendSub(sub, true).then(() => { if (sub._confirmed) summary.subscriptions++; }));
      for (const entry of this._locks.filter((lock) => lock.sub === sub.name)) {
        work.push(attempt(entry.frame(), [], () => { summary.locks++; }, (error) => { dropLock(entry); failed('lock on subscription', sub.name, error); }));
      }
    }
    for (const entry of this._locks.filter((lock) => lock.sub !== undefined && !this._subs.has(lock.sub))) {
      dropLock(entry);
    }
    for (const mirror of this._mirrors) {
      if (epochChanged) mirror._forgetRev();
      work.push(mirror._refresh());
    }
    return Promise.all(work).then(() => summary);
  }
}

/**
 * One event as a handler or an iterator gets it.
 * @typedef {import('./herald').HeraldEvent} HeraldEvent
 * @typedef {import('./herald').SignalOffer} SignalOffer
 */

/**
 * A subscription (or a signal handler). `unsubscribe()` ends it; `for await` reads its
 * events when it has no handler (or alongside it); `ended` resolves with why it ended.
 */
export class Subscription {
  constructor(client, name, pattern, handler, options, mode) {
    /** @type {HeraldClient} */
    this.client = client;
    /** @type {string} the subscription's name on this connection */
    this.name = name;
    /** @type {string} */
    this.pattern = pattern;
    this.options = options;
    /** @type {'events' | 'signals'} */
    this.mode = mode;
    this._handler = handler;
    /** @type {number} deliveries so far (events, `current`, replays, signal offers) */
    this.delivered = 0;
    /** @type {number | null} the last `seq` seen (for `since` after a reconnect) */
    this.lastSeq = options.since ?? null;
    /** @type {boolean | null} whether the last catch-up recovered everything (null: none asked) */
    this.recovered = null;
    /** @type {number} events dropped because the iterator's buffer was full */
    this.droppedCount = 0;
    /** @type {import('./herald').SubscriptionEnd | null} */
    this.endReason = null;
    this._confirmed = false;
    this._ready = deferred();
    this._ended = deferred();
    /** @type {Promise<import('./herald').SubscriptionEnd>} resolves with why it ended */
    this.ended = this._ended.promise;
    this._queue = [];
    this._waiters = [];
    this._iterating = false;
    this._bufferLimit = options.buffer ?? 1000;
    /** @type {any} the mirror this subscription feeds, if it is one's */
    this._mirror = null;
  }

  /** The global id (`c7/NAME`), used by locks. @returns {string} */
  get globalId() { return `${this.client.clientId}/${this.name}`; }

  /** Whether `since` can catch this subscription up after a reconnect. */
  _canCatchUp() {
    // Not for a queue-group member: the events it missed went to the group's others.
    // Nor for a mirror that reads its state again after every restore (presence).
    return this.mode === 'events' && !this.options.current && this.options.group === undefined && !isPattern(this.pattern)
      && !this._mirror?._readsAgain;
  }

  _confirm() {
    this._confirmed = true;
    this._ready.resolve(this);
  }

  _refuse(error) {
    this._ready.reject(error);
    this._end({ reason: error.code === 'cancelled' ? 'cancelled' : 'refused', error });
  }

  _deliver(frame) {
    if (this.endReason) return;
    if (frame.seq !== undefined && !isPattern(this.pattern)) this.lastSeq = frame.seq;
    this.delivered++;
    const event = makeEvent(this, frame);
    if (this._handler) {
      guarded(() => this._handler(event), (error) => this.client._report(new HeraldError('handler_failed',
        `handler of ${this.name} (${this.pattern}) threw on ${event.channel}: ${error?.message ?? error}`,
        { cause: error, subscription: this.name, channel: event.channel })));
    }
    if (!this._handler || this._iterating) this._push(event);
    if (frame.last) this._finish();
  }

  _offer(frame) {
    if (this.endReason) {
      this.client._sendHandled(frame.id, 'pass');
      return;
    }
    this.delivered++;
    const client = this.client;
    const generation = client._generation;
    const offer = {
      id: frame.id, level: frame.signal, origin: frame.origin, from: frame.from,
      tag: frame.tag, args: frame.args, data: frame.data, subscription: this.name,
      callback(data) {
        if (generation !== client._generation) throw new HeraldError('disconnected', 'the connection this offer came on is gone');
        const callback = { op: 'callback', id: frame.id };
        if (data !== undefined) callback.data = data;
        client._sendFrame(callback);
      },
    };
    let answered = false;
    const answer = (verdict) => {
      if (answered) return;
      answered = true;
      if (generation === client._generation) client._sendHandled(frame.id, verdict === 'stop' || verdict === true ? 'stop' : 'pass');
    };
    try {
      const result = this._handler(offer);
      if (result && typeof result.then === 'function') {
        result.then(answer, (error) => { this._handlerThrew(offer, error); answer('pass'); });
      } else {
        answer(result);
      }
    } catch (error) {
      this._handlerThrew(offer, error);
      answer('pass');
    }
    if (frame.last) this._finish();
  }

  _handlerThrew(offer, error) {
    this.client._report(new HeraldError('handler_failed', `signal handler ${this.name} threw on ${offer.origin}: ${error?.message ?? error}`,
      { cause: error, subscription: this.name, channel: offer.origin }));
  }

  _gap(gap) {
    if (this.options.onGap) {
      guarded(() => this.options.onGap(gap), (error) => this.client._report(error));
    } else if (this._mirror) {
      this._mirror._gap();
    } else {
      this.client._report(new HeraldError('gap', `events ${gap.from}…${gap.to} of ${gap.channel} will not reach ${this.name}`,
        { channel: gap.channel, subscription: this.name }));
    }
    if (this._mirror && this.options.onGap) this._mirror._gap();
  }

  _removed(frame) {
    if (this.client._subs.get(this.name) === this) this.client._subs.delete(this.name);
    this._end({ reason: frame.reason === 'forbidden' ? 'forbidden' : 'removed', channel: frame.removed });
  }

  _finish() {
    if (this.client._subs.get(this.name) === this) this.client._subs.delete(this.name);
    this._end({ reason: 'finished' });
  }

  _end(end) {
    if (this.endReason) return;
    this.endReason = end;
    if (!this._confirmed) this._ready.reject(end.error ?? new HeraldError(end.reason === 'closed' ? 'closed' : 'cancelled', `subscription ended: ${end.reason}`));
    this._ready.promise.catch(() => {});
    this._ended.resolve(end);
    if (this.options.onEnd) guarded(() => this.options.onEnd(end), (error) => this.client._report(error));
    for (const waiter of this._waiters.splice(0)) waiter.resolve({ value: undefined, done: true });
  }

  _push(event) {
    const waiter = this._waiters.shift();
    if (waiter) {
      waiter.resolve({ value: event, done: false });
      return;
    }
    this._queue.push(event);
    if (this._queue.length > this._bufferLimit) {
      this._queue.shift();
      this.droppedCount++;
    }
  }

  /**
   * Ends the subscription (the daemon is told) and resolves with how many the daemon
   * removed.
   * @returns {Promise<number>}
   */
  unsubscribe() {
    if (this.endReason) return Promise.resolve(0);
    this._end({ reason: 'cancelled' });
    return this.client._unsubscribe(this);
  }

  /**
   * Events in arrival order; the loop ends when the subscription ends; leaving the loop
   * early (`break`) unsubscribes.
   * @returns {AsyncIterableIterator<HeraldEvent>}
   */
  [Symbol.asyncIterator]() {
    this._iterating = true;
    return {
      next: () => {
        if (this._queue.length > 0) return Promise.resolve({ value: this._queue.shift(), done: false });
        if (this.endReason) return Promise.resolve({ value: undefined, done: true });
        const waiter = deferred();
        this._waiters.push(waiter);
        return waiter.promise;
      },
      return: () => {
        this._iterating = false;
        this.unsubscribe().catch(() => {});
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() { return this; },
    };
  }
}

/** The event object of an event frame. */
function makeEvent(sub, frame) {
  const event = {
    channel: frame.event,
    subscription: frame.sub ?? sub.name,
    seq: frame.seq,
    from: frame.from,
    data: hasOwn(frame, 'value') ? frame.value : frame.data,
  };
  if (frame.kind !== undefined) { event.kind = frame.kind; event.value = frame.value ?? null; }
  if (frame.rev !== undefined) event.rev = frame.rev;
  if (frame.index !== undefined) event.index = frame.index;
  if (frame.remove !== undefined) event.remove = frame.remove;
  if (frame.insert !== undefined) event.insert = frame.insert;
  if (frame.args !== undefined) event.args = frame.args;
  if (frame.replay) event.replay = true;
  if (frame.last) event.last = true;
  if (frame.dropped !== undefined) event.dropped = frame.dropped;
  if (frame.reply !== undefined) {
    event.reply = frame.reply;
    const client = sub.client;
    event.respond = (data) => client.reply(frame.reply, data);
  }
  return event;
}

/** What mirrors share: the subscription, observers, the rev order, the restore. */
class Mirror {
  constructor(client, channel) {
    /** @type {HeraldClient} */
    this.client = client;
    /** @type {string} */
    this.channel = channel;
    /** @type {number} the rev held; -1 until the first state came */
    this.rev = -1;
    /** @type {number} how many times the state was read again after a missed change */
    this.resyncCount = 0;
    this._observers = new Set();
    this._sub = null;
    this._reading = false;
    this._isClosed = false;
  }

  /**
   * Applies one event of the mirror's subscription (each kind of mirror has its own).
   * @param {HeraldEvent} event
   */
  _event(event) { void event; }

  /**
   * The options of the mirror's subscription: retained state first.
   * @returns {{current?: boolean}}
   */
  _subscribeOptions() { return { current: true }; }

  /**
   * Takes a whole state: a value, or a list's elements.
   * @param {any} value
   * @param {number} rev
   * @param {string} kind
   */
  _take(value, rev, kind) { void value; void rev; void kind; }

  async _start(signal) {
    this._sub = await this.client.subscribe(this.channel, (event) => this._event(event), { ...this._subscribeOptions(), signal });
    this._sub._mirror = this;
    this.client._mirrors.add(this);
    this._sub.ended.then((end) => { if (end.reason !== 'closed') this._ownEnd(end); });
    try {
      await this._refresh(signal);
    } catch (error) {
      await this.close().catch(() => {});
      throw error;
    }
  }

  /** Reads the state again (`get`), taking it when it is newer than what is held. */
  _refresh(signal) {
    this._reading = true;
    return this.client._ask({ op: 'get', ch: this.channel }, { anyState: true, signal }).then((answer) => {
      this._reading = false;
      if (answer.rev > this.rev || this.rev < 0) this._take(answer.value ?? null, answer.rev, 'get');
    }, (error) => {
      this._reading = false;
      if (error.code !== 'disconnected' && error.code !== 'closed' && !this._isClosed) throw error;
    });
  }

  _resync() {
    if (this._reading) return;
    this.resyncCount++;
    this._refresh().catch((error) => this.client._report(error));
  }

  _gap() { this._resync(); }

  _forgetRev() { this.rev = -1; }

  _ownEnd(end) {
    this.client._mirrors.delete(this);
    this._isClosed = true;
    if (end.reason !== 'cancelled') {
      this.client._report(new HeraldError('restore_failed', `mirror of ${this.channel} ended: ${end.reason}`, { channel: this.channel, cause: end.error }));
    }
  }

  _closed() { this._isClosed = true; }

  _notify(...args) {
    for (const observer of [...this._observers]) {
      guarded(() => observer(...args), (error) => this.client._report(new HeraldError('handler_failed',
        `observer of ${this.channel} threw: ${error?.message ?? error}`, { cause: error, channel: this.channel })));
    }
  }

  _observe(observer, alertNow, first) {
    this._observers.add(observer);
    if (alertNow) guarded(first, (error) => this.client._report(error));
    return () => this._observers.delete(observer);
  }

  /** Stops following the channel. @returns {Promise<void>} */
  async close() {
    this._isClosed = true;
    this._observers.clear();
    this.client._mirrors.delete(this);
    await this._sub?.unsubscribe();
  }
}

/**
 * A mirror of a channel's retained value. `value` and `rev` are current; observers hear
 * every change (`set`, `del`, `touch`, and the state read after a reconnect), in rev order.
 */
export class RemoteValue extends Mirror {
  constructor(client, channel) {
    super(client, channel);
    /** @type {any} the value; null when unset or deleted */
    this.value = null;
  }

  _event(event) {
    if (event.rev === undefined) return;
    switch (event.kind) {
      case 'set': case 'current':
        if (event.rev > this.rev) this._take(event.value, event.rev, event.kind);
        break;
      case 'del':
        if (event.rev > this.rev) this._take(null, event.rev, 'del');
        break;
      case 'touch':
        if (event.rev === this.rev) this._notify(this.value, this.rev, 'touch');
        else if (event.rev > this.rev) this._take(event.value, event.rev, 'set');
        break;
      default:
        // A list op on the channel: the value is now a list.
        if (event.rev > this.rev) this._resync();
    }
  }

  _take(value, rev, kind) {
    this.value = value;
    this.rev = rev;
    this._notify(value, rev, kind);
  }

  /**
   * Calls `observer(value, rev, kind)` on every change; at once too unless
   * `alertNow: false`. `kind`: `initial`, `set`, `del`, `touch`, `current`, `get`.
   * @param {(value: any, rev: number, kind: string) => void} observer
   * @param {{alertNow?: boolean}} [options]
   * @returns {() => void} stops observing
   */
  observe(observer, options = {}) {
    return this._observe(observer, options.alertNow !== false, () => observer(this.value, this.rev, 'initial'));
  }

  /**
   * Sets the value; the mirror holds it at once. A stale `ifRev` rejects with `conflict`.
   * @param {unknown} value
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<number>} the new rev
   */
  async set(value, options = {}) {
    const { rev } = await this.client.set(this.channel, value, options);
    if (rev > this.rev) this._take(value === undefined ? null : value, rev, 'set');
    return rev;
  }

  /**
   * Deletes the value.
   * @param {{ifRev?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<number>} the new rev
   */
  async delete(options = {}) {
    const { rev } = await this.client.del(this.channel, options);
    if (rev > this.rev) this._take(null, rev, 'del');
    return rev;
  }

  /** Makes every subscriber (and this mirror's observers) hear the value again. */
  async touch() {
    await this.client.touch(this.channel);
  }
}

/**
 * A mirror of a channel's retained list. Observers hear `(items, change, rev)` with the
 * change's kind: `{kind:'index', index}`, `{kind:'splice', index, remove, inserted}`,
 * `{kind:'whole'}` or `{kind:'touched'}`.
 */
export class RemoteList extends Mirror {
  constructor(client, channel) {
    super(client, channel);
    /** @type {any[]} */
    this._items = [];
    this._indexObservers = new Map();
  }

  /** A copy of the list. @returns {any[]} */
  get items() { return [...this._items]; }

  /** The list's length. @returns {number} */
  get length() { return this._items.length; }

  /** One element, or undefined. @param {number} index */
  at(index) { return this._items[index]; }

  _event(event) {
    if (event.rev === undefined || this._reading) return;   // the read under way covers it
    switch (event.kind) {
      case 'set': case 'current':
        if (event.rev > this.rev) this._take(event.value, event.rev, event.kind);
        return;
      case 'del':
        if (event.rev > this.rev) this._take(null, event.rev, 'del');
        return;
      case 'touch':
        if (event.rev === this.rev) this._changed({ kind: 'touched' }, null);
        else if (event.rev > this.rev) this._resync();
        return;
      case 'index': case 'splice':
        if (event.rev <= this.rev) return;
        if (event.rev !== this.rev + 1 || this.rev < 0) { this._resync(); return; }
        if (event.kind === 'index') {
          if (event.index === this._items.length) this._items.push(event.value);
          else this._items[event.index] = event.value;
          this.rev = event.rev;
          this._changed({ kind: 'index', index: event.index }, [event.index, event.index + 1]);
        } else {
          const insert = event.insert ?? [];
          const remove = event.remove ?? 0;
          this._items.splice(event.index, remove, ...insert);
          this.rev = event.rev;
          const end = remove === insert.length ? event.index + remove : Infinity;
          this._changed({ kind: 'splice', index: event.index, remove, inserted: insert.length }, [event.index, end]);
        }
    }
  }

  _take(value, rev, kind) {
    this._items = Array.isArray(value) ? [...value] : [];
    this.rev = rev;
    void kind;
    this._changed({ kind: 'whole' }, null);
  }

  _changed(change, range) {
    this._notify(this._items, change, this.rev);
    for (const [index, observers] of this._indexObservers) {
      if (range && change.kind !== 'touched' && (index < range[0] || index >= range[1])) continue;
      for (const observer of [...observers]) {
        guarded(() => observer(this._items[index], this.rev), (error) => this.client._report(error));
      }
    }
  }

  /**
   * Calls `observer(items, change, rev)` after every change; at once too (`{kind:'whole'}`)
   * unless `alertNow: false`. `items` is the mirror's own array: copy it to keep it.
   * @param {(items: any[], change: import('./herald').ListChange, rev: number) => void} observer
   * @param {{alertNow?: boolean}} [options]
   * @returns {() => void}
   */
  observe(observer, options = {}) {
    return this._observe(observer, options.alertNow !== false, () => observer(this._items, { kind: 'whole' }, this.rev));
  }

  /**
   * Calls `observer(element, rev)` when a change may have touched position `index`.
   * @param {number} index
   * @param {(element: any, rev: number) => void} observer
   * @param {{alertNow?: boolean}} [options]
   * @returns {() => void}
   */
  observeIndex(index, observer, options = {}) {
    if (!this._indexObservers.has(index)) this._indexObservers.set(index, new Set());
    this._indexObservers.get(index).add(observer);
    if (options.alertNow !== false) guarded(() => observer(this._items[index], this.rev), (error) => this.client._report(error));
    return () => this._indexObservers.get(index)?.delete(observer);
  }

  /** @param {unknown} value @param {{ifRev?: number}} [options] @returns {Promise<number>} */
  async append(value, options = {}) { return (await this.client.append(this.channel, value, options)).rev; }

  /** @param {number} index @param {unknown} value @param {{ifRev?: number}} [options] @returns {Promise<number>} */
  async assign(index, value, options = {}) { return (await this.client.assign(this.channel, index, value, options)).rev; }

  /** @param {number} index @param {number} remove @param {unknown[]} [insert] @param {{ifRev?: number}} [options] @returns {Promise<number>} */
  async splice(index, remove, insert = [], options = {}) { return (await this.client.splice(this.channel, index, remove, insert, options)).rev; }

  /** Replaces the whole list. @param {unknown[]} items @param {{ifRev?: number}} [options] @returns {Promise<number>} */
  async set(items, options = {}) { return (await this.client.set(this.channel, items, options)).rev; }

  /** Deletes the list. @param {{ifRev?: number}} [options] @returns {Promise<number>} */
  async delete(options = {}) { return (await this.client.del(this.channel, options)).rev; }
}

/**
 * Who is in a channel, kept current (`client.watchPresence`): `members` (in the daemon's
 * order, each `{client, user?, info?}`), `count`, and `countOnly` while the channel has more
 * members than `maxListed` (only the count is kept then). Joins and leaves that arrive
 * while pages are read apply to the pages already read; the pages still to come show them.
 */
export class PresenceWatcher extends Mirror {
  constructor(client, channel, options = {}) {
    super(client, `$presence.${channel}`);
    /** @type {string} the channel whose members are watched */
    this.target = channel;
    /** @type {number} */
    this.count = 0;
    /** @type {Array<{client: string, user?: string, info?: unknown}>} */
    this.members = [];
    /** @type {boolean} only the count is kept (more than maxListed members) */
    this.countOnly = false;
    this._pageSize = Math.min(1000, Math.max(1, options.pageSize ?? 100));
    this._maxListed = options.maxListed ?? 1000;
    this._readsAgain = true;
    /** @type {{members: any[], readUpTo: number | null, done?: Promise<void>} | null} the read under way */
    this._sync = null;
    this._syncAgain = false;
  }

  /**
   * No retained state on `$presence`: a plain subscription.
   * @returns {{current?: boolean}}
   */
  _subscribeOptions() { return {}; }

  /** `{members, count, countOnly}` now. */
  get state() { return { members: this.countOnly ? [] : [...this.members], count: this.count, countOnly: this.countOnly }; }

  /**
   * Calls `observer(state, change)` after every change, and at once (change `{kind:
   * 'initial'}`) unless `alertNow` is false.
   * @param {(state: any, change: any) => void} observer
   * @param {{alertNow?: boolean}} [options]
   * @returns {() => void} stops the calls
   */
  observe(observer, options = {}) {
    return this._observe(observer, options.alertNow !== false, () => observer(this.state, { kind: 'initial' }));
  }

  _event(event) {
    const data = event.data;
    if (data === null || typeof data !== 'object') return;
    const { action, ...member } = data;
    if (action === 'count') {
      // Cluster mode: one node's own count (`node`); the total comes from a read.
      if (data.node !== undefined) this._resync();
      else this._counted(Number(data.count) || 0);
      return;
    }
    if ((action !== 'join' && action !== 'leave') || typeof member.client !== 'string') return;
    const sync = this._sync;
    if (sync && sync.readUpTo !== null && clientNumber(member.client) <= sync.readUpTo) PresenceWatcher._apply(action, member, sync.members);
    if (this.countOnly) {
      this.count = Math.max(0, this.count + (action === 'join' ? 1 : -1));
      this._notify(this.state, { kind: 'count', count: this.count });
      if (this.count <= this._maxListed) this._resync();
      return;
    }
    const listed = PresenceWatcher._apply(action, member, this.members);
    if (listed === null) {
      // A leave of someone never listed: a change was missed (a reconnect within the grace
      // period keeps its place under its new client id, unannounced).
      if (!sync) this._resync();
      return;
    }
    this.count = this.members.length;
    this._notify(this.state, { kind: action, member: listed });
  }

  /** Applies a join or leave to a sorted list; the member as listed, or null for an unknown leave. */
  static _apply(action, member, members) {
    const index = members.findIndex((m) => m.client === member.client);
    if (action === 'leave') return index < 0 ? null : members.splice(index, 1)[0];
    if (index >= 0) members[index] = member;
    else {
      const at = members.findIndex((m) => clientNumber(m.client) > clientNumber(member.client));
      members.splice(at < 0 ? members.length : at, 0, member);
    }
    return member;
  }

  _counted(count) {
    this.count = count;
    if (count > this._maxListed && !this.countOnly) {
      this.countOnly = true;
      this.members = [];
    }
    this._notify(this.state, { kind: 'count', count });
    if (count <= this._maxListed) this._resync();
  }

  _resync() {
    this._refresh().catch((error) => this.client._report(error));
  }

  _gap() { this._resync(); }

  /** Reads the member list (one read at a time; asked during one, it reads once more after). */
  _refresh(signal) {
    if (this._sync) {
      this._syncAgain = true;
      return this._sync.done;
    }
    const sync = { members: [], readUpTo: null };
    this._sync = sync;
    this._syncAgain = false;
    this.resyncCount++;
    sync.done = this._read(sync, signal).then(() => {
      if (this._sync === sync) this._sync = null;
      if (this._syncAgain && !this._isClosed) this._resync();
    }, (error) => {
      if (this._sync === sync) this._sync = null;
      if (error.code !== 'disconnected' && error.code !== 'closed' && !this._isClosed) throw error;
    });
    return sync.done;
  }

  async _read(sync, signal) {
    let countOnly = this.countOnly;
    let after;
    for (;;) {
      const frame = { op: 'presence', ch: this.target };
      if (countOnly) frame.count_only = true;
      else {
        frame.limit = this._pageSize;
        if (after !== undefined) frame.after = after;
      }
      const answer = await this.client._ask(frame, { anyState: true, signal });
      if (this._sync !== sync) return;
      if (countOnly && answer.count <= this._maxListed) { countOnly = false; continue; }
      if (countOnly || answer.count > this._maxListed) {
        this.countOnly = true;
        this.members = [];
        this.count = answer.count;
        break;
      }
      const page = answer.members ?? [];
      sync.members.push(...page);
      if (answer.next !== undefined && page.length > 0) {
        sync.readUpTo = clientNumber(answer.next);
        after = answer.next;
        continue;
      }
      this.countOnly = false;
      this.members = sync.members;
      this.count = sync.members.length;
      break;
    }
    this._sync = null;
    this._notify(this.state, { kind: 'resync' });
  }
}
