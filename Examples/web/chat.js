// A chat room on Herald in a web page (docs/client-js.md, "The example page"):
// - messages are events on chat.ROOM.messages, read with `since: 0` so the page opens with
//   the history heraldd keeps, and catches up the same way after a reconnect;
// - who is here and who is typing: each page keeps a retained value on
//   chat.ROOM.members.ID ({name, seen, typing}), refreshed every 10 s, and reads them all
//   with one `current: true` subscription on chat.ROOM.members.*;
// - the room's topic is a retained value, shown and changed through a RemoteValue.
// No build step and no dependencies: the client module comes from heraldd itself.
//
//   index.html?herald=ws://127.0.0.1:7480&room=lobby&name=ada
//
// `herald` may list several URLs, comma-separated (a cluster's nodes, ws:// or wss://): the
// page starts on the first that answers and moves to the next when its node goes.

const params = new URLSearchParams(location.search);
const urls = (params.get('herald') ?? 'ws://127.0.0.1:7480').split(',').map((url) => url.trim()).filter(Boolean);
const room = params.get('room') ?? 'lobby';
const me = {
  id: Math.random().toString(36).slice(2, 10),              // this page's member entry
  name: params.get('name') ?? `guest-${Math.floor(Math.random() * 1000)}`,
};
const channels = {
  messages: `chat.${room}.messages`,
  topic: `chat.${room}.topic`,
  members: `chat.${room}.members.*`,
  me: `chat.${room}.members.${me.id}`,
};
const ONLINE_MS = 25_000;     // a member whose value is older than this has left
const TYPING_MS = 5_000;      // "typing" older than this is stale
const members = new Map();    // member id → {name, seen, typing}
let typing = false;           // this page's own state, and when it was last sent
let typingSent = 0;
let typingTimer;

const $ = (id) => document.getElementById(id);
$('room').textContent = `#${room}`;
$('me').textContent = me.name;

// The module is served by every node at /herald.mjs: import it from the first that answers.
async function loadHerald() {
  for (const url of urls) {
    try {
      return await import(new URL('/herald.mjs', url.replace(/^ws/, 'http')).href);
    } catch (error) {
      console.warn(`herald.mjs not loaded from ${url}:`, error);
    }
  }
  throw new Error(`no herald.mjs at ${urls.join(', ')}`);
}

const { connect } = await loadHerald();
const client = await connect(urls, {
  name: `chat ${me.name}`,
  waitForConnectivity: true,                 // keep trying while no node is up yet
  reconnect: { initialDelayMs: 100, maxDelayMs: 2000 },
});

// MARK: connection state

// A cluster node names itself in `info` ("node": "b"); a single heraldd does not.
const where = () => (client.serverInfo?.node ? `node ${client.serverInfo.node} (${client.url})` : client.url);

function showStatus() {
  $('status').textContent = client.state === 'connected' ? `connected to ${where()}` : `${client.state}…`;
  document.body.dataset.state = client.state;
  document.body.dataset.node = client.serverInfo?.node ?? '';
  $('send').disabled = client.state !== 'connected';
}

client.on('state', (state) => {
  if (state === 'restoring') members.clear();      // the members subscription reads them all again
  showStatus();
});
client.on('restored', () => {
  note(`reconnected: now on ${where()}`);
  announce();
});
client.on('error', (error) => {
  if (error.code === 'history_lost') note('some messages were missed while reconnecting (history did not reach back that far)');
  else console.warn('herald:', error.code, error.message);
});

// MARK: messages

function note(text) {
  const item = document.createElement('li');
  item.className = 'note';
  item.textContent = text;
  append(item);
}

function append(item) {
  const list = $('messages');
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
  list.append(item);
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function showMessage(event) {
  const { name = '?', text = '', at } = event.data ?? {};
  const item = document.createElement('li');
  item.dataset.seq = event.seq;
  if (name === me.name) item.className = 'mine';
  const who = document.createElement('b');
  who.textContent = name;
  const time = document.createElement('time');
  time.textContent = at ? new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : '';
  item.append(who, ' ', text, time);      // text nodes: never HTML from the wire
  append(item);
}

const log = await client.subscribe(channels.messages, showMessage, {
  since: 0,                                                  // the history heraldd keeps, then live
  onGap: ({ from, to }) => note(`messages ${from}–${to} were lost`),
});
if (log.recovered === false) note('older messages are no longer kept');

$('composer').addEventListener('submit', async (submit) => {
  submit.preventDefault();
  const text = $('text').value.trim();
  if (!text) return;
  $('text').value = '';
  setTyping(false);
  try {
    await client.publish(channels.messages, { name: me.name, text, at: Date.now() }, { receipt: true });
  } catch (error) {
    if (!$('text').value) $('text').value = text;           // keep it to send again
    note(`not sent (${error.code}); press Enter to try again`);
  }
});

// MARK: who is here, who is typing

await client.subscribe(channels.members, (event) => {
  const id = event.channel.slice(event.channel.lastIndexOf('.') + 1);
  if (event.value === null || event.kind === 'del') members.delete(id);
  else members.set(id, event.value);
  showMembers();
}, { current: true });

function showMembers() {
  const now = Date.now();
  const here = [...members.entries()].filter(([, m]) => now - m.seen < ONLINE_MS);
  const typing = here.filter(([id, m]) => id !== me.id && m.typing && now - m.seen < TYPING_MS).map(([, m]) => m.name);
  $('online').textContent = `${here.length} online`;
  $('online').title = here.map(([, m]) => m.name).join(', ');
  $('typing').textContent = typing.length === 0 ? '\u00a0'
    : `${typing.join(', ')} ${typing.length === 1 ? 'is' : 'are'} typing…`;
}
setInterval(showMembers, 1000);

function announce() {
  if (!client.isConnected) return;
  typingSent = Date.now();
  client.set(channels.me, { name: me.name, seen: Date.now(), typing }).catch(() => {});
}

function setTyping(on) {
  clearTimeout(typingTimer);
  if (on) typingTimer = setTimeout(() => setTyping(false), 3000);
  if (on !== typing || (on && Date.now() - typingSent > 2000)) {
    typing = on;
    announce();
  }
}

$('text').addEventListener('input', () => setTyping($('text').value !== ''));
setInterval(announce, 10_000);
addEventListener('pagehide', () => { client.del(channels.me).catch(() => {}); });
announce();

// MARK: the room's topic

const topic = await client.remoteValue(channels.topic);
topic.observe((value) => {
  if (document.activeElement !== $('topic')) $('topic').value = value ?? '';
});
$('topic-form').addEventListener('submit', async (submit) => {
  submit.preventDefault();
  try {
    await topic.set($('topic').value.trim());
    $('topic').blur();
  } catch (error) {
    note(`topic not changed (${error.code})`);
  }
});

showStatus();
