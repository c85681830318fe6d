// Compiled, never run: uses the client's API as an app in TypeScript would, so that
// `tsc --strict` (scripts/test) fails when herald.d.ts no longer describes it.
import { connect, HeraldError, HeraldEvent, RemoteList, Subscription } from '../herald';

async function main() {
  const client = await connect(['ws://127.0.0.1:7402', 'ws://127.0.0.1:7403'], { name: 'x', reconnect: { maxDelayMs: 2000 } });
  client.on('state', (state, detail) => console.log(state, detail, client.url));
  client.on('error', (error) => console.log(error.code, error.message));
  const sub: Subscription = await client.subscribe<{ text: string }>('chat.*', (event) => console.log(event.data.text, event.seq));
  for await (const event of await client.subscribe('chat.lobby', { max: 3 })) console.log(event.channel);
  const receipt = await client.publish('chat.lobby', { text: 'hi' }, { receipt: true });
  console.log(receipt.seq + receipt.receivers);
  const nothing: undefined = await client.publish('chat.lobby', 1);
  const sum: number = await client.request<number>('calc.add', { a: 1, b: 2 }, { timeoutMs: 500 });
  const detail = await client.request('calc.add', 1, { detail: true });
  console.log(detail.from, sum, nothing);
  await client.handle('app.settings', async (offer) => { offer.callback({ step: 1 }); return 'stop'; });
  const result = await client.signal('app.settings.profile', 'save', { onCallback: (cb) => console.log(cb.from) });
  console.log(result.handledBy, result.handled);
  const list: RemoteList<string> = await client.remoteList<string>('app.todo');
  list.observe((items, change, rev) => { if (change.kind === 'splice') console.log(change.inserted, items.length, rev); });
  const theme = await client.remoteValue<{ mode: string }>('app.theme');
  theme.observe((value) => console.log(value?.mode));
  await theme.set({ mode: 'dark' }, { ifRev: theme.rev });
  try { await client.set('a', 1, { ifRev: 0 }); } catch (e) { if (e instanceof HeraldError && e.code === 'conflict') console.log(e.rev); }
  const controller = new AbortController();
  await client.get('x', { signal: controller.signal });
  const { subs } = await client.lock('app.>');
  await client.declare('car.42');
  const presence = await client.presence<{ name: string }>('chat.lobby');
  console.log(subs, presence.count, presence.members?.[0]?.info?.name, sub.globalId, client.instance);
  const room = await client.watchPresence<{ name: string }>('room.1', (state, change) => {
    if (change.kind === 'join') console.log(change.member.info?.name, state.count);
  }, { maxListed: 500 });
  console.log(room.members.length, room.countOnly);
  await room.close();
  const handler = (event: HeraldEvent) => event.respond?.(1);
  await client.respond<number>('calc.double', (n) => n * 2);
  void handler;
  await client.close();
}
void main();
