// The JavaScript client's own test suite, and WebSocket conformance cases written with the
// browser's raw WebSocket, run in a real browser against a real heraldd by
// scripts/browser-test. Each case is reported to the harness (POST /report) and kept in
// window.__heraldResults; window.__heraldDone turns true at the end.
//
// The harness controls the daemon for the reconnect cases: POST /control/kill (kill -9) and
// POST /control/start (the same ports and data folder again).

const params = new URLSearchParams(location.search);
const WS = params.get('ws');
const HTTP = WS.replace(/^ws/, 'http');
const OTHER = params.get('other');
const CLOSED_PORT = params.get('closed');
const AUTH_WS = params.get('auth');
const ONLY = params.get('only');

const herald = await import(HTTP + '/herald.mjs');
const { connect, HeraldError } = herald;

const cases = [];
const test = (name, fn, timeoutMs = 15000) => cases.push({ name, fn, timeoutMs });

// MARK: helpers

let prefixNumber = 0;
/** A channel prefix no other case uses. */
const fresh = () => `t${Date.now() % 100000}x${++prefixNumber}`;

const opened = [];
/** A client with a quick reconnect, closed after the case. */
async function client(options = {}) {
  const c = await connect(WS, { reconnect: { initialDelayMs: 50, maxDelayMs: 400 }, ...options });
  const errors = [];
  c.on('error', (error) => errors.push(error));
  c.errors = errors;
  opened.push(c);
  return c;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(predicate, what, ms = 5000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

function eq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

async function rejects(promise, code, what) {
  try {
    await promise;
  } catch (error) {
    assert(error instanceof HeraldError, `${what}: not a HeraldError: ${error}`);
    eq(error.code, code, `${what}: code`);
    return error;
  }
  throw new Error(`${what}: resolved, expected ${code}`);
}

/** A handler that keeps what it gets. */
function collector() {
  const events = [];
  const handler = (event) => { events.push(event); };
  handler.events = events;
  handler.count = (n, ms = 5000) => waitFor(() => events.length >= n, `${n} events (have ${events.length})`, ms);
  return handler;
}

async function control(action) {
  const response = await fetch('/control/' + action, { method: 'POST' });
  if (!response.ok) throw new Error(`control ${action}: ${response.status} ${await response.text()}`);
}

/** A raw WebSocket that keeps every line and the close event. */
function raw(path = '/') {
  const socket = new WebSocket(WS + path);
  const lines = [];
  const messages = [];
  const state = { socket, lines, messages, closeEvent: null };
  state.open = new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error('websocket error'));
  });
  state.closed = new Promise((resolve) => {
    socket.onclose = (event) => { state.closeEvent = event; resolve(event); };
  });
  socket.onmessage = (message) => {
    messages.push(message.data);
    for (const line of message.data.split('\n')) if (line) lines.push(JSON.parse(line));
  };
  state.line = (predicate, what, ms = 5000) => waitFor(() => lines.some(predicate), what, ms).then(() => lines.find(predicate));
  return state;
}

// MARK: the module and connecting

test('module: /herald.mjs is served as text/javascript, byte for byte the client source', async () => {
  const served = await fetch(HTTP + '/herald.mjs');
  eq(served.status, 200, 'status');
  assert(served.headers.get('content-type').startsWith('text/javascript'), 'content-type ' + served.headers.get('content-type'));
  const source = await fetch('/source/herald.mjs');
  eq(await served.text() === await source.text(), true, 'same text as clients/js/herald.mjs');
});

test('connect: info, client id, epoch, state', async () => {
  const c = await client({ name: 'browser' });
  eq(c.state, 'connected', 'state');
  assert(/^c\d+$/.test(c.clientId), 'client id ' + c.clientId);
  eq(c.serverInfo.server, 'heraldd', 'server');
  assert(typeof c.epoch === 'string' && c.epoch.length > 0, 'epoch');
  const { roundTripMs } = await c.ping();
  assert(roundTripMs >= 0, 'ping');
});

test('connect: a port nobody listens on rejects with connection_failed', async () => {
  await rejects(connect(`ws://127.0.0.1:${CLOSED_PORT}`, { reconnect: false }), 'connection_failed', 'connect');
});

test('connect: a URL list whose first node is down connects to the next; all down rejects once each was tried', async () => {
  const dead = `ws://127.0.0.1:${CLOSED_PORT}`;
  const c = await connect([dead, WS], { reconnect: false });
  opened.push(c);
  eq(c.state, 'connected', 'state');
  eq(c.url, WS, 'the URL it is on');
  eq(c.urls, [dead, WS], 'the list');
  const failed = await rejects(connect([dead, dead], { reconnect: false }), 'connection_failed', 'every URL down');
  assert(failed.message.includes(dead), 'message names the URLs: ' + failed.message);
});

test('connect: an AbortSignal cancels connecting', async () => {
  const controller = new AbortController();
  controller.abort();
  await rejects(connect(WS, { signal: controller.signal }), 'cancelled', 'aborted connect');
});

test('connect: a token in hello authenticates; a wrong or missing one is auth_rejected', async () => {
  assert(AUTH_WS, 'the harness passes a daemon with auth on');
  const c = await connect(AUTH_WS, { token: 'web-token', name: 'web' });
  opened.push(c);
  eq(c.serverInfo.auth, true, 'auth on');
  eq((await c.set('auth.v', 1)).rev, 1, 'served after hello');
  const wrong = await rejects(connect(AUTH_WS, { token: 'guess', reconnect: false }), 'auth_rejected', 'wrong token');
  eq(wrong.cause?.code, 'forbidden', 'the daemon said forbidden');
  const none = await rejects(connect(AUTH_WS, { reconnect: false }), 'auth_rejected', 'no token');
  eq(none.cause?.code, 'auth_required', 'the daemon said auth_required');
});

// MARK: publish and subscribe

test('pub/sub: an exact subscription gets channel, data, seq and from', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  const got = collector();
  const sub = await a.subscribe(`${p}.news`, got);
  await b.publish(`${p}.news`, { text: 'hi', n: [1, 2] });
  await b.publish(`${p}.news`, 'second');
  await got.count(2);
  eq(got.events[0].channel, `${p}.news`, 'channel');
  eq(got.events[0].data, { text: 'hi', n: [1, 2] }, 'data');
  eq(got.events[0].seq, 1, 'seq');
  eq(got.events[1].seq, 2, 'second seq');
  eq(got.events[0].from, b.clientId, 'from');
  eq(got.events[0].subscription, sub.name, 'subscription');
  eq(await sub.unsubscribe(), 1, 'unsub count');
  await b.publish(`${p}.news`, 'after');
  await b.ping();
  await a.ping();
  eq(got.events.length, 2, 'nothing after unsubscribe');
  eq(sub.endReason.reason, 'cancelled', 'end reason');
});

test('pub/sub: receipts say seq and receivers', async () => {
  const p = fresh();
  const a = await client();
  await a.subscribe(`${p}.x`, () => {});
  await a.subscribe(`${p}.*`, () => {});
  const receipt = await a.publish(`${p}.x`, 1, { receipt: true });
  eq(receipt, { seq: 1, receivers: 2 }, 'receipt');
  const none = await a.publish(`${fresh()}.nobody`, 1, { receipt: true });
  eq(none.receivers, 0, 'receivers without subscribers');
});

test('pub/sub: wildcards * and > match what they should and nothing else', async () => {
  const p = fresh();
  const a = await client();
  const one = collector();
  const rest = collector();
  await a.subscribe(`${p}.*.moved`, one);
  await a.subscribe(`${p}.>`, rest);
  for (const ch of [`${p}.car.moved`, `${p}.car.parked`, `${p}.car.42.moved`, `${p}.bus.moved`]) await a.publish(ch, ch);
  await a.ping();
  await rest.count(4);
  eq(one.events.map((e) => e.channel), [`${p}.car.moved`, `${p}.bus.moved`], '* matches one segment');
  eq(rest.events.length, 4, '> matches every deeper channel');
  eq(herald.matches(`${p}.*.moved`, `${p}.car.moved`), true, 'matches()');
  eq(herald.matches(`${p}.>`, p), false, '> needs a segment');
});

test('pub/sub: once and max end the subscription with last:true, reason finished', async () => {
  const p = fresh();
  const a = await client();
  const once = collector();
  const three = collector();
  const onceSub = await a.subscribe(`${p}.e`, once, { once: true });
  const maxSub = await a.subscribe(`${p}.e`, three, { max: 3 });
  for (let i = 0; i < 5; i++) await a.publish(`${p}.e`, i);
  await three.count(3);
  await a.ping();
  eq(once.events.map((e) => e.data), [0], 'once');
  eq(three.events.map((e) => e.data), [0, 1, 2], 'max 3');
  eq(three.events[2].last, true, 'last:true on the final one');
  eq((await onceSub.ended).reason, 'finished', 'once ended');
  eq((await maxSub.ended).reason, 'finished', 'max ended');
  const subs = await a.call('subs');
  eq(subs.subs.length, 0, 'the daemon removed both');
});

test('pub/sub: since replays history with replay:true and says recovered', async () => {
  const p = fresh();
  const a = await client();
  for (let i = 1; i <= 5; i++) await a.publish(`${p}.log`, i, { receipt: true });
  const got = collector();
  const sub = await a.subscribe(`${p}.log`, got, { since: 2 });
  await got.count(3);
  eq(got.events.map((e) => [e.seq, e.data, e.replay]), [[3, 3, true], [4, 4, true], [5, 5, true]], 'replayed');
  eq(sub.recovered, true, 'recovered');
  await a.publish(`${p}.log`, 6);
  await got.count(4);
  eq(got.events[3].replay, undefined, 'live after the replay');
  await rejects(a.subscribe(`${p}.*`, () => {}, { since: 1 }), 'bad_field', 'since with a pattern');
});

test('pub/sub: current sends the state first as kind current', async () => {
  const p = fresh();
  const a = await client();
  await a.set(`${p}.theme`, { mode: 'dark' });
  await a.set(`${p}.size`, 12);
  const got = collector();
  await a.subscribe(`${p}.*`, got, { current: true });
  await got.count(2);
  eq(got.events.map((e) => [e.channel, e.kind, e.value, e.rev, e.seq]),
    [[`${p}.size`, 'current', 12, 1, undefined], [`${p}.theme`, 'current', { mode: 'dark' }, 1, undefined]], 'current events');
});

test('pub/sub: group spreads events over members, args are echoed', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  const ga = collector();
  const gb = collector();
  await a.subscribe(`${p}.work`, ga, { group: 'workers', args: { who: 'a' } });
  await b.subscribe(`${p}.work`, gb, { group: 'workers', args: { who: 'b' } });
  for (let i = 0; i < 6; i++) await a.publish(`${p}.work`, i);
  await waitFor(() => ga.events.length + gb.events.length === 6, 'six deliveries');
  eq([ga.events.length, gb.events.length], [3, 3], 'round robin');
  eq(ga.events[0].args, { who: 'a' }, 'args');
});

test('pub/sub: for await reads a subscription; break unsubscribes', async () => {
  const p = fresh();
  const a = await client();
  const sub = await a.subscribe(`${p}.feed`);
  for (let i = 0; i < 3; i++) await a.publish(`${p}.feed`, i);
  const seen = [];
  for await (const event of sub) {
    seen.push(event.data);
    if (seen.length === 3) break;
  }
  eq(seen, [0, 1, 2], 'iterated');
  eq(sub.endReason?.reason, 'cancelled', 'ended by break');
  await waitFor(async () => (await a.call('subs')).subs.length === 0, 'the daemon dropped it');
});

test('pub/sub: for await ends when the subscription ends (max)', async () => {
  const p = fresh();
  const a = await client();
  const sub = await a.subscribe(`${p}.feed`, { max: 2 });
  await a.publish(`${p}.feed`, 'a');
  await a.publish(`${p}.feed`, 'b');
  const seen = [];
  for await (const event of sub) seen.push(event.data);
  eq(seen, ['a', 'b'], 'both, then done');
});

test('pub/sub: echo false keeps a connection from hearing itself', async () => {
  const p = fresh();
  const a = await client({ echo: false });
  const got = collector();
  await a.subscribe(`${p}.x`, got);
  eq((await a.publish(`${p}.x`, 1, { receipt: true })).receivers, 0, 'not delivered to itself');
});

// MARK: requests

test('request/reply: respond answers, the requester gets the data (and from)', async () => {
  const p = fresh();
  const server = await client();
  const asker = await client();
  await server.respond(`${p}.add`, ({ a, b }) => a + b);
  eq(await asker.request(`${p}.add`, { a: 2, b: 3 }), 5, 'sum');
  const detail = await asker.request(`${p}.add`, { a: 1, b: 1 }, { detail: true });
  eq(detail, { from: server.clientId, data: 2 }, 'detail');
  const slow = collector();
  await server.subscribe(`${p}.manual`, (event) => { slow(event); setTimeout(() => event.respond('late-ok'), 50); });
  eq(await asker.request(`${p}.manual`, null, { timeoutMs: 2000 }), 'late-ok', 'event.respond');
  assert(typeof slow.events[0].reply === 'string', 'reply token');
});

test('request/reply: no_responders at once, timeout when nobody answers', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  await rejects(a.request(`${p}.nobody`, 1), 'no_responders', 'no responders');
  await b.subscribe(`${p}.silent`, () => {});
  const started = Date.now();
  await rejects(a.request(`${p}.silent`, 1, { timeoutMs: 200 }), 'timeout', 'timeout');
  assert(Date.now() - started < 2000, 'timed out by the daemon');
});

test('request/reply: AbortSignal withdraws the request on the daemon too', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  const got = collector();
  await b.subscribe(`${p}.slow`, got);
  const controller = new AbortController();
  const pending = a.request(`${p}.slow`, 1, { timeoutMs: 5000, signal: controller.signal });
  await got.count(1);
  controller.abort();
  await rejects(pending, 'cancelled', 'aborted request');
  await a.ping();
  const late = await b.call('reply', { to: got.events[0].reply, data: 'too late' });
  eq(late.delivered, false, 'the daemon forgot the request');
  const stats = await a.call('stats');
  eq(stats.requests, 0, 'nothing pending');
});

// MARK: retained values and mirrors

test('set/get: rev, ifRev conflict carries the code and the rev', async () => {
  const p = fresh();
  const a = await client();
  eq(await a.get(`${p}.v`), { rev: 0, value: null }, 'never set');
  eq(await a.set(`${p}.v`, { x: 1 }), { rev: 1 }, 'first set');
  eq(await a.set(`${p}.v`, { x: 2 }, { ifRev: 1 }), { rev: 2 }, 'ifRev ok');
  const conflict = await rejects(a.set(`${p}.v`, { x: 3 }, { ifRev: 1 }), 'conflict', 'stale ifRev');
  eq(conflict.rev, 2, 'rev in the error');
  eq(conflict.op, 'set', 'op in the error');
  eq(await a.get(`${p}.v`), { rev: 2, value: { x: 2 } }, 'get');
  eq(await a.del(`${p}.v`), { rev: 3 }, 'del');
  eq(await a.get(`${p}.v`), { rev: 3, value: null }, 'deleted');
});

test('mirror: RemoteValue follows set, del and touch, in rev order', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  await b.set(`${p}.theme`, 'light');
  const theme = await a.remoteValue(`${p}.theme`);
  eq([theme.value, theme.rev], ['light', 1], 'initial state');
  const seen = [];
  theme.observe((value, rev, kind) => seen.push([value, rev, kind]));
  await b.set(`${p}.theme`, 'dark');
  await waitFor(() => theme.rev === 2, 'rev 2');
  await b.touch(`${p}.theme`);
  await b.del(`${p}.theme`);
  await waitFor(() => theme.rev === 3, 'rev 3');
  eq(seen, [['light', 1, 'initial'], ['dark', 2, 'set'], ['dark', 2, 'touch'], [null, 3, 'del']], 'observed');
  eq(await theme.set('blue', { ifRev: 3 }), 4, 'set through the mirror');
  eq(theme.value, 'blue', 'held at once');
  await rejects(theme.set('red', { ifRev: 3 }), 'conflict', 'stale ifRev through the mirror');
  await theme.close();
  await b.set(`${p}.theme`, 'after close');
  await b.ping();
  await a.ping();
  eq(theme.value, 'blue', 'closed mirrors stop');
});

test('mirror: RemoteList applies index and splice with change kinds', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  await b.set(`${p}.todo`, ['milk']);
  const list = await a.remoteList(`${p}.todo`);
  eq(list.items, ['milk'], 'initial');
  const changes = [];
  list.observe((items, change, rev) => changes.push([[...items], change, rev]), { alertNow: false });
  const second = [];
  list.observeIndex(1, (element, rev) => second.push([element, rev]), { alertNow: false });
  await b.append(`${p}.todo`, 'eggs');
  await b.assign(`${p}.todo`, 0, 'oat milk');
  await b.splice(`${p}.todo`, 0, 1, ['tea', 'coffee']);
  await waitFor(() => list.rev === 4, 'rev 4');
  eq(changes, [
    [['milk', 'eggs'], { kind: 'index', index: 1 }, 2],
    [['oat milk', 'eggs'], { kind: 'index', index: 0 }, 3],
    [['tea', 'coffee', 'eggs'], { kind: 'splice', index: 0, remove: 1, inserted: 2 }, 4],
  ], 'changes');
  eq(second, [['eggs', 2], ['coffee', 4]], 'index observer: its append, then the shifting splice');
  await b.touch(`${p}.todo`);
  await waitFor(() => changes.length === 4, 'touch');
  eq(changes[3][1], { kind: 'touched' }, 'touched');
  eq(await list.append('bread'), 5, 'write through the mirror');
  await waitFor(() => list.length === 4, 'own append seen');
  eq(list.items, ['tea', 'coffee', 'eggs', 'bread'], 'list');
});

test('mirror: a RemoteList that misses a change (locked) reads the list again', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  await b.set(`${p}.l`, [1]);
  const list = await a.remoteList(`${p}.l`);
  await a.lock(`${p}.l`);
  await b.append(`${p}.l`, 2);               // missed: the lock suppresses it
  await a.unlock(`${p}.l`);
  await b.append(`${p}.l`, 3);               // rev 3 after rev 1: a gap
  await waitFor(() => list.rev === 3, 'resynced to rev 3');
  eq(list.items, [1, 2, 3], 'whole list');
  eq(list.resyncCount, 1, 'one read');
});

// MARK: signals

test('signals: handlers pass and stop, callbacks come before the result', async () => {
  const p = fresh();
  const sender = await client();
  const h = await client();
  const offers = [];
  await h.handle(`${p}.settings.profile`, (offer) => { offers.push(['profile', offer.level, offer.origin, offer.data]); return 'pass'; });
  const screen = await h.handle(`${p}.settings`, async (offer) => {
    offers.push(['screen', offer.level, offer.origin, offer.data, offer.tag]);
    offer.callback({ step: 1 });
    await sleep(20);
    offer.callback({ step: 2 });
    return 'stop';
  });
  await h.handle(p, () => { offers.push(['top']); return 'stop'; });
  const callbacks = [];
  const result = await sender.signal(`${p}.settings.profile`, 'save', { tag: 7, onCallback: (cb) => callbacks.push(cb) });
  eq(offers, [['profile', `${p}.settings.profile`, `${p}.settings.profile`, 'save'],
    ['screen', `${p}.settings`, `${p}.settings.profile`, 'save', 7]], 'offers in route order');
  eq(callbacks, [{ from: h.clientId, data: { step: 1 } }, { from: h.clientId, data: { step: 2 } }], 'callbacks');
  eq(result.handledBy, screen.globalId, 'handled by');
  eq(result.at, `${p}.settings`, 'at');
  eq(result.hops, 2, 'hops');
  eq(result.handled, true, 'handled');
});

test('signals: a slow handler times out (listed), nobody handles: handledBy null', async () => {
  const p = fresh();
  const sender = await client();
  const h = await client();
  const slow = await h.handle(`${p}.a`, async () => { await sleep(600); return 'stop'; });
  const result = await sender.signal(`${p}.a`, null, { timeoutMs: 150 });
  eq(result.timeouts, [slow.globalId], 'timeouts');
  eq(result.handledBy, null, 'not handled');
  const nobody = await sender.signal(`${fresh()}.x`);
  eq([nobody.handledBy, nobody.hops], [null, 0], 'no handler');
});

test('signals: link routes a signal to another level', async () => {
  const p = fresh();
  const a = await client();
  const got = [];
  await a.handle(`${p}.below`, (offer) => { got.push(offer.level); return 'stop'; });
  await a.link(`${p}.pushed`, `${p}.below`);
  const result = await a.signal(`${p}.pushed`);
  eq(got, [`${p}.below`], 'offered at the link target');
  eq(result.at, `${p}.below`, 'handled there');
  eq(a.links.get(`${p}.pushed`), `${p}.below`, 'remembered');
  await a.unlink(`${p}.pushed`);
  await rejects(a.unlink(`${p}.pushed`), 'not_found', 'second unlink');
});

test('signals: AbortSignal withdraws a signal under way', async () => {
  const p = fresh();
  const sender = await client();
  const h = await client();
  let offered = 0;
  await h.handle(`${p}.x`, async () => { offered++; await sleep(400); return 'pass'; });
  const controller = new AbortController();
  const pending = sender.signal(`${p}.x`, null, { timeoutMs: 2000, signal: controller.signal });
  await waitFor(() => offered === 1, 'offered');
  controller.abort();
  await rejects(pending, 'cancelled', 'aborted signal');
  await waitFor(async () => (await sender.call('stats')).signals === 0, 'the daemon ended it');
});

// MARK: locks

test('locks: a channel lock silences everyone; locks() tells; unlock restores', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  const got = collector();
  const sub = await b.subscribe(`${p}.*`, got);
  const taken = await a.lock(`${p}.x`);
  eq(taken.subs, [sub.globalId], 'silenced');
  eq((await a.publish(`${p}.x`, 1, { receipt: true })).receivers, 0, 'suppressed');
  await a.publish(`${p}.y`, 2);
  await got.count(1);
  eq(got.events.map((e) => e.channel), [`${p}.y`], 'other channels still arrive');
  eq(await a.locks(`${p}.x`), { locked: [sub.globalId], unlocked: [] }, 'locks()');
  eq(await a.unlock(`${p}.x`), { released: 1 }, 'released');
  eq((await a.publish(`${p}.x`, 3, { receipt: true })).receivers, 1, 'delivered again');
});

test('locks: lockSubscription mutes one own subscription by name', async () => {
  const p = fresh();
  const a = await client();
  const got = collector();
  const sub = await a.subscribe(`${p}.x`, got, { name: 'feed' });
  eq((await a.lockSubscription('feed')).subs, [sub.globalId], 'locked');
  eq((await a.publish(`${p}.x`, 1, { receipt: true })).receivers, 0, 'muted');
  await rejects(a.lockSubscription('nope'), 'not_found', 'unknown name');
  eq((await a.unlockSubscription('feed')).released, 1, 'unlocked');
  eq((await a.publish(`${p}.x`, 2, { receipt: true })).receivers, 1, 'heard again');
});

// MARK: instance channels

test('declare/remove: exact subscribers are removed, wildcards stay; a second owner conflicts', async () => {
  const p = fresh();
  const owner = await client();
  const other = await client();
  await owner.declare(`${p}.car.42`);
  eq(owner.declaredChannels, [`${p}.car.42`], 'declared');
  await rejects(other.declare(`${p}.car.42`), 'conflict', 'second owner');
  const exact = await other.subscribe(`${p}.car.42`, () => {});
  const wild = await other.subscribe(`${p}.car.*`, () => {});
  eq(await owner.remove(`${p}.car.42`), { count: 1 }, 'removed');
  eq(await exact.ended, { reason: 'removed', channel: `${p}.car.42` }, 'exact subscription ended');
  eq(wild.endReason, null, 'wildcard stays');
  await rejects(owner.remove(`${p}.car.42`), 'not_found', 'remove again');
});

test('declare: the owner closing removes its channel', async () => {
  const p = fresh();
  const owner = await client();
  const other = await client();
  await owner.declare(`${p}.doc`);
  const sub = await other.subscribe(`${p}.doc`, () => {});
  await owner.close();
  eq((await sub.ended).reason, 'removed', 'ended with the owner');
});

// MARK: errors

test('errors: refusals are HeraldErrors with the wire code', async () => {
  const p = fresh();
  const a = await client();
  const bad = await rejects(a.subscribe('a..b', () => {}), 'bad_channel', 'bad pattern');
  eq(bad.op, 'sub', 'op');
  await rejects(a.publish('$sys.x', 1, { receipt: true }), 'forbidden', '$sys is the daemon\'s');
  await rejects(a.publish(`${p}.*`, 1, { receipt: true }), 'bad_channel', 'publish on a pattern');
  await rejects(a.append(`${p}.v`, 1).then(() => a.set(`${p}.w`, 1)).then(() => a.append(`${p}.w`, 2)), 'type', 'list op on a value');
  await rejects(a.assign(`${p}.v`, 9, 1), 'range', 'index out of range');
  await rejects(a.touch(`${p}.never`), 'not_found', 'touch without state');
  await rejects(a.call('frobnicate'), 'unknown_op', 'unknown op');
  await a.publish('$sys.y', 1);               // fire-and-forget: the refusal goes to 'error'
  await waitFor(() => a.errors.some((e) => e.code === 'forbidden' && e.op === 'pub'), 'error event');
});

test('presence: lists every member once, with the info and instance its hello gave, page by page', async () => {
  const p = fresh();
  const ada = await client({ info: { name: 'Ada' }, instance: 'tab-ada' });
  const bob = await client({ info: { name: 'Bob' } });
  const plain = await client();
  const watcher = await client();
  for (const c of [ada, bob, plain]) await c.subscribe(`${p}.room`, () => {});
  await ada.subscribe(`${p}.room`, () => {});                 // a second subscription: still one member
  await ada.subscribe(`${p}.*`, () => {});                    // a pattern is not presence
  const all = await watcher.presence(`${p}.room`, { limit: 1 }); // pages of one, followed to the end
  eq(all.count, 3, 'count');
  eq(all.members.map((m) => m.client), [ada.clientId, bob.clientId, plain.clientId], 'members in client-id order');
  eq(all.members.map((m) => m.info), [{ instance: 'tab-ada', name: 'Ada' }, { instance: bob.instance, name: 'Bob' },
    { instance: plain.instance }], 'info with the instance');
  assert(bob.instance.length >= 16 && bob.instance !== plain.instance, 'a random instance per client');
  const first = await watcher.presence(`${p}.room`, { limit: 2, after: 'c0' });
  eq([first.members.length, typeof first.next], [2, 'string'], 'one page with after');
  eq(await watcher.presence(`${p}.room`, { countOnly: true }), { count: 3 }, 'count only');
  eq((await watcher.presence(`${p}.nobody`)).members, [], 'an empty channel');
});

test('presence: a watcher sees joins and leaves, keeps {count, members}, and reads them again after a reconnect', async () => {
  const p = fresh();
  const watcher = await client();
  const changes = [];
  const room = await watcher.watchPresence(`${p}.room`, (state, change) => changes.push([change.kind, state.count]));
  eq([room.count, room.members, changes], [0, [], [['resync', 0]]], 'the first read');
  const ada = await client({ info: { name: 'Ada' } });
  const sub = await ada.subscribe(`${p}.room`, () => {});
  await waitFor(() => room.count === 1, 'join');
  eq(room.members, [{ client: ada.clientId, info: { instance: ada.instance, name: 'Ada' } }], 'the member');
  await sub.unsubscribe();
  await waitFor(() => room.count === 0, 'leave');
  eq(changes.slice(1), [['join', 1], ['leave', 0]], 'changes');

  // While the daemon is down and back, Ada joins on the new daemon: the watcher reads the list again.
  await control('kill');
  await waitFor(() => watcher.state !== 'connected' && ada.state !== 'connected', 'the loss', 3000);
  await control('start');
  await waitFor(() => watcher.state === 'connected' && ada.state === 'connected', 'both reconnected', 10000);
  await ada.subscribe(`${p}.room`, () => {});
  await waitFor(() => room.count === 1 && room.members[0]?.client === ada.clientId, 'the member after the restart', 10000);
  assert(room.resyncCount >= 2, `read again after the reconnect (${room.resyncCount})`);
  eq(watcher.errors.filter((e) => e.code === 'history_lost'), [], 'no lost history reported for the watcher');
  await room.close();
  await rejects(watcher.watchPresence(`${p}.*`), 'bad_channel', 'a pattern');
}, 30000);

test('presence: past maxListed only the count is kept, and the list returns below it', async () => {
  const p = fresh();
  const watcher = await client();
  const a = await client();
  const b = await client();
  await a.subscribe(`${p}.room`, () => {});
  const bSub = await b.subscribe(`${p}.room`, () => {});
  const room = await watcher.watchPresence(`${p}.room`, null, { maxListed: 1 });
  eq([room.countOnly, room.count, room.members], [true, 2, []], 'count only');
  await bSub.unsubscribe();
  await waitFor(() => !room.countOnly && room.members.length === 1, 'listed again');
  eq([room.count, room.members[0].client], [1, a.clientId], 'the member left');
});

test('errors: calls after close reject with closed; a closed client ends its subscriptions', async () => {
  const a = await client();
  const sub = await a.subscribe(`${fresh()}.x`, () => {});
  await a.close();
  eq(a.state, 'closed', 'state');
  eq((await sub.ended).reason, 'closed', 'subscription end');
  await rejects(a.get('x'), 'closed', 'get after close');
  await rejects(a.subscribe('x', () => {}), 'closed', 'subscribe after close');
});

// MARK: AbortSignal

test('AbortSignal: aborting a subscription unsubscribes; an aborted signal rejects at once', async () => {
  const p = fresh();
  const a = await client();
  const controller = new AbortController();
  const got = collector();
  const sub = await a.subscribe(`${p}.x`, got, { signal: controller.signal });
  controller.abort();
  eq((await sub.ended).reason, 'cancelled', 'ended');
  await waitFor(async () => (await a.call('subs')).subs.length === 0, 'unsubscribed on the daemon');
  await rejects(a.get(`${p}.x`, { signal: controller.signal }), 'cancelled', 'already aborted');
  await rejects(a.remoteValue(`${p}.x`, { signal: controller.signal }), 'cancelled', 'mirror with an aborted signal');
});

test('pub/sub: a subscription with the name of another replaces it', async () => {
  const p = fresh();
  const a = await client();
  const first = collector();
  const second = collector();
  const old = await a.subscribe(`${p}.a`, first, { name: 'feed' });
  await a.subscribe(`${p}.b`, second, { name: 'feed' });
  eq(old.endReason, { reason: 'replaced' }, 'the first ended');
  await a.publish(`${p}.a`, 1);
  await a.publish(`${p}.b`, 2);
  await second.count(1);
  eq([first.events.length, second.events[0].data], [0, 2], 'only the new pattern');
});

test('request/reply: a responder that throws sends no reply and is reported', async () => {
  const p = fresh();
  const server = await client();
  const asker = await client();
  await server.respond(`${p}.fail`, () => { throw new Error('boom'); });
  await rejects(asker.request(`${p}.fail`, 1, { timeoutMs: 200 }), 'timeout', 'no reply');
  const reported = server.errors.find((e) => e.code === 'handler_failed');
  assert(reported && reported.message.includes('boom'), 'handler_failed reported');
});

test('signals: callbacks of two signals under way at once reach their own sender call', async () => {
  const p = fresh();
  const sender = await client();
  const h = await client();
  for (const name of ['a', 'b']) {
    await h.handle(`${p}.${name}`, async (offer) => {
      offer.callback(`${name}1`);
      await sleep(50);
      offer.callback(`${name}2`);
      return 'stop';
    });
  }
  const seen = { a: [], b: [] };
  const [ra, rb] = await Promise.all(['a', 'b'].map((name) =>
    sender.signal(`${p}.${name}`, null, { onCallback: (cb) => seen[name].push(cb.data) })));
  eq(seen, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, 'callbacks by signal');
  eq([ra.at, rb.at], [`${p}.a`, `${p}.b`], 'results');
});

test('connect: waitForConnectivity retries until the daemon is there', async () => {
  await control('kill');
  const states = [];
  const pending = connect(WS, { waitForConnectivity: true, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
  await sleep(400);
  await control('start');
  const c = await pending;
  opened.push(c);
  eq(c.state, 'connected', 'connected once it was up');
  void states;
}, 20000);

// MARK: heartbeat

test('heartbeat: an idle client answers the daemon\'s pings and stays connected', async () => {
  const a = await client();
  const interval = a.serverInfo.heartbeat_ms;
  assert(interval > 0 && interval <= 2000, 'the harness sets a short heartbeat_ms, got ' + interval);
  const states = [];
  a.on('state', (state) => states.push(state));
  await sleep(interval * 3.5);
  eq(states, [], 'no state change');
  eq(a.state, 'connected', 'still connected');
  await a.ping();
}, 20000);

// MARK: reconnect

test('reconnect: a dropped connection restores and catches up with since (recovered)', async () => {
  const p = fresh();
  const a = await client();
  const b = await client();
  const got = collector();
  const sub = await a.subscribe(`${p}.log`, got);
  await b.publish(`${p}.log`, 1, { receipt: true });
  await got.count(1);
  const restored = new Promise((resolve) => a.on('restored', resolve));
  const oldId = a.clientId;
  a._ws.close();                       // as a network drop would
  for (let i = 2; i <= 4; i++) await b.publish(`${p}.log`, i, { receipt: true });
  await restored;
  assert(a.clientId !== oldId, 'a new connection');
  await got.count(4);
  eq(got.events.map((e) => e.data), [1, 2, 3, 4], 'every event once, in order');
  eq(got.events.slice(1).every((e) => e.replay), true, 'the missed ones replayed');
  eq(sub.recovered, true, 'recovered');
  await b.publish(`${p}.log`, 5);
  await got.count(5);
  eq(a.errors.filter((e) => e.code === 'history_lost'), [], 'nothing lost');
});

test('reconnect: a killed and restarted daemon gets subscriptions, mirrors, locks, handlers and declared channels back', async () => {
  const p = fresh();
  const a = await client();
  const got = collector();
  await a.subscribe(`${p}.news`, got);
  await a.subscribe(`${p}.log`, () => {});
  await a.publish(`${p}.log`, 'before', { receipt: true });
  await a.set(`${p}.theme`, 'dark');
  const theme = await a.remoteValue(`${p}.theme`);
  const list = await a.remoteList(`${p}.list`);
  await list.append('one');
  await a.lock(`${p}.quiet`);
  const muted = await a.subscribe(`${p}.muted`, () => {}, { name: 'muted' });
  await a.lockSubscription('muted');
  await a.declare(`${p}.owned`);
  await a.handle(`${p}.ask`, (offer) => { offer.callback('here'); return 'stop'; });
  await a.link(`${p}.pushed`, `${p}.ask`);
  const limited = await a.subscribe(`${p}.limited`, collector(), { max: 3 });
  await a.publish(`${p}.limited`, 1, { receipt: true });
  const states = [];
  a.on('state', (state) => states.push(state));
  const restored = new Promise((resolve) => a.on('restored', resolve));
  const oldEpoch = a.epoch;

  await control('kill');
  await waitFor(() => a.state === 'reconnecting', 'reconnecting', 3000);
  await rejects(a.get(`${p}.theme`), 'not_connected', 'calls while down');
  await control('start');
  const summary = await restored;
  eq(a.state, 'connected', 'connected again');
  assert(a.epoch !== oldEpoch, 'a new daemon life');
  eq(summary.failed, 0, 'nothing failed: ' + JSON.stringify(summary));
  assert(states.includes('reconnecting') && states.includes('restoring'), 'states: ' + states.join(' '));

  const b = await client();
  await b.publish(`${p}.news`, 'after restart');
  await got.count(1);
  eq(got.events[0].data, 'after restart', 'subscription restored');
  eq(theme.value, 'dark', 'mirror holds the persisted value');
  await b.set(`${p}.theme`, 'light');
  await waitFor(() => theme.value === 'light', 'mirror follows again');
  eq(list.items, ['one'], 'list mirror');
  await b.append(`${p}.list`, 'two');
  await waitFor(() => list.length === 2, 'list follows again');
  eq((await b.locks(`${p}.quiet`)).locked.length, 0, 'nobody subscribes to quiet');
  const quiet = await b.subscribe(`${p}.quiet`, () => {});
  eq((await b.locks(`${p}.quiet`)).locked, [quiet.globalId], 'channel lock restored');
  eq((await b.locks(`${p}.muted`)).locked, [`${a.clientId}/muted`], 'name lock restored under the new client id');
  void muted;
  const channels = await b.call('channels', { ch: `${p}.owned` });
  eq(channels.channels.map((c) => [c.ch, c.owner]), [[`${p}.owned`, a.clientId]], 'declared channel owned again');
  const callbacks = [];
  const result = await b.signal(`${p}.ask`, null, { onCallback: (cb) => callbacks.push(cb.data) });
  eq([result.handled, callbacks], [true, ['here']], 'handler restored');
  eq((await b.signal(`${p}.pushed`)).at, `${p}.ask`, 'link restored');
  const subs = (await a.call('subs')).subs;
  eq(subs.find((s) => s.sub === limited.name)?.max, 2, 'remaining max restored');
  assert(a.errors.some((e) => e.code === 'history_lost' && e.channel === `${p}.log`), 'a new epoch: the log subscription says it lost history');
}, 30000);

test('offline publishing: publishes made while the daemon is down are kept, sent after the restart and delivered once', async () => {
  const p = fresh();
  const a = await client({ offlinePublishing: { maxCount: 4 } });
  await a.publish(`${p}.orders`, 0, { receipt: true });
  await control('kill');
  await waitFor(() => a.state === 'reconnecting', 'reconnecting', 3000);
  const receipts = [1, 2, 3].map((n) => a.publish(`${p}.orders`, n, { receipt: true }));
  await a.publish(`${p}.orders`, 4);
  eq(a.keptPublishes.count, 4, 'four kept');
  await rejects(a.publish(`${p}.orders`, 5), 'offline_queue_full', 'a fifth past maxCount');
  await control('start');
  const answered = await Promise.all(receipts);
  eq(answered.map((r) => r.duplicate ?? false), [false, false, false], 'each one a first');
  await waitFor(() => a.keptPublishes.count === 0, 'every kept publish answered');
  const reader = await client();
  const replay = collector();
  await reader.subscribe(`${p}.orders`, replay, { since: 0 });
  await replay.count(4);
  await sleep(300);
  eq(replay.events.map((e) => e.data), [1, 2, 3, 4], 'in order, once each (0 went with the killed daemon)');
  eq(a.errors.filter((e) => e.code === 'offline_queue_full' || e.op === 'pub'), [], 'no publish failed');
}, 30000);

test('reconnect: subscribing while the daemon is down is sent once it is back', async () => {
  const p = fresh();
  const a = await client();
  await control('kill');
  await waitFor(() => a.state === 'reconnecting', 'reconnecting', 3000);
  const got = collector();
  const pending = a.subscribe(`${p}.late`, got);
  await control('start');
  const sub = await pending;
  const b = await client();
  await b.publish(`${p}.late`, 'x');
  await got.count(1);
  eq(sub.endReason, null, 'live');
}, 30000);

// MARK: WebSocket conformance, with the browser's own WebSocket

test('conformance: the first message is the info line, ending with a newline', async () => {
  const socket = raw();
  await socket.line((l) => l.info, 'info');
  assert(socket.messages[0].startsWith('{"info":') && socket.messages[0].endsWith('\n'), 'first message ' + socket.messages[0]);
  socket.socket.close();
});

test('conformance: one message carries several lines, the last may lack its newline', async () => {
  const socket = raw();
  await socket.open;
  socket.socket.send('{"op":"ping","rid":1}\n{"op":"set","ch":"conf.v","value":7,"rid":2}\n{"op":"get","ch":"conf.v","rid":3}');
  const get = await socket.line((l) => l.rid === 3, 'third answer');
  eq(get.value, 7, 'answered in order');
  const order = socket.lines.filter((l) => l.rid !== undefined).map((l) => l.rid);
  eq(order, [1, 2, 3], 'order');
  socket.socket.close();
});

test('conformance: the upgrade is accepted on any path', async () => {
  const socket = raw('/some/path?x=1');
  await socket.line((l) => l.info, 'info');
  socket.socket.close();
});

test('conformance: a binary message closes with 1003', async () => {
  const socket = raw();
  await socket.open;
  socket.socket.send(new Uint8Array([123, 125, 10]));
  const event = await socket.closed;
  eq(event.code, 1003, 'close code');
});

test('conformance: a close frame is a half-close: what was read is done, then 1000 comes back', async () => {
  const p = fresh();
  const socket = raw();
  await socket.open;
  socket.socket.send(`{"op":"set","ch":"${p}.half","value":"kept","rid":1}`);
  socket.socket.close(1000);
  const event = await socket.closed;
  eq([event.code, event.wasClean], [1000, true], 'clean close');
  const a = await client();
  eq((await a.get(`${p}.half`)).value, 'kept', 'the line before the close was applied');
});

test('conformance: a bad line is answered bad_json and the connection lives', async () => {
  const socket = raw();
  await socket.open;
  socket.socket.send('{"op":"ping",}\n{"op":"ping","rid":"after"}\n');
  const error = await socket.line((l) => l.error, 'error');
  eq(error.error, 'bad_json', 'code');
  await socket.line((l) => l.rid === 'after', 'the next line');
  socket.socket.close();
});

test('conformance: a line over max_line is line_too_long and the connection lives', async () => {
  const socket = raw();
  const info = await socket.line((l) => l.info, 'info');
  const max = info.info.max_line;
  socket.socket.send(`{"op":"pub","ch":"x","data":"${'y'.repeat(max + 10)}"}\n{"op":"ping","rid":"after"}\n`);
  const error = await socket.line((l) => l.error, 'error');
  eq(error.error, 'line_too_long', 'code');
  await socket.line((l) => l.rid === 'after', 'the next line');
  socket.socket.close();
});

test('conformance: messages past 64 KiB both ways (the 64-bit length form), UTF-8 intact', async () => {
  const p = fresh();
  const a = await client();
  const got = collector();
  await a.subscribe(`${p}.big`, got);
  const text = 'é€😀'.repeat(20000) + 'z'.repeat(30000);   // ~210 KB in UTF-8
  const socket = raw();
  await socket.open;
  socket.socket.send(JSON.stringify({ op: 'pub', ch: `${p}.big`, data: text, rid: 1 }) + '\n');
  await socket.line((l) => l.rid === 1, 'receipt');
  await got.count(1);
  eq(got.events[0].data === text, true, 'the same text came back');
  socket.socket.close();
});

test('conformance: a silent connection gets the daemon\'s ping', async () => {
  const socket = raw();
  const info = await socket.line((l) => l.info, 'info');
  await socket.line((l) => l.ping !== undefined, 'ping', info.info.heartbeat_ms * 3);
  socket.socket.close();
}, 20000);

test('conformance: a page from an origin ws_origins does not list is refused', async () => {
  assert(OTHER, 'the harness passes a second origin');
  const frame = document.createElement('iframe');
  const result = new Promise((resolve) => {
    window.addEventListener('message', function listener(message) {
      if (message.data?.from !== 'refused') return;
      window.removeEventListener('message', listener);
      resolve(message.data);
    });
  });
  frame.src = `${OTHER}/refused.html?ws=${encodeURIComponent(WS)}`;
  document.body.appendChild(frame);
  const { raw: rawResult, client: clientResult } = await result;
  frame.remove();
  eq(rawResult.opened, false, 'the raw socket never opened');
  eq(rawResult.code, 1006, 'a failed connection (the 403 is not shown to scripts)');
  eq(clientResult, 'connection_failed', 'the client rejects');
});

// MARK: the runner

const results = [];
window.__heraldResults = results;
const list = document.getElementById('results');

async function report(result) {
  results.push(result);
  const item = document.createElement('li');
  item.className = result.ok ? 'pass' : 'fail';
  item.textContent = `${result.ok ? 'PASS' : 'FAIL'} ${result.name} (${result.ms} ms)${result.ok ? '' : ': ' + result.message}`;
  list.appendChild(item);
  try {
    await fetch('/report', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) });
  } catch { /* the harness also reads window.__heraldResults */ }
}

for (const { name, fn, timeoutMs } of cases) {
  if (ONLY && !name.includes(ONLY)) continue;
  const started = performance.now();
  let ok = true;
  let message = '';
  try {
    let timer;
    await Promise.race([
      fn(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs); }),
    ]).finally(() => clearTimeout(timer));
  } catch (error) {
    ok = false;
    message = `${error?.code ? error.code + ': ' : ''}${error?.message ?? error}`;
  }
  for (const c of opened.splice(0)) await c.close().catch(() => {});
  if (ok === false && (await fetch('/control/status').then((r) => r.text()).catch(() => 'up')) === 'down') {
    await control('start').catch(() => {});
  }
  await report({ name, ok, message, ms: Math.round(performance.now() - started) });
}
window.__heraldDone = true;
