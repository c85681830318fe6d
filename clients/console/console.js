// The Herald console (issue 37): a page the monitor port serves at `/`, a client of the
// daemon like any other. It speaks the protocol over each node's WebSocket listener with
// the JavaScript client (served by the monitor at /herald.mjs), as an admin user: `stats`
// per node for the overview, `channels`/`get`/`presence`/`locks`/`handlers`/`sub since` for a channel,
// `clients`/`kick` for the connections. Vanilla JS, charts drawn on canvas; no network
// but the daemon's own listeners.
import { connect } from '/herald.mjs';

const $ = (id) => document.getElementById(id);
const COLORS = ['#2d6cdf', '#e07b22', '#1e8e4e', '#8e44ad', '#c0392b', '#16a2b8'];
const SAMPLES = 60;
const PAGE = 50;

const state = {
  nodes: [],          // {url, client, name, samples: [], last: null, error}
  view: 'login',
  channel: null,      // {name, subscription}
  channelPage: { after: [null], index: 0, next: null },
  connectionPage: { after: [null], index: 0, next: null },
  timers: [],
};

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else if (key.startsWith('data-')) node.setAttribute(key, value);
    else if (key === 'text') node.textContent = value;
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

const primary = () => state.nodes[0].client;

// MARK: login

async function boot() {
  $('login-origin').textContent = location.origin;
  let info = {};
  try {
    info = await (await fetch('/console.json', { cache: 'no-store' })).json();
  } catch {
    info = {};
  }
  const own = info.ws_port ? `ws://${location.hostname}:${info.ws_port}`
    : info.wss_port ? `wss://${location.hostname}:${info.wss_port}` : '';
  $('login-nodes').value = sessionStorage.getItem('herald-console-nodes') || own;
  if (!own) $('login-error').textContent = 'This daemon has no ws_port: the console needs its WebSocket listener.';
  $('login').addEventListener('submit', (event) => { event.preventDefault(); login(); });
  for (const link of document.querySelectorAll('nav a')) {
    link.addEventListener('click', (event) => { event.preventDefault(); show(link.dataset.tab); });
  }
}

async function login() {
  const urls = $('login-nodes').value.split(/[\s,]+/).filter(Boolean);
  const token = $('login-token').value;
  const user = $('login-user').value.trim() || undefined;
  $('login-error').textContent = '';
  $('login-submit').disabled = true;
  const opened = [];
  try {
    if (urls.length === 0) throw new Error('name at least one node (ws://host:port)');
    for (const url of urls) {
      const client = await connect(url, { token, user, name: 'herald-console', reconnect: { maxDelayMs: 2000 } });
      opened.push(client);
    }
    try {
      await opened[0].call('clients', { limit: 1 });
    } catch (error) {
      if (error.code === 'forbidden') throw new Error('this user is not an admin (admin: true in auth.users)');
      throw error;
    }
  } catch (error) {
    for (const client of opened) client.close();
    $('login-submit').disabled = false;
    $('login-error').textContent = `Cannot log in: ${error.code ? error.code + ': ' : ''}${error.message}`;
    return;
  }
  sessionStorage.setItem('herald-console-nodes', urls.join('\n'));
  state.nodes = opened.map((client, index) => ({ url: urls[index], client, name: urls[index], samples: [], last: null }));
  $('who').textContent = `${user ?? 'admin'} · ${state.nodes.length === 1 ? '1 node' : state.nodes.length + ' nodes'}`;
  $('nav').hidden = false;
  wire();
  show('overview');
  sampleAll();
  state.timers.push(setInterval(sampleAll, 1000));
  state.timers.push(setInterval(() => { if (state.view === 'connections') loadConnections(); }, 2000));
  state.timers.push(setInterval(() => { if (state.view === 'channels' && state.channel) refreshChannelFacts(); }, 2000));
}

function show(view) {
  state.view = view;
  document.body.dataset.view = view;
  for (const section of document.querySelectorAll('.view')) section.hidden = section.id !== view + '-view';
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('active', link.dataset.tab === view);
  if (view === 'channels' && !$('channel-rows').dataset.loaded) searchChannels(true);
  if (view === 'connections') loadConnections();
}

function wire() {
  $('channel-search').addEventListener('submit', (event) => { event.preventDefault(); searchChannels(true); });
  $('channel-first').addEventListener('click', () => searchChannels(true));
  $('channel-next').addEventListener('click', () => searchChannels(false));
  $('open-channel').addEventListener('submit', (event) => {
    event.preventDefault();
    const name = $('open-channel-name').value.trim();
    if (name) openChannel(name);
  });
  $('publish').addEventListener('submit', (event) => { event.preventDefault(); publish(); });
  $('set').addEventListener('submit', (event) => { event.preventDefault(); setValue(); });
  $('connections-refresh').addEventListener('click', () => loadConnections(true));
  $('connections-next').addEventListener('click', () => loadConnections(false, true));
}

// MARK: overview

async function sampleAll() {
  await Promise.all(state.nodes.map(sample));
  if (state.view === 'overview') drawOverview();
}

async function sample(node) {
  let stats;
  try {
    stats = await node.client.call('stats', {}, { timeoutMs: 2000 });
  } catch (error) {
    node.error = error.code ?? String(error);
    node.samples.push({ t: Date.now(), missing: true });
    if (node.samples.length > SAMPLES) node.samples.shift();
    return;
  }
  node.error = null;
  if (stats.node) node.name = stats.node;
  const now = Date.now();
  const last = node.last;
  const rate = (key) => (last && now > last.t ? Math.max(0, (stats[key] - last.stats[key]) * 1000 / (now - last.t)) : 0);
  node.samples.push({
    t: now, connections: stats.connections, in: rate('msgs_in'), out: rate('msgs_out'),
    slow: stats.slow_consumers, dropped: stats.dropped,
  });
  if (node.samples.length > SAMPLES) node.samples.shift();
  node.last = { t: now, stats };
}

function drawOverview() {
  const cards = state.nodes.map((node, index) => {
    const stats = node.last?.stats ?? {};
    const sampleNow = node.samples[node.samples.length - 1] ?? {};
    const link = node.error ? 'unreachable' : stats.cluster_ready === undefined ? 'single node'
      : stats.cluster_ready === 1 ? 'up' : 'down';
    const linkClass = link === 'up' || link === 'single node' ? 'up' : 'down';
    const dot = el('i');
    dot.style.background = COLORS[index % COLORS.length];
    const facts = el('dl', {},
      el('dt', { text: 'connection' }), el('dd', { text: node.error ? `error: ${node.error}` : node.client.state }),
      el('dt', { text: 'Redis link' }), el('dd', { class: linkClass, text: link, 'data-redis': link }),
      el('dt', { text: 'connections' }), el('dd', { text: String(stats.connections ?? '–') }),
      el('dt', { text: 'msgs in/s' }), el('dd', { text: (sampleNow.in ?? 0).toFixed(1) }),
      el('dt', { text: 'msgs out/s' }), el('dd', { text: (sampleNow.out ?? 0).toFixed(1) }),
      el('dt', { text: 'slow / dropped' }), el('dd', { text: `${stats.slow_consumers ?? '–'} / ${stats.dropped ?? '–'}` }),
      el('dt', { text: 'uptime' }), el('dd', { text: duration(stats.uptime_ms) }));
    return el('div', { class: 'card node', 'data-node': node.name, 'data-redis': link },
      el('h2', {}, dot, node.name), facts);
  });
  $('nodes').replaceChildren(...cards);
  drawChart($('chart-connections'), state.nodes.map((node) => node.samples.map((s) => s.connections)));
  drawChart($('chart-in'), state.nodes.map((node) => node.samples.map((s) => s.in)));
  drawChart($('chart-out'), state.nodes.map((node) => node.samples.map((s) => s.out)));
  drawChart($('chart-slow'), state.nodes.map((node) => node.samples.map((s) => s.slow)),
    state.nodes.map((node) => node.samples.map((s) => s.dropped)));
  $('legend').replaceChildren(...state.nodes.map((node, index) => {
    const swatch = el('i');
    swatch.style.background = COLORS[index % COLORS.length];
    return el('span', {}, swatch, node.name);
  }), el('span', { text: 'dashed: dropped events' }));
}

/** Draws each series (one per node) as a line over the last SAMPLES seconds; `dashed`
 * series share the scale and are drawn dashed in the same colours. */
function drawChart(canvas, series, dashed = []) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || canvas.width;
  const height = canvas.clientHeight || canvas.height;
  if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
  if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  const left = 44; const right = 8; const top = 8; const bottom = 18;
  const values = [...series, ...dashed].flat().filter((v) => typeof v === 'number' && Number.isFinite(v));
  const max = niceMax(Math.max(1, ...values));
  g.font = '11px system-ui, sans-serif';
  g.fillStyle = '#6a7385';
  g.strokeStyle = '#eef1f5';
  g.lineWidth = 1;
  for (let step = 0; step <= 4; step++) {
    const y = top + (height - top - bottom) * (1 - step / 4);
    g.beginPath(); g.moveTo(left, y); g.lineTo(width - right, y); g.stroke();
    g.fillText(formatNumber(max * step / 4), 4, y + 4);
  }
  g.fillText(`${SAMPLES} s`, left, height - 4);
  g.fillText('now', width - right - 22, height - 4);
  const x = (index) => left + (width - left - right) * (index + SAMPLES - SAMPLES) / (SAMPLES - 1);
  const plot = (points, color, dash) => {
    const offset = SAMPLES - points.length;
    g.strokeStyle = color;
    g.lineWidth = 2;
    g.setLineDash(dash ? [5, 4] : []);
    g.beginPath();
    let drawing = false;
    points.forEach((value, index) => {
      if (typeof value !== 'number') { drawing = false; return; }
      const px = x(index + offset);
      const py = top + (height - top - bottom) * (1 - value / max);
      if (drawing) g.lineTo(px, py); else g.moveTo(px, py);
      drawing = true;
    });
    g.stroke();
    g.setLineDash([]);
  };
  series.forEach((points, index) => plot(points, COLORS[index % COLORS.length], false));
  dashed.forEach((points, index) => plot(points, COLORS[index % COLORS.length], true));
}

function niceMax(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 4, 8, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function formatNumber(value) {
  if (value >= 1e6) return (value / 1e6).toFixed(1) + 'M';
  if (value >= 1e3) return (value / 1e3).toFixed(1) + 'k';
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(2)));
}

function duration(ms) {
  if (typeof ms !== 'number') return '–';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// MARK: channels

/** A name just before every name starting with `prefix` in byte order, for `after`. */
function justBefore(prefix) {
  const last = prefix.charCodeAt(prefix.length - 1);
  return prefix.slice(0, -1) + String.fromCharCode(last - 1) + '~';
}

async function searchChannels(fromStart) {
  const text = $('channel-prefix').value.trim();
  const page = state.channelPage;
  if (fromStart) { page.after = [null]; page.index = 0; } else if (page.next) { page.after.push(page.next); page.index++; }
  const isPattern = /(^|\.)(\*|>)(\.|$)/.test(text);
  const fields = { limit: PAGE };
  if (isPattern) fields.ch = text;
  const after = page.after[page.index] ?? (!isPattern && text ? justBefore(text) : null);
  if (after !== null) fields.after = after;
  let answer;
  try {
    answer = await primary().call('channels', fields);
  } catch (error) {
    $('channel-count').textContent = `${error.code}: ${error.message}`;
    return;
  }
  let rows = answer.channels ?? [];
  let next = answer.next ?? null;
  if (!isPattern && text) {
    if (rows.some((row) => row.ch > text && !row.ch.startsWith(text))) next = null;
    rows = rows.filter((row) => row.ch.startsWith(text));
  }
  page.next = next;
  $('channel-rows').dataset.loaded = '1';
  $('channel-rows').replaceChildren(...rows.map((row) => {
    const tr = el('tr', { 'data-channel': row.ch }, ...channelCells(row));
    if (state.channel?.name === row.ch) tr.classList.add('selected');
    tr.addEventListener('click', () => openChannel(row.ch));
    return tr;
  }));
  $('channel-count').textContent = `page ${page.index + 1}: ${rows.length} channel${rows.length === 1 ? '' : 's'}`;
  $('channel-next').disabled = !next;
}

/** The cells of a channel's row in the list. */
function channelCells(row) {
  return [el('td', { text: row.ch }), el('td', { text: String(row.subs) }), el('td', { text: String(row.seq) }),
    el('td', { text: row.has_value ? 'value' : '' }), el('td', { text: row.owner ?? '' }),
    el('td', { text: row.link ?? '' })];
}

async function openChannel(name) {
  if (state.channel?.subscription) state.channel.subscription.unsubscribe();
  state.channel = { name, subscription: null };
  $('channel-name').textContent = name;
  $('channel-body').hidden = false;
  $('channel-error').textContent = '';
  $('tail').replaceChildren();
  for (const row of document.querySelectorAll('#channel-rows tr')) row.classList.toggle('selected', row.dataset.channel === name);
  const facts = await refreshChannelFacts();
  const isConcrete = !/(^|\.)(\*|>)(\.|$)/.test(name);
  const since = isConcrete ? Math.max(0, (facts?.seq ?? 0) - 20) : undefined;
  try {
    const subscription = await primary().subscribe(name, (event) => addTail(name, event),
      since === undefined ? {} : { since });
    if (state.channel?.name === name) state.channel.subscription = subscription; else subscription.unsubscribe();
  } catch (error) {
    $('channel-error').textContent = `live tail: ${error.code}: ${error.message}`;
  }
}

function addTail(name, event) {
  if (state.channel?.name !== name) return;
  const item = el('li', { class: event.replay ? 'replay' : 'live', 'data-seq': String(event.seq ?? '') },
    el('b', { text: `#${event.seq ?? '–'}` }), el('span', { text: event.replay ? 'history' : (event.from ?? '') }),
    JSON.stringify(event.data));
  const tail = $('tail');
  tail.prepend(item);
  while (tail.children.length > 200) tail.lastChild.remove();
}

async function refreshChannelFacts() {
  const name = state.channel?.name;
  if (!name) return null;
  const client = primary();
  const ask = (promise) => promise.then((value) => value, (error) => ({ error }));
  const [listing, value, presence, locks, handlers] = await Promise.all([
    ask(client.call('channels', { ch: name, limit: 1 })),
    ask(client.get(name)),
    ask(client.presence(name)),
    ask(client.call('locks', { ch: name })),
    ask(client.call('handlers', { ch: name })),
  ]);
  if (state.channel?.name !== name) return null;
  const row = listing.channels?.find((entry) => entry.ch === name) ?? null;
  // The list's row says what the channel view says.
  const listed = [...document.querySelectorAll('#channel-rows tr')].find((tr) => tr.dataset.channel === name);
  if (row && listed) listed.replaceChildren(...channelCells(row));
  const problem = (answer) => `${answer.error.code}: ${answer.error.message}`;
  $('channel-value').textContent = value.error ? problem(value) : JSON.stringify(value.value);
  $('channel-rev').textContent = value.error ? '–' : String(value.rev);
  $('channel-subs').textContent = row ? `${row.subs} subscription${row.subs === 1 ? '' : 's'} · seq ${row.seq}` : 'no record yet';
  $('channel-presence').textContent = presence.error ? problem(presence)
    : `${presence.count} member${presence.count === 1 ? '' : 's'}` + (presence.members?.length
      ? ': ' + presence.members.map((m) => m.user ? `${m.client} (${m.user})` : m.client).join(', ') : '');
  $('channel-locks').textContent = locks.error ? problem(locks)
    : `locked: ${locks.locked.length ? locks.locked.join(', ') : 'none'} · unlocked: ${locks.unlocked.length ? locks.unlocked.join(', ') : 'none'}`;
  $('channel-handlers').textContent = handlers.error ? problem(handlers)
    : handlers.handlers.length ? handlers.handlers.join(', ') + ' (in the order a signal asks them)' : 'none';
  $('channel-owner').textContent = row ? `${row.owner ?? 'no owner'} · ${row.link ? 'linked to ' + row.link : 'no link'}` : '–';
  return row;
}

function parseJSON(text) {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: 'not valid JSON (a string needs quotes: "text")' };
  }
}

async function publish() {
  const name = state.channel?.name;
  const data = parseJSON($('publish-data').value);
  if (data.error) { $('channel-error').textContent = data.error; return; }
  try {
    const receipt = await primary().publish(name, data.value, { receipt: true });
    $('channel-error').textContent = '';
    $('publish-data').value = '';
    $('publish-data').placeholder = `published: seq ${receipt.seq}, ${receipt.receivers} receiver(s)`;
  } catch (error) {
    $('channel-error').textContent = `publish: ${error.code}: ${error.message}`;
  }
}

async function setValue() {
  const name = state.channel?.name;
  const value = parseJSON($('set-value').value);
  if (value.error) { $('channel-error').textContent = value.error; return; }
  try {
    const answer = await primary().set(name, value.value);
    $('channel-error').textContent = '';
    $('set-value').value = '';
    $('set-value').placeholder = `set: rev ${answer.rev}`;
    await refreshChannelFacts();
  } catch (error) {
    $('channel-error').textContent = `set: ${error.code}: ${error.message}`;
  }
}

// MARK: connections

async function loadConnections(fromStart = false, forward = false) {
  const page = state.connectionPage;
  if (fromStart) { page.after = [null]; page.index = 0; } else if (forward && page.next) { page.after.push(page.next); page.index++; }
  const fields = { limit: PAGE };
  if (page.after[page.index]) fields.after = page.after[page.index];
  let answer;
  try {
    answer = await primary().call('clients', fields);
  } catch (error) {
    $('connections-error').textContent = `${error.code}: ${error.message}`;
    return;
  }
  $('connections-error').textContent = '';
  page.next = answer.next ?? null;
  const mine = new Set(state.nodes.map((node) => node.client.clientId));
  $('connection-rows').replaceChildren(...answer.clients.map((entry) => {
    const kick = el('button', { class: 'kick', type: 'button', text: 'Kick' });
    if (mine.has(entry.client)) { kick.disabled = true; kick.title = 'this console'; }
    kick.addEventListener('click', () => kickClient(entry.client));
    return el('tr', { 'data-client': entry.client },
      el('td', { text: entry.client + (mine.has(entry.client) ? ' (this console)' : '') }),
      el('td', { text: entry.user ?? '' }), el('td', { text: entry.name ?? '' }), el('td', { text: entry.addr }),
      el('td', { text: entry.transport }), el('td', { text: String(entry.subs) }),
      el('td', { text: String(entry.pending_bytes) }), el('td', { text: String(entry.dropped) }),
      el('td', { text: duration(entry.connected_ms) }), el('td', {}, kick));
  }));
  $('connection-count').textContent = `page ${page.index + 1}: ${answer.clients.length} connection${answer.clients.length === 1 ? '' : 's'}`;
  $('connections-next').disabled = !page.next;
}

async function kickClient(client) {
  try {
    const answer = await primary().call('kick', { client });
    $('connections-error').textContent = answer.count === 0 ? `${client} had gone already` : '';
  } catch (error) {
    $('connections-error').textContent = `kick: ${error.code}: ${error.message}`;
  }
  await loadConnections();
}

boot();
