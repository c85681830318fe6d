// Types of the Herald JavaScript client (herald.mjs). Guide: docs/client-js.md.

/** Client-side error codes, beside the daemon's wire codes. */
export type ClientErrorCode =
  | 'not_connected' | 'disconnected' | 'closed' | 'cancelled' | 'timeout'
  | 'connection_failed' | 'auth_rejected' | 'history_lost' | 'restore_failed'
  | 'handler_failed' | 'gap' | 'bad_frame' | 'offline_queue_full';

/** The daemon's error codes (docs/protocol.md, "Errors"). */
export type WireErrorCode =
  | 'bad_json' | 'line_too_long' | 'unknown_op' | 'missing_field' | 'bad_field' | 'bad_channel'
  | 'not_found' | 'forbidden' | 'auth_required' | 'too_many_attempts' | 'conflict' | 'cycle'
  | 'type' | 'range' | 'limit' | 'timeout' | 'no_responders' | 'slow_consumer'
  | 'too_many_errors' | 'shutting_down' | 'unavailable' | 'node_reset' | 'kicked';

/** An error with a stable `code`: the daemon's wire code or the client's own. */
export class HeraldError extends Error {
  constructor(code: string, message: string, details?: {
    op?: string; rid?: unknown; rev?: number; frame?: object; cause?: unknown; channel?: string; subscription?: string;
  });
  readonly name: 'HeraldError';
  readonly code: WireErrorCode | ClientErrorCode | (string & {});
  /** The op the daemon refused. */
  readonly op?: string;
  readonly rid?: unknown;
  /** The channel's current rev, on a `conflict`. */
  readonly rev?: number;
  readonly channel?: string;
  readonly subscription?: string;
  /** The error frame as the daemon sent it. */
  readonly frame?: object;
  static fromFrame(frame: object): HeraldError;
}

export const VERSION: string;

export interface ReconnectOptions {
  /** First delay, doubled per attempt (default 100 ms). */
  initialDelayMs?: number;
  /** Cap of the delay (default 5000 ms). Each wait is a random point in its upper half. */
  maxDelayMs?: number;
  /** Attempts before giving up (default: forever). */
  maxAttempts?: number;
}

export interface ConnectOptions {
  /** Sent in `hello` (auth). */
  token?: string;
  /** Sent in `hello`: which user the token is for. */
  user?: string;
  /** Display name, sent in `hello`. */
  name?: string;
  /**
   * What other connections see of this one in presence, sent as `hello`'s `info` with
   * `instance` added (an object; its own `instance` wins). Other values are sent as they are.
   */
  info?: unknown;
  /**
   * The app instance named in `hello`'s `info` (default: a random id made once per client,
   * kept across its reconnects). With the daemon's `presence_grace_ms`, a reconnect within the
   * grace under the same user and instance keeps this client's place in presence, with no
   * leave and no join. An app may pass its own per-install id; two live clients must not share one.
   */
  instance?: string;
  /** `false`: never receive this connection's own publications. */
  echo?: boolean;
  /** `false` turns reconnecting off. */
  reconnect?: ReconnectOptions | false;
  /**
   * Keep publishes made while disconnected (and those a lost connection left unanswered) and
   * send them after the next restore, each with an idempotency `id`, so the daemon delivers
   * each once. Off unless given; past `maxCount` (default 1000) or `maxBytes` (default 1 MiB)
   * a publish is refused with `offline_queue_full`.
   */
  offlinePublishing?: { maxCount?: number; maxBytes?: number };
  /** Keep retrying the first connection instead of rejecting once each URL failed. */
  waitForConnectivity?: boolean;
  /** Per attempt, until `info` arrives (default 5000). */
  connectTimeoutMs?: number;
  /** The client's own deadline for an answer (default 10000). */
  requestTimeoutMs?: number;
  /** How long a refused restore (`conflict`, `unavailable`) is retried (default 30000). */
  restoreRetryTimeoutMs?: number;
  /** Cancels connecting. */
  signal?: AbortSignal;
  /** The WebSocket constructor, where the runtime has no global one. */
  WebSocket?: new (url: string) => WebSocket;
}

export type ClientState = 'connecting' | 'restoring' | 'connected' | 'reconnecting' | 'closed';

/** A delivered event. State events (`kind` set) carry the state in `value` (and `data`). */
export interface HeraldEvent<T = any> {
  /** The concrete channel (also for a pattern subscription). */
  channel: string;
  subscription: string;
  /** Per-channel sequence number (absent on `current` snapshots). */
  seq?: number;
  /** The publisher's client id. */
  from?: string;
  data: T;
  kind?: 'set' | 'del' | 'touch' | 'current' | 'index' | 'splice';
  value?: any;
  rev?: number;
  index?: number;
  remove?: number;
  insert?: any[];
  /** The subscription's own `args`, echoed. */
  args?: unknown;
  /** A request's reply token: answer with `respond` or `client.reply`. */
  reply?: string;
  respond?: (data?: unknown) => void;
  /** From history (`since`). */
  replay?: true;
  /** The final delivery of a `once`/`max` subscription. */
  last?: true;
  /** Events this subscription lost to the daemon's slow-consumer policy since the last one. */
  dropped?: number;
}

export interface Gap {
  channel: string;
  subscription: string;
  /** First seq that will not come. */
  from: number;
  /** Last seq that will not come. */
  to: number;
}

export interface SubscriptionEnd {
  reason: 'finished' | 'removed' | 'forbidden' | 'cancelled' | 'refused' | 'replaced' | 'closed';
  /** The removed instance channel. */
  channel?: string;
  error?: HeraldError;
}

export interface SubscribeOptions {
  /** The name on this connection (default `sN`); the same name again replaces it. */
  name?: string;
  once?: boolean;
  max?: number;
  /** Replays history after this seq first (concrete channels only). */
  since?: number;
  /** Sends the current state of every matching channel first (alert now). */
  current?: boolean;
  /** Queue group: each event goes to one member. */
  group?: string;
  /** Echoed with every event. */
  args?: unknown;
  /** Unsubscribes when it aborts (rejects the subscribe when it aborts first). */
  signal?: AbortSignal;
  /** Events kept for `for await` (default 1000; the oldest go first, counted in `droppedCount`). */
  buffer?: number;
  /** Called once, with why it ended. */
  onEnd?: (end: SubscriptionEnd) => void;
  /** Events the daemon says will never come (cluster faults). */
  onGap?: (gap: Gap) => void;
}

export class Subscription implements AsyncIterable<HeraldEvent> {
  readonly client: HeraldClient;
  readonly name: string;
  readonly pattern: string;
  readonly mode: 'events' | 'signals';
  readonly delivered: number;
  readonly lastSeq: number | null;
  /** Whether the last catch-up recovered everything; null when none was asked. */
  readonly recovered: boolean | null;
  readonly droppedCount: number;
  readonly endReason: SubscriptionEnd | null;
  readonly ended: Promise<SubscriptionEnd>;
  /** `CLIENT/NAME`, as locks name it. */
  readonly globalId: string;
  /** Resolves with how many subscriptions the daemon removed. */
  unsubscribe(): Promise<number>;
  [Symbol.asyncIterator](): AsyncIterator<HeraldEvent>;
}

export interface PublishOptions {
  /** Ask for a receipt: the promise resolves with `seq` and `receivers`. */
  receipt?: boolean;
  /** Idempotency id (1…64 bytes): a repeat within the dedup window is not delivered. */
  id?: string;
  signal?: AbortSignal;
}

export interface Receipt {
  seq: number;
  receivers: number;
  duplicate?: true;
}

export interface RequestOptions {
  /** The daemon's wait for a reply (default 1000). */
  timeoutMs?: number;
  /** Aborting withdraws the request on the daemon (`cancel`). */
  signal?: AbortSignal;
  /** Resolve with `{from, data}` instead of the data. */
  detail?: boolean;
}

export interface SignalOptions {
  tag?: unknown;
  /** Per handler (default 1000). */
  timeoutMs?: number;
  /** Each handler's callback, in order, before the result. */
  onCallback?: (callback: { from: string; data: any }) => void;
  /** Aborting withdraws the signal. */
  signal?: AbortSignal;
}

export interface SignalResult {
  id: string;
  /** The global id of the handler that stopped it, or null. */
  handledBy: string | null;
  /** The level it was handled at, or null. */
  at: string | null;
  hops: number;
  timeouts: string[];
  readonly handled: boolean;
}

/** A signal as a handler gets it. */
export interface SignalOffer<T = any> {
  id: string;
  /** The level it is offered at now. */
  level: string;
  /** The channel it was sent on. */
  origin: string;
  from: string;
  tag?: unknown;
  args?: unknown;
  data: T;
  subscription: string;
  /** Sends data back to the sender (before the verdict). */
  callback(data?: unknown): void;
}

/** What a signal handler answers: `'stop'` (or true) ends the route; anything else passes. */
export type SignalVerdict = 'stop' | 'pass' | boolean | void;

export type ListChange =
  | { kind: 'whole' }
  | { kind: 'index'; index: number }
  | { kind: 'splice'; index: number; remove: number; inserted: number }
  | { kind: 'touched' };

interface Mirror {
  readonly client: HeraldClient;
  readonly channel: string;
  /** -1 until the first state came. */
  readonly rev: number;
  readonly resyncCount: number;
  close(): Promise<void>;
}

export class RemoteValue<T = any> implements Mirror {
  readonly client: HeraldClient;
  readonly channel: string;
  readonly rev: number;
  readonly resyncCount: number;
  /** null when unset or deleted. */
  readonly value: T | null;
  observe(observer: (value: T | null, rev: number, kind: 'initial' | 'set' | 'del' | 'touch' | 'current' | 'get') => void,
          options?: { alertNow?: boolean }): () => void;
  set(value: T, options?: { ifRev?: number; signal?: AbortSignal }): Promise<number>;
  delete(options?: { ifRev?: number; signal?: AbortSignal }): Promise<number>;
  touch(): Promise<void>;
  close(): Promise<void>;
}

export class RemoteList<T = any> implements Mirror {
  readonly client: HeraldClient;
  readonly channel: string;
  readonly rev: number;
  readonly resyncCount: number;
  /** A copy of the list. */
  readonly items: T[];
  readonly length: number;
  at(index: number): T | undefined;
  observe(observer: (items: readonly T[], change: ListChange, rev: number) => void, options?: { alertNow?: boolean }): () => void;
  observeIndex(index: number, observer: (element: T | undefined, rev: number) => void, options?: { alertNow?: boolean }): () => void;
  append(value: T, options?: { ifRev?: number }): Promise<number>;
  assign(index: number, value: T, options?: { ifRev?: number }): Promise<number>;
  splice(index: number, remove: number, insert?: T[], options?: { ifRev?: number }): Promise<number>;
  set(items: T[], options?: { ifRev?: number }): Promise<number>;
  delete(options?: { ifRev?: number }): Promise<number>;
  close(): Promise<void>;
}

export interface RestoreSummary {
  declared: number;
  links: number;
  locks: number;
  subscriptions: number;
  failed: number;
}

type WithSignal = { signal?: AbortSignal };

/** A member of a channel: a connection subscribed to exactly it, with its `hello` `info`. */
export interface PresenceMember<I = any> {
  client: string;
  /** With auth on. */
  user?: string;
  info?: I;
}

export interface PresenceState<I = any> {
  /** In the daemon's order (by client id); empty while `countOnly`. */
  members: Array<PresenceMember<I>>;
  count: number;
  countOnly: boolean;
}

export type PresenceChange<I = any> =
  | { kind: 'initial' }
  | { kind: 'resync' }
  | { kind: 'join'; member: PresenceMember<I> }
  | { kind: 'leave'; member: PresenceMember<I> }
  | { kind: 'count'; count: number };

/** Who is in a channel, kept current by `$presence` events (`client.watchPresence`). */
export class PresenceWatcher<I = any> implements Mirror {
  readonly client: HeraldClient;
  /** `$presence.CHANNEL`. */
  readonly channel: string;
  /** The channel watched. */
  readonly target: string;
  readonly rev: number;
  /** How often the member list was read (the first read included). */
  readonly resyncCount: number;
  readonly members: Array<PresenceMember<I>>;
  readonly count: number;
  /** More members than `maxListed`: only `count` is kept. */
  readonly countOnly: boolean;
  readonly state: PresenceState<I>;
  observe(observer: (state: PresenceState<I>, change: PresenceChange<I>) => void, options?: { alertNow?: boolean }): () => void;
  close(): Promise<void>;
}

export class HeraldClient {
  readonly urls: string[];
  /** The URL of the current connection, or of the attempt under way (null before the first). */
  readonly url: string | null;
  readonly state: ClientState;
  readonly serverInfo: any;
  readonly clientId: string | null;
  readonly epoch: string | null;
  /** The app instance sent in `hello`'s `info` (option `instance`, else a random id). */
  readonly instance: string;
  readonly isConnected: boolean;
  readonly links: Map<string, string>;
  readonly declaredChannels: string[];

  on(name: 'state', listener: (state: ClientState, detail?: any) => void): () => void;
  on(name: 'error', listener: (error: HeraldError) => void): () => void;
  on(name: 'restored', listener: (summary: RestoreSummary) => void): () => void;
  close(): Promise<void>;

  /** With `offlinePublishing`: the publishes kept until answered. */
  readonly keptPublishes: { count: number; bytes: number };
  publish(channel: string, data?: unknown, options?: PublishOptions & { receipt?: false }): Promise<undefined>;
  publish(channel: string, data: unknown, options: PublishOptions & { receipt: true }): Promise<Receipt>;
  request<R = any>(channel: string, data?: unknown, options?: RequestOptions & { detail?: false }): Promise<R>;
  request<R = any>(channel: string, data: unknown, options: RequestOptions & { detail: true }): Promise<{ from: string; data: R }>;
  reply(token: string, data?: unknown): void;
  respond<T = any>(pattern: string, handler: (data: T, event: HeraldEvent<T>) => unknown, options?: SubscribeOptions): Promise<Subscription>;

  subscribe<T = any>(pattern: string, handler: (event: HeraldEvent<T>) => unknown, options?: SubscribeOptions): Promise<Subscription>;
  subscribe(pattern: string, options?: SubscribeOptions): Promise<Subscription>;
  /** The handler returns (or resolves to) a SignalVerdict: `'stop'` or true ends the route, anything else passes. */
  handle<T = any>(pattern: string, handler: (offer: SignalOffer<T>) => unknown, options?: SubscribeOptions): Promise<Subscription>;
  signal(channel: string, data?: unknown, options?: SignalOptions): Promise<SignalResult>;
  link(channel: string, parent: string, options?: WithSignal): Promise<void>;
  unlink(channel: string, options?: WithSignal): Promise<void>;

  set(channel: string, value: unknown, options?: { ifRev?: number } & WithSignal): Promise<{ rev: number }>;
  get<T = any>(channel: string, options?: WithSignal): Promise<{ rev: number; value: T | null }>;
  del(channel: string, options?: { ifRev?: number } & WithSignal): Promise<{ rev: number }>;
  touch(channel: string, options?: WithSignal): Promise<{ rev: number }>;
  append(channel: string, value: unknown, options?: { ifRev?: number } & WithSignal): Promise<{ rev: number; index: number }>;
  assign(channel: string, index: number, value: unknown, options?: { ifRev?: number } & WithSignal): Promise<{ rev: number }>;
  splice(channel: string, index: number, remove: number, insert?: unknown[], options?: { ifRev?: number } & WithSignal): Promise<{ rev: number }>;
  remoteValue<T = any>(channel: string, options?: WithSignal): Promise<RemoteValue<T>>;
  remoteList<T = any>(channel: string, options?: WithSignal): Promise<RemoteList<T>>;

  lock(channel: string, options?: { subscriptions?: string[] } & WithSignal): Promise<{ subs: string[]; truncated: boolean }>;
  lockSubscription(name: string, options?: WithSignal): Promise<{ subs: string[] }>;
  unlock(channel: string, options?: { subscriptions?: string[] } & WithSignal): Promise<{ released: number }>;
  unlockSubscription(name: string, options?: WithSignal): Promise<{ released: number }>;
  locks(channel: string, options?: WithSignal): Promise<{ locked: string[]; unlocked: string[] }>;

  declare(channel: string, options?: WithSignal): Promise<void>;
  remove(channel: string, options?: WithSignal): Promise<{ count: number }>;
  removeAll(options?: WithSignal): Promise<{ count: number }>;

  /** Every page of `channel`'s members; with `after`, that one page (and `next`); with `countOnly`, `{count}`. */
  presence<I = any>(channel: string, options?: { limit?: number; after?: string; countOnly?: boolean } & WithSignal):
    Promise<{ count: number; members?: Array<PresenceMember<I>>; next?: string }>;
  /** Keeps `{count, members}` of `channel` current; resolves once the member list is read. */
  watchPresence<I = any>(channel: string, onChange?: ((state: PresenceState<I>, change: PresenceChange<I>) => void) | null,
                         options?: { pageSize?: number; maxListed?: number } & WithSignal): Promise<PresenceWatcher<I>>;
  ping(options?: WithSignal): Promise<{ serverTime: number; roundTripMs: number }>;
  call(op: string, fields?: Record<string, unknown>, options?: { timeoutMs?: number } & WithSignal): Promise<any>;
}

export function connect(url: string | string[], options?: ConnectOptions): Promise<HeraldClient>;
export function isPattern(channel: string): boolean;
export function matches(pattern: string, channel: string): boolean;
