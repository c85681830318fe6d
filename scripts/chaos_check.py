#!/usr/bin/env python3
"""Offline checker of a scripts/chaos history (issues 31 and 33).

usage: scripts/chaos_check.py HISTORY [--json F] [--examples N] [--strict]
       scripts/chaos_check.py --self-test

HISTORY is the JSON-lines file scripts/chaos writes (`--history`): connection opens and
closes, ops with send and answer times, events, `gap`/`removed`/error frames, the monitors'
samples of owners and locks, the faults and the final values. Checks, each failing with a
count and a few examples:

  seq unique       no (channel, seq) on two different events: every event and every `pub`
                   acknowledgement of a seq carries the same data (publishers' data is unique);
  seq order        within one connection life, a subscription's seqs only rise; a life
                   subscribed with `since` S gets nothing at or below S;
  acked delivered  every `pub` acknowledged with a seq reached every subscriber life on its
                   channel that stayed connected across it (subscription confirmed before the
                   `pub` was sent, the connection still open `grace` s after the ack), or a
                   `gap` frame of that life covers its seq; a life ended by `node_reset` owes
                   nothing past the last seq it got (the client resubscribes with `since`);
  no silent jump   inside a life, each event is the one after the last (or after `since` when
                   the answer said `recovered:true`) or a `gap` frame covers the seqs between,
                   or the skipped seqs' `pub`s were sent before the subscription's `ok` (not
                   owed: the barrier promises the events published after the `ok`);
  writes kept      each counter's final value equals its rev and is at least the highest
                   acknowledged value, and no rev was acknowledged twice;
  one owner        (a) no `declare` acknowledged to one connection while another held the
                   channel (its `declare` acknowledged, no `remove` sent yet) unless the
                   holder was told (its connection closed, a `node_reset`, a `removed`; a
                   `remove` the close cut off unanswered ends no hold: the close told it);
                   (b) in no sweep of the monitors do two nodes name different owners of one
                   channel with no declare/remove/close of it in between; (c) at the end every
                   holder is the owner its node and Redis name, and nobody else is named;
  locks told       no lock (acknowledged `lock`, no `unlock` sent yet) found lost while held:
                   a `locks {ch}` sample (sent after the `lock` ok, answered before the
                   `unlock` was sent) listing a subscription as unlocked, unless the holder
                   was told (its connection closed, `node_reset`; an `unlock` cut off
                   unanswered, as for `remove`). Events the holder published
                   under the lock that reached a monitor's witness subscription are counted
                   (they may have arrived after the unlock, which the docs allow).

What seq unique, acked delivered and no silent jump find in the window of a SIGKILL of the
Redis primary (`--redis-every`) is counted, not failed, unless `--strict`: a killed primary
loses what it had not replicated; issue 31's acceptance covers planned failovers, pauses and
link faults. With several shards (`shards` in the run record; issue 33) this holds only for
the channels of the shard whose primary was killed (the fault's `shard`), placed as ShardMap
does (jump consistent hash over FNV-1a 64, `shard_of` here): a data shard's kill excuses
nothing on the other shards' channels; shard 0's, which also holds the cluster's own records
(interest, locks, owners), excuses every channel, as one Redis's kill does.

Then prints per fault kind: how many, time to recover (from the fault's end to the first
answer that needed Redis on every affected node: the victim, or every node for failovers and
Redis kills; an answer is ok or a definite refusal such as `conflict`, not `unavailable`),
the longest stall between such answers there (from before the fault's start to that first
answer after its end), `unavailable` answers, gap frames (and seqs
covered), `node_reset` closes, events lost and covered, and what each check found in the
faults' windows (a fault's window runs from its start to the next fault's start). With
shards, a fault of one shard is labelled with it (`redis@1`, `failover@2`, `link/delay@1`) and
its recovery is judged by the answers that needed that shard (ops on its channels, the
monitors' `get` probe of one counter per shard; for shard 0 also locks and instance
channels); and the figures are given per shard as well: its channels, ops, acknowledged
`pub`s and `set`s, events, primary kills, planned failovers, link faults, `unavailable`
answers and probes, gap frames, and what each check found on its channels.
Exits 1 when a check fails.
"""

import argparse
import bisect
import json
import sys
from collections import defaultdict

EXAMPLES = 5


def fnv1a64(data):
    """FNV-1a, 64 bits, of `data` (bytes): ShardMap.fnv1a64."""
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def jump(key, buckets):
    """Jump consistent hash (Lamping and Veach), as ShardMap.jump computes it (doubles included)."""
    bucket, nxt = -1, 0
    while nxt < buckets:
        bucket = nxt
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        nxt = int(float(bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


def shard_of(channel, shards):
    """The shard `channel` lives on among `shards` (ShardMap.shard(of:): shard 0 when one)."""
    # The daemon's own channels ($sys..., every name starting with $) live on shard 0.
    return 0 if shards <= 1 or channel.startswith("$") else jump(fnv1a64(channel.encode()), shards)


class Life:
    """One connection of one client (or monitor)."""

    __slots__ = ("w", "c", "role", "node", "life", "client", "open", "close", "why", "events", "gaps",
                 "removed", "subs")

    def __init__(self, w, c):
        self.w, self.c = w, c
        self.role = self.node = self.life = self.client = None
        self.open = self.close = None
        self.why = None
        self.events = []    # (t, ch, seq, sub, d)
        self.gaps = []      # (t, ch, sub, from, to)
        self.removed = []   # (t, ch)
        self.subs = []      # confirmed subscriptions: (t, ch, since, recovered)

    def name(self):
        return f"{self.w}#{self.c}@{self.node}"


class Op:
    """One recorded op (slots: a full run records about a million)."""

    __slots__ = ("w", "c", "op", "ch", "ts", "t", "ok", "err", "seq", "rev", "value", "d", "since", "recovered")

    def __init__(self, r):
        for field in self.__slots__:
            value = r.get(field)
            setattr(self, field, sys.intern(value) if isinstance(value, str) and field != "d" else value)

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        value = getattr(self, key, None)
        return default if value is None else value


class History:
    def __init__(self, path):
        self.run = {}
        self.lives = {}
        self.ops = []          # dicts of every recorded op
        self.samples = []
        self.faults = []
        self.finals = []
        self.final_owners = []
        self.errs = []
        self.end = None
        self.stop_writes = None
        self.lines = 0
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                self.lines += 1
                self.add(r)
        if self.end is None:
            self.end = max((life.close or life.open or 0 for life in self.lives.values()), default=0)
        for life in self.lives.values():
            if life.close is None:
                life.close, life.why = self.end, "end"

    def life(self, r):
        key = (r["w"], r["c"])
        life = self.lives.get(key)
        if life is None:
            life = self.lives[key] = Life(*key)
        return life

    def add(self, r):
        k = r["k"]
        if k == "ev":
            self.life(r).events.append((r["t"], sys.intern(r["ch"]), r.get("seq"), r.get("sub"), r.get("d")))
        elif k == "op":
            self.ops.append(Op(r))
            if r["op"] == "sub" and r.get("ok"):
                self.life(r).subs.append((r["t"], r["ch"], r.get("since"), r.get("recovered")))
        elif k == "gap":
            self.life(r).gaps.append((r["t"], r["ch"], r.get("sub"), r.get("fr"), r.get("to")))
        elif k == "removed":
            self.life(r).removed.append((r["t"], r["ch"]))
        elif k == "err":
            self.errs.append(r)
        elif k == "open":
            life = self.life(r)
            life.role, life.node, life.life, life.client, life.open = r.get("role"), r.get("node"), r.get("life"), \
                r.get("client"), r["t"]
        elif k == "close":
            life = self.life(r)
            life.close, life.why = r["t"], r.get("why")
        elif k == "sample":
            self.samples.append(r)
        elif k == "fault":
            self.faults.append(r)
        elif k == "final":
            self.finals.append(r)
        elif k == "final_owner":
            self.final_owners.append(r)
        elif k == "run":
            self.run = r
        elif k == "stop_writes":
            self.stop_writes = r["t"]
        elif k == "end":
            self.end = r["t"]


def norm(client):
    """Client ids as the daemon writes them (`c4294967297`) or as Redis keeps them (the number)."""
    if client is None:
        return None
    text = str(client)
    return text[1:] if text.startswith("c") else text


class Windows:
    """Each fault's window: from its start (less 0.5 s) to the next fault's start."""

    def __init__(self, faults):
        self.faults = sorted(faults, key=lambda f: f["t0"])
        self.starts = [f["t0"] - 0.5 for f in self.faults]

    def index(self, t):
        return bisect.bisect_right(self.starts, t) - 1

    def kind(self, t):
        i = self.index(t)
        return label(self.faults[i]) if i >= 0 else "none"


def label(fault):
    """A fault's kind as the figures name it: `link/delay`, and with several shards the shard
    a Redis fault hit (`redis@1`: shard 1's primary killed)."""
    shard = f"@{fault['shard']}" if fault.get("shard") is not None else ""
    if fault.get("failed"):
        return fault["kind"] + shard + " (failed)"
    return fault["kind"] + (f"/{fault['mode']}" if fault.get("mode") else "") + shard


class Check:
    def __init__(self, name, what):
        self.name, self.what = name, what
        self.count = 0
        self.examples = []
        self.by_window = defaultdict(int)
        self.by_shard = defaultdict(int)      # found (failing or counted) per shard of the channel
        self.counted_only = 0   # found but not failing (e.g. at Redis kills)
        self.notes = []

    def found(self, text, t=None, windows=None, n=1, fail=True, shard=None):
        if shard is not None:
            self.by_shard[shard] += n
        if fail:
            self.count += n
        else:
            self.counted_only += n
        if windows is not None and t is not None:
            self.by_window[windows.index(t)] += n
        if len(self.examples) < EXAMPLES and (fail or len(self.examples) < 2):
            self.examples.append(text if fail else "(counted) " + text)

    @property
    def ok(self):
        return self.count == 0

    def summary(self):
        return {"name": self.name, "ok": self.ok, "count": self.count, "counted_only": self.counted_only,
                "what": self.what, "examples": self.examples, "notes": self.notes}


def covered_by(gaps, ch, seq):
    for _, gch, _, fr, to in gaps:
        if gch == ch and fr is not None and to is not None and fr <= seq <= to:
            return True
    return False


def check(path, strict=False):
    """Reads the history at `path` and runs every check. Unless `strict`, what the seq
    unique, acked delivered and no silent jump checks find in the window of a SIGKILL of
    the Redis primary is counted, not failed: a killed primary loses what it had not
    replicated (`WAIT` covers state writes, not events), which issue 31's acceptance leaves
    out; the issue-15 runs counted those too."""
    h = History(path)
    windows = Windows(h.faults)
    shards = h.run.get("shards") or 1
    placement = {}

    def shard(ch):
        if ch not in placement:
            placement[ch] = shard_of(ch, shards)
        return placement[ch]

    def failing(t, ch=None):
        """Whether a finding at `t` on `ch` fails: not inside the window of a Redis primary
        kill, unless that kill was of another data shard than `ch`'s (shard 0's kill takes
        the cluster's own records with it, so it excuses every channel, as with one Redis)."""
        if strict:
            return True
        i = windows.index(t)
        if i < 0 or windows.faults[i]["kind"] != "redis":
            return True
        hit = windows.faults[i].get("shard") or 0
        return hit != 0 and ch is not None and shard(ch) != hit

    grace = h.run.get("grace", 2)
    checks = []
    per_window = defaultdict(lambda: defaultdict(int))

    pubs = [o for o in h.ops if o["op"] == "pub"]
    acked = [o for o in pubs if o.get("ok") and isinstance(o.get("seq"), int)]

    # --- seq unique ---------------------------------------------------------------------
    c = Check("seq unique", "no (channel, seq) on two different events")
    data_of = {}
    first_seen = {}
    clashes = defaultdict(set)
    for o in acked:
        key = (o["ch"], o["seq"])
        where = f"ack to {o['w']} at {o['t']:.3f}"
        if key in data_of and data_of[key] != o.get("d"):
            clashes[key].add((o.get("d"), where))
        else:
            data_of.setdefault(key, o.get("d"))
            first_seen.setdefault(key, (o["t"], where))
    for life in h.lives.values():
        for t, ch, seq, _, d in life.events:
            key = (ch, seq)
            if key not in data_of:
                data_of[key] = d
                first_seen[key] = (t, f"event at {life.name()} {t:.3f}")
            elif data_of[key] != d:
                clashes[key].add((d, f"event at {life.name()} {t:.3f}"))
    for key, others in sorted(clashes.items(), key=lambda kv: first_seen[kv[0]][0]):
        t, where = first_seen[key]
        other = sorted(others)[0]
        c.found(f"{key[0]} seq {key[1]}: {data_of[key]!r} ({where}) and {other[0]!r} ({other[1]})"
                + (f" and {len(others) - 1} more" if len(others) > 1 else ""), t, windows, fail=failing(t, key[0]),
                shard=shard(key[0]))
    checks.append(c)

    # --- seq order ----------------------------------------------------------------------
    c = Check("seq order", "within a connection life a subscription's seqs only rise, none at or below its since")
    for life in h.lives.values():
        last = {}
        since = {ch: s for _, ch, s, _ in life.subs if s is not None}
        for t, ch, seq, sub, _ in life.events:
            if not isinstance(seq, int):
                continue
            key = (ch, sub)
            if key in last and seq <= last[key]:
                c.found(f"{life.name()} {ch}/{sub}: seq {seq} after {last[key]} at {t:.3f}", t, windows, shard=shard(ch))
            elif key not in last and ch in since and seq <= since[ch]:
                c.found(f"{life.name()} {ch}/{sub}: seq {seq} after since {since[ch]} at {t:.3f}", t, windows,
                        shard=shard(ch))
            last[key] = max(seq, last.get(key, seq))
    checks.append(c)

    # --- acked delivered, no silent jump ------------------------------------------------
    delivered = Check("acked delivered", "every acknowledged event reached every subscriber that stayed connected, "
                                         "or a gap frame covered it")
    jumps = Check("no silent jump", "no seq skipped inside a life without a gap frame")
    by_ch = defaultdict(list)
    for o in acked:
        by_ch[o["ch"]].append((o["ts"], o["t"], o["seq"], o.get("d"), o["w"]))
    for lst in by_ch.values():
        lst.sort()
    covered_total = 0
    lost_events = defaultdict(set)   # window -> acknowledged (channel, seq) some subscriber missed
    after_reset = 0
    owed = 0
    for life in h.lives.values():
        if life.role != "subscriber" or not life.subs:
            continue
        t_ok, ch, since, recovered = life.subs[0]
        seqs = [seq for _, ech, seq, _, _ in life.events if ech == ch and isinstance(seq, int)]
        got = set(seqs)
        top = max(seqs) if seqs else (since or 0)
        reset = life.why == "node_reset"
        lst = by_ch.get(ch, [])
        i = bisect.bisect_right(lst, (t_ok, float("inf")))
        while i < len(lst):
            ts, ta, seq, d, w = lst[i]
            i += 1
            if ts >= life.close:
                break
            if ta + grace >= life.close:
                continue
            owed += 1
            if seq in got:
                continue
            if covered_by(life.gaps, ch, seq):
                covered_total += 1
                per_window[windows.index(ts)]["covered"] += 1
                continue
            if reset and seq > top:
                after_reset += 1
                continue
            per_window[windows.index(ts)]["lost"] += 1
            lost_events[windows.index(ts)].add((ch, seq))
            delivered.found(f"{ch} seq {seq} ({d!r}, sent {ts:.3f}, acked {ta:.3f}) never reached {life.name()} "
                            f"(subscribed {t_ok:.3f}, connected until {life.close:.3f}, {life.why})", ts, windows,
                            fail=failing(ts, ch), shard=shard(ch))
        expected = since + 1 if since is not None and recovered else None
        # The contract is "every event published after the `ok`" (docs/cluster.md, the
        # barrier): an event sent before it may reach the first subscriber of a pattern on a
        # node or not, one by one, so a seq known to be sent before the `ok` is not owed.
        before_ok = {seq for ts, _, seq, _, _ in lst if ts < t_ok}
        for t, ech, seq, _, _ in life.events:
            if ech != ch or not isinstance(seq, int):
                continue
            if expected is not None and seq > expected:
                missing = [s for s in range(expected, seq)
                           if not covered_by(life.gaps, ch, s) and s not in before_ok]
                if missing:
                    jumps.found(f"{life.name()} {ch}: {expected - 1} then {seq} at {t:.3f} ({len(missing)} seqs "
                                f"uncovered)", t, windows, fail=failing(t, ch), shard=shard(ch))
                    per_window[windows.index(t)]["jump_seqs"] += len(missing)
            if expected is None or seq >= expected:
                expected = seq + 1
    for i, events in lost_events.items():
        per_window[i]["lost_events"] = len(events)
    delivered.notes.append(f"{owed} deliveries owed, {covered_total} covered by gap frames, {after_reset} past "
                           f"the last seq of a life ended by node_reset; "
                           f"{sum(len(v) for v in lost_events.values())} acknowledged events missed by a subscriber")
    checks += [delivered, jumps]

    # --- writes kept --------------------------------------------------------------------
    c = Check("writes kept", "every acknowledged counter write present after the run")
    sets = defaultdict(list)
    for o in h.ops:
        if o["op"] == "set" and o.get("ok"):
            sets[o["ch"]].append(o)
    for final in h.finals:
        ch = final["ch"]
        top = max((o.get("value", 0) for o in sets[ch]), default=0)
        value = final.get("value") or 0
        rev = final.get("rev")
        if final.get("err"):
            c.found(f"{ch}: the final get failed ({final['err']})", shard=shard(ch))
        elif value != rev or value < top:
            c.found(f"{ch}: final value {value} rev {rev}, highest acknowledged {top}", shard=shard(ch))
        seen = {}
        for o in sets[ch]:
            if o.get("rev") in seen:
                c.found(f"{ch}: rev {o['rev']} acknowledged twice ({seen[o['rev']]['w']} at "
                        f"{seen[o['rev']]['t']:.3f}, {o['w']} at {o['t']:.3f}): one of them lost", o["t"], windows,
                        shard=shard(ch))
            seen[o.get("rev")] = o
    c.notes.append(f"{sum(len(v) for v in sets.values())} acknowledged sets on {len(h.finals)} counters")
    checks.append(c)

    # --- holds of channels and locks ----------------------------------------------------
    def holds(take, give):
        """(life, ch, t_ack, end, how): how the hold ended: `give` sent, `told` (the
        connection closed, node_reset, removed) or `end` (held at the end of the run)."""
        result = []
        ops_of = defaultdict(list)
        for o in h.ops:
            if o["op"] in (take, give):
                ops_of[(o["w"], o["c"])].append(o)
        for key, lst in ops_of.items():
            life = h.lives.get(key)
            if life is None:
                continue
            for n, o in enumerate(lst):
                if o["op"] != take or not o.get("ok"):
                    continue
                end, how = life.close, ("end" if life.why == "end" else "told")
                for later in lst[n + 1:]:
                    if later["ch"] == o["ch"] and later["op"] == give:
                        # A give the connection's end cut off (no answer: `conn`) gave
                        # nothing: the close (a node_reset frame, a closed socket) is what
                        # told the holder, even when it sent the give before reading it.
                        if later["ts"] < end and later.get("err") != "conn":
                            end, how = later["ts"], "gave"
                        break
                    if later["ch"] == o["ch"] and later["op"] == take:
                        break
                for t, ch in life.removed:
                    if ch == o["ch"] and o["t"] <= t < end:
                        end, how = t, "told"
                result.append((life, o["ch"], o["t"], end, how))
        return result

    declares = holds("declare", "remove")
    c = Check("one owner", "never two owners of one instance channel")
    by_chan = defaultdict(list)
    for hold in declares:
        by_chan[hold[1]].append(hold)
    told_overlaps = 0
    boundaries = defaultdict(list)
    for ch, lst in by_chan.items():
        lst.sort(key=lambda x: x[2])
        for x in lst:
            boundaries[ch] += [x[2], x[3]]
        for i, x in enumerate(lst):
            for y in lst[i + 1:]:
                if y[2] >= x[3]:
                    break
                if y[0] is x[0]:
                    continue
                if x[4] == "told":
                    told_overlaps += 1
                    continue
                c.found(f"{ch}: {y[0].name()} (client {y[0].client}) got declare ok at {y[2]:.3f} while "
                        f"{x[0].name()} (client {x[0].client}) held it since {x[2]:.3f} and was never told "
                        f"(its hold ended {x[4]} at {x[3]:.3f})", y[2], windows)
    for o in h.ops:
        if o["op"] in ("declare", "remove"):
            boundaries[o["ch"]] += [o["ts"], o["t"]]
    for life in h.lives.values():
        if life.role == "declarer":
            for ch in boundaries:
                boundaries[ch].append(life.close)
    for lst in boundaries.values():
        lst.sort()
    sweeps = defaultdict(dict)
    for s in h.samples:
        if s["what"] == "channels" and not s.get("err"):
            sweeps[s["sweep"]][s["node"]] = s
    split_pairs = set()
    split_samples = 0
    for n, by_node in sorted(sweeps.items()):
        names = sorted(by_node)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                sa, sb = by_node[a], by_node[b]
                if abs(sa["t"] - sb["t"]) > 1.0:
                    continue
                lo, hi = min(sa["ts"], sb["ts"]) - 0.05, max(sa["t"], sb["t"]) + 0.05
                for ch, oa in sa["owners"].items():
                    ob = sb["owners"].get(ch)
                    if ob is None or norm(ob) == norm(oa):
                        continue
                    bl = boundaries.get(ch, [])
                    j = bisect.bisect_left(bl, lo)
                    if j < len(bl) and bl[j] <= hi:
                        continue
                    pair = (ch, norm(oa), norm(ob))
                    split_samples += 1
                    if pair in split_pairs:
                        continue
                    split_pairs.add(pair)
                    c.found(f"{ch}: node {a} said owner {oa}, node {b} said {ob} in sweep {n} at {sa['t']:.3f}", sa["t"],
                            windows)
    finals = {s["node"]: s for s in h.samples if s["what"] == "channels" and s.get("final") and not s.get("err")}
    redis_owner = {r["ch"]: norm(r["owner"]) for r in h.final_owners}
    held_at_end = [x for x in declares if x[4] == "end"]
    held_clients = defaultdict(set)
    for life, ch, t_ack, _, _ in held_at_end:
        held_clients[ch].add(norm(life.client))
        mine = finals.get(life.node)
        if mine is not None and norm(mine["owners"].get(ch)) != norm(life.client):
            c.found(f"{ch}: held at the end by {life.name()} (client {life.client}, since {t_ack:.3f}) but its node "
                    f"names {mine['owners'].get(ch)}", t_ack, windows)
        if redis_owner.get(ch) != norm(life.client):
            c.found(f"{ch}: held at the end by {life.name()} (client {life.client}) but Redis names "
                    f"{redis_owner.get(ch)}", t_ack, windows)
    for node, s in finals.items():
        for ch, owner in s["owners"].items():
            if norm(owner) not in held_clients[ch]:
                c.found(f"{ch}: node {node} names owner {owner} at the end, which holds nothing")
    for ch, owner in redis_owner.items():
        if owner not in held_clients[ch]:
            c.found(f"{ch}: Redis names owner {owner} at the end, which holds nothing")
    c.notes.append(f"{len(declares)} acknowledged declares, {len(held_at_end)} held at the end, {len(sweeps)} sweeps; "
                   f"{told_overlaps} overlaps whose first holder was told; {split_samples} sweeps naming two owners "
                   f"({len(split_pairs)} distinct pairs, each counted once)")
    if not finals:
        c.notes.append("no final sweep recorded")
    checks.append(c)

    locks = holds("lock", "unlock")
    c = Check("locks told", "no lock lost while its holder still held it and was never told")
    lock_samples = defaultdict(list)
    for s in h.samples:
        if s["what"] == "locks" and not s.get("err"):
            lock_samples[s["ch"]].append(s)
    for lst in lock_samples.values():
        lst.sort(key=lambda s: s["ts"])
    deliveries = defaultdict(list)   # data -> where it was delivered
    for life in h.lives.values():
        for t, ch, seq, sub, d in life.events:
            if ch.startswith("chaos.l."):
                deliveries[d].append((t, life))
    pubs_of = defaultdict(list)
    for o in pubs:
        if o["ch"].startswith("chaos.l."):
            pubs_of[(o["w"], o["c"])].append(o)
    told_losses = 0
    checked = 0
    under_lock = []
    for life, ch, t_ack, end, how in locks:
        checked += 1
        evidence = []
        for s in lock_samples.get(ch, []):
            if s["ts"] <= t_ack:
                continue
            if s["ts"] >= end:
                break
            if s["t"] < end and s.get("unlocked"):
                evidence.append((s["t"], f"node {s['node']} listed {s['unlocked']} unlocked at {s['t']:.3f}"))
        for o in pubs_of.get((life.w, life.c), []):
            if t_ack < o["ts"] < end and o.get("d") in deliveries:
                # Not failed: an event published under the lock may reach a node after the
                # unlock did (the docs promise nothing published after the `lock` ok is
                # delivered, and nothing after the `unlock` ok suppressed).
                under_lock.append(f"{ch}: {o['d']!r} published by {life.name()} under its lock (sent {o['ts']:.3f}, "
                                  f"unlock sent {end:.3f}) reached " +
                                  ", ".join(f"{where.name()} at {t:.3f}" for t, where in deliveries[o["d"]]))
        if not evidence:
            continue
        if how == "told":
            told_losses += 1
            continue
        evidence.sort(key=lambda e: e[0])
        c.found(f"{ch}: held by {life.name()} from {t_ack:.3f} to {end:.3f} ({how}), never told; "
                f"{evidence[0][1]}" + (f" (+{len(evidence) - 1} more)" if len(evidence) > 1 else ""),
                evidence[0][0], windows)
    c.notes.append(f"{checked} acknowledged locks, {sum(len(v) for v in lock_samples.values())} locks samples; "
                   f"{told_losses} lost but their holder told; {len(under_lock)} events published under a lock "
                   f"reached a witness (not failed: they may have arrived after the unlock)")
    c.notes += under_lock[:2]
    checks.append(c)

    # --- figures ------------------------------------------------------------------------
    # A node serves when it answers an op that needs Redis: ok, or a definite refusal
    # (`conflict`), not `unavailable` or a lost connection; the monitors' `locks` samples
    # (every 0.5 s on every node) count too. With several shards a fault of one shard (its
    # primary killed or failed over, one node's link to it cut) is judged by the answers
    # that needed that shard: ops on its channels, and for shard 0 the cluster's own records
    # (locks, instance channels, the `locks` samples).
    node_of = {key: life.node for key, life in h.lives.items()}
    ok_times = defaultdict(list)
    ok_on_shard = defaultdict(list)   # (node, shard) -> times
    control_ops = ("lock", "unlock", "declare", "remove")
    fig = [defaultdict(int) for _ in range(shards)]
    for o in h.ops:
        where = 0 if o["op"] in control_ops or o.get("ch") is None else shard(o["ch"])
        if o.get("err"):
            per_window[windows.index(o["t"])]["err:" + o["err"]] += 1
            fig[where]["err:" + o["err"]] += 1
        if o["op"] not in control_ops and o.get("ch") is not None:
            fig[where]["ops"] += 1
            if o.get("ok") and o["op"] in ("pub", "set"):
                fig[where]["acked_" + o["op"] + "s"] += 1
        if o.get("ok") or o.get("err") not in ("unavailable", "conn"):
            ok_times[node_of.get((o["w"], o["c"]))].append(o["t"])
            ok_on_shard[(node_of.get((o["w"], o["c"])), where)].append(o["t"])
    for s in h.samples:
        if s["what"] == "locks" and not s.get("err"):
            ok_times[s["node"]].append(s["t"])
            ok_on_shard[(s["node"], 0)].append(s["t"])
        elif s["what"] == "get":   # with shards: the monitors' probe of one counter per shard
            if s.get("err"):
                fig[shard(s["ch"])]["probe:" + s["err"]] += 1
            else:
                ok_times[s["node"]].append(s["t"])
                ok_on_shard[(s["node"], shard(s["ch"]))].append(s["t"])
    for lst in list(ok_times.values()) + list(ok_on_shard.values()):
        lst.sort()
    channels_on = defaultdict(set)
    for life in h.lives.values():
        for _, ch, _, _, _ in life.events:
            fig[shard(ch)]["events"] += 1
            channels_on[shard(ch)].add(ch)
        for _, ch, _, _, _ in life.gaps:
            fig[shard(ch)]["gap_frames"] += 1
    for o in h.ops:
        if o.get("ch") is not None and o["op"] not in control_ops:
            channels_on[shard(o["ch"])].add(o["ch"])
    for life in h.lives.values():
        for t, ch, _, fr, to in life.gaps:
            per_window[windows.index(t)]["gap_frames"] += 1
            if isinstance(fr, int) and isinstance(to, int):
                per_window[windows.index(t)]["gap_seqs"] += to - fr + 1
        if life.why == "node_reset":
            per_window[windows.index(life.close)]["node_reset"] += 1
        elif life.why not in ("end", None):
            per_window[windows.index(life.close)]["closed"] += 1
    for r in h.errs:
        per_window[windows.index(r["t"])]["error_frames"] += 1
    nodes = h.run.get("nodes") or sorted({life.node for life in h.lives.values() if life.node})

    per_fault = []
    for i, f in enumerate(windows.faults):
        affected = [f["node"]] if f.get("node") else nodes
        recover = []
        stall = []
        for node in affected:
            lst = ok_on_shard.get((node, f["shard"]), []) if f.get("shard") is not None else ok_times.get(node, [])
            j = bisect.bisect_right(lst, f["t1"])
            if j >= len(lst):
                recover.append(None)
                continue
            recover.append((lst[j] - f["t1"]) * 1000)
            k = max(bisect.bisect_left(lst, f["t0"]) - 1, 0)
            longest = 0.0
            for a, b in zip(lst[k:j], lst[k + 1:j + 1]):
                longest = max(longest, b - a)
            stall.append(longest * 1000)
        figures = {"kind": label(f), "node": f.get("node"), "t0": f["t0"], "t1": f["t1"],
                   "recover_ms": None if None in recover or not recover else round(max(recover)),
                   "stall_ms": round(max(stall)) if stall else None}
        figures.update(per_window[i])
        for chk in checks:
            if chk.by_window.get(i):
                figures[chk.name] = chk.by_window[i]
        per_fault.append(figures)
        if f.get("shard") is not None and f["shard"] < shards and not f.get("failed"):
            k = fig[f["shard"]]
            k[{"redis": "kills", "failover": "failovers", "link": "link_faults"}.get(f["kind"], f["kind"])] += 1
            if f["kind"] in ("redis", "failover") and figures["recover_ms"] is not None:
                k.setdefault("recover", []).append(figures["recover_ms"])

    kinds = {}
    rows = [("none", -1)] + [(label(f), i) for i, f in enumerate(windows.faults)]
    for kind, i in rows:
        k = kinds.setdefault(kind, {"injected": 0, "recover_ms": [], "stall_ms": []})
        if i >= 0:
            k["injected"] += 1
            pf = per_fault[i]
            if pf["recover_ms"] is not None:
                k["recover_ms"].append(pf["recover_ms"])
            if pf["stall_ms"] is not None:
                k["stall_ms"].append(pf["stall_ms"])
        for key, value in per_window[i].items():
            k[key] = k.get(key, 0) + value
        for chk in checks:
            if chk.by_window.get(i):
                k[chk.name] = k.get(chk.name, 0) + chk.by_window[i]
    for k in kinds.values():
        for key in ("recover_ms", "stall_ms"):
            values = sorted(k.pop(key))
            k[key + "_p50"] = values[(len(values) - 1) // 2] if values else None
            k[key + "_max"] = values[-1] if values else None

    per_shard = []
    for n, k in enumerate(fig):
        recover = sorted(k.pop("recover", []))
        row = {"shard": n, "channels": sorted(channels_on[n]), **k,
               "failover_recover_ms_p50": recover[(len(recover) - 1) // 2] if recover else None,
               "failover_recover_ms_max": recover[-1] if recover else None}
        for chk in checks:
            if chk.by_shard.get(n):
                row[chk.name] = chk.by_shard[n]
        per_shard.append(row)

    return {"ok": all(chk.ok for chk in checks), "history": path, "lines": h.lines, "shards": per_shard,
            "checks": [chk.summary() for chk in checks], "kinds": kinds, "faults": per_fault,
            "ops": len(h.ops), "acknowledged_pubs": len(acked),
            "events": sum(len(life.events) for life in h.lives.values()),
            "lives": len(h.lives)}


COLUMNS = [("injected", "n"), ("recover_ms_p50", "recover p50 ms"), ("recover_ms_max", "max"),
           ("stall_ms_p50", "stall p50 ms"), ("stall_ms_max", "max"), ("err:unavailable", "unavailable"),
           ("gap_frames", "gap frames"), ("gap_seqs", "gap seqs"), ("node_reset", "node_reset"),
           ("closed", "other closes"), ("lost_events", "acked events missed"), ("lost", "deliveries missed"),
           ("covered", "covered by gap"), ("jump_seqs", "jump seqs"),
           ("seq unique", "seq twice"), ("seq order", "backwards"), ("writes kept", "writes lost"),
           ("one owner", "two owners"), ("locks told", "locks lost")]


SHARD_COLUMNS = [("channels", "channels"), ("ops", "ops"), ("acked_pubs", "acked pubs"), ("acked_sets", "acked sets"),
                 ("events", "events"), ("kills", "primary kills"), ("failovers", "planned failovers"),
                 ("failover_recover_ms_p50", "recover p50 ms"), ("failover_recover_ms_max", "max"),
                 ("link_faults", "link faults"), ("err:unavailable", "unavailable"),
                 ("probe:unavailable", "probes unavailable"), ("gap_frames", "gap frames"),
                 ("seq unique", "seq twice"), ("seq order", "backwards"), ("acked delivered", "deliveries missed"),
                 ("no silent jump", "jumps"), ("writes kept", "writes lost")]


def table(header, rows, out):
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)), file=out)


def report(verdict, out=sys.stderr):
    for chk in verdict["checks"]:
        extra = f", {chk['counted_only']} counted at Redis kills" if chk["counted_only"] else ""
        print(f"{'PASS' if chk['ok'] else 'FAIL'} history: {chk['name']}: {chk['what']} ({chk['count']} found{extra})",
              file=out)
        for note in chk["notes"]:
            print(f"    {note}", file=out)
        for example in chk["examples"]:
            print(f"    e.g. {example}", file=out)
    print(f"figures per fault kind (a window runs from a fault's start to the next's; 'none': before the first):",
          file=out)
    table(["kind"] + [title for _, title in COLUMNS],
          [[kind] + ["" if figures.get(key) is None else str(figures.get(key)) for key, _ in COLUMNS]
           for kind, figures in verdict["kinds"].items()], out)
    if len(verdict.get("shards", [])) > 1:
        print("figures per shard (ops and events on the channels ShardMap places there; lock, unlock, declare "
              "and remove are shard 0's records and left out; a check's figure counts what it found there, "
              "failing or counted at that shard's primary kills; recover: from the end of the shard's kill or "
              "failover to the first answer on its channels on every node):", file=out)
        def cell(row, key):
            value = row.get(key)
            if key == "channels":
                return str(len(value))
            return "" if value is None else str(value)
        table(["shard"] + [title for _, title in SHARD_COLUMNS],
              [[str(row["shard"])] + [cell(row, key) for key, _ in SHARD_COLUMNS] for row in verdict["shards"]], out)
        for row in verdict["shards"]:
            print(f"    shard {row['shard']}: {', '.join(row['channels'])}", file=out)
    print(f"{'PASS' if verdict['ok'] else 'FAIL'} history: {verdict['lines']} lines, {verdict['ops']} ops, "
          f"{verdict['events']} events, {verdict['lives']} connection lives", file=out)


def self_test():
    """Synthetic histories with a known verdict: the checks find what they must (gap and
    node_reset frames included, which the daemon does not send yet) and nothing else."""
    import os
    import tempfile

    lines = [{"k": "run", "nodes": ["a", "b", "c"], "grace": 2},
             {"k": "fault", "kind": "pause", "node": "b", "t0": 10.0, "t1": 14.0, "t": 14.0}]

    def life(w, c, role, node, client, t):
        lines.append({"k": "open", "w": w, "c": c, "role": role, "node": node, "life": 1, "client": client, "t": t})

    def op(w, c, name, ch, ts, t, ok=True, **fields):
        lines.append({"k": "op", "w": w, "c": c, "op": name, "ch": ch, "ts": ts, "t": t, "ok": ok, **fields})

    def events(w, c, ch, seqs, t):
        for n, seq in enumerate(seqs):
            lines.append({"k": "ev", "w": w, "c": c, "ch": ch, "seq": seq, "sub": "s", "d": f"p.{seq}",
                          "t": t + n * 0.01})

    ch = "chaos.s.0"
    life("p", 1, "publisher", "a", "c1", 0.5)
    for seq in range(1, 11):
        op("p", 1, "pub", ch, 1.0 + seq, 1.01 + seq, seq=seq, d=f"p.{seq}")
    # Covered by a gap frame: 6..8 never come, the gap says so.
    life("s1", 1, "subscriber", "b", "c2", 0.6)
    op("s1", 1, "sub", ch, 0.7, 0.8)
    events("s1", 1, ch, [1, 2, 3, 4, 5], 3)
    lines.append({"k": "gap", "w": "s1", "c": 1, "ch": ch, "sub": "s", "fr": 6, "to": 8, "t": 9.5})
    events("s1", 1, ch, [9, 10], 12)
    # Ended by node_reset after 5: owes nothing past 5; the next life replays 6..10 from since 5.
    life("s2", 1, "subscriber", "b", "c3", 0.6)
    op("s2", 1, "sub", ch, 0.7, 0.8)
    events("s2", 1, ch, [1, 2, 3, 4, 5], 3)
    lines.append({"k": "err", "w": "s2", "c": 1, "e": "node_reset", "msg": "declared dead", "t": 14.5})
    lines.append({"k": "close", "w": "s2", "c": 1, "why": "node_reset", "t": 14.5})
    life("s2", 2, "subscriber", "a", "c4", 14.6)
    op("s2", 2, "sub", ch, 14.6, 14.7, since=5, recovered=True)
    events("s2", 2, ch, [6, 7, 8, 9, 10], 14.7)
    # Not owed: seq 2 was sent before this subscription's ok; 1 came anyway (the barrier's
    # meantime), then 3: no silent jump.
    life("s4", 1, "subscriber", "c", "c15", 0.6)
    op("s4", 1, "sub", ch, 0.7, 3.5)
    events("s4", 1, ch, [1, 3, 4, 5, 6, 7, 8, 9, 10], 3.6)
    # Silently missed 6: a lost event and a jump; and 3 twice: backwards.
    life("s3", 1, "subscriber", "c", "c5", 0.6)
    op("s3", 1, "sub", ch, 0.7, 0.8)
    events("s3", 1, ch, [1, 2, 3, 3, 4, 5, 7, 8, 9, 10], 3)
    # Seq 4 given to a second event.
    op("p", 1, "pub", "chaos.s.1", 5.0, 5.1, seq=4, d="q.4")
    op("p", 1, "pub", "chaos.s.1", 6.0, 6.1, seq=4, d="q.5")
    # Two owners: y's declare acknowledged while x held and x never told; then z told (ok).
    life("x", 1, "declarer", "a", "c6", 0.5)
    life("y", 1, "declarer", "b", "c7", 0.5)
    op("x", 1, "declare", "chaos.i.0", 2.0, 2.1)
    op("y", 1, "declare", "chaos.i.0", 3.0, 3.1)
    op("x", 1, "remove", "chaos.i.0", 5.0, 5.1, count=1)
    op("y", 1, "remove", "chaos.i.0", 5.5, 5.6, count=1)
    life("z", 1, "declarer", "b", "c8", 0.5)
    op("z", 1, "declare", "chaos.i.1", 6.0, 6.1)
    op("x", 1, "declare", "chaos.i.1", 7.0, 7.1)
    op("x", 1, "remove", "chaos.i.1", 7.5, 7.6, count=1)
    lines.append({"k": "close", "w": "z", "c": 1, "why": "node_reset", "t": 8.0})
    # Locks: one lost while held and its holder never told; one lost and told.
    life("l", 1, "locker", "b", "c9", 0.5)
    op("l", 1, "lock", "chaos.l.0", 2.0, 2.1)
    lines.append({"k": "sample", "what": "locks", "ch": "chaos.l.0", "node": "c", "sweep": 1, "ts": 3.0, "t": 3.1,
                  "locked": [], "unlocked": ["c10/w"]})
    op("l", 1, "unlock", "chaos.l.0", 5.0, 5.1)
    life("l", 2, "locker", "a", "c11", 5.5)
    op("l", 2, "lock", "chaos.l.0", 6.0, 6.1)
    lines.append({"k": "sample", "what": "locks", "ch": "chaos.l.0", "node": "c", "sweep": 2, "ts": 7.0, "t": 7.1,
                  "locked": [], "unlocked": ["c10/w"]})
    lines.append({"k": "close", "w": "l", "c": 2, "why": "node_reset", "t": 8.0})
    # A lock lost while held whose `unlock` the node_reset cut off unanswered: told, not failed.
    life("u", 1, "locker", "a", "c13", 0.5)
    op("u", 1, "lock", "chaos.l.1", 2.0, 2.1)
    lines.append({"k": "sample", "what": "locks", "ch": "chaos.l.1", "node": "c", "sweep": 3, "ts": 3.0, "t": 3.1,
                  "locked": [], "unlocked": ["c14/w"]})
    op("u", 1, "unlock", "chaos.l.1", 4.0, 4.1, ok=False, err="conn")
    lines.append({"k": "close", "w": "u", "c": 1, "why": "node_reset", "t": 4.1})
    # Counters: rev 2 acknowledged twice (one write lost), the final value below the highest.
    life("k", 1, "counter", "a", "c12", 0.5)
    op("k", 1, "set", "chaos.c.0", 2.0, 2.1, rev=1, value=1)
    op("k", 1, "set", "chaos.c.0", 3.0, 3.1, rev=2, value=2)
    op("k", 1, "set", "chaos.c.0", 4.0, 4.1, rev=2, value=3)
    lines.append({"k": "final", "ch": "chaos.c.0", "value": 2, "rev": 2, "t": 30})
    lines.append({"k": "end", "t": 30})
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    try:
        verdict = check(f.name)
    finally:
        os.unlink(f.name)
    counts = {c["name"]: c["count"] for c in verdict["checks"]}
    expected = {"seq unique": 1, "seq order": 1, "acked delivered": 1, "no silent jump": 1, "writes kept": 2,
                "one owner": 1, "locks told": 1}
    pause = verdict["kinds"]["pause"]
    problems = [f"{name}: {counts.get(name)} found, {n} expected" for name, n in expected.items() if counts.get(name) != n]
    if pause.get("gap_frames") != 1 or pause.get("gap_seqs") != 3 or pause.get("node_reset") != 1:
        problems.append(f"the pause's figures: {pause}")
    if problems:
        report(verdict)
    problems += shard_self_test()
    for problem in problems:
        print("SELF-TEST FAIL:", problem, file=sys.stderr)
    print(("FAIL" if problems else "PASS") + " chaos_check self-test: each check finds its planted fault (gap and "
          "node_reset frames included) and nothing else; the shard placement and a shard's Redis kill excusing "
          "only its own channels", file=sys.stderr)
    return 1 if problems else 0


def shard_self_test():
    """The placement (ShardMapTests' vectors) and the shard rule at Redis kills: a kill of
    shard 1's primary excuses what is found on shard 1's channels, not on shard 2's."""
    import os
    import tempfile

    problems = []
    if (fnv1a64(b"a"), fnv1a64(b"foobar")) != (0xaf63dc4c8601ec8c, 0x85944171f73967e8):
        problems.append("FNV-1a 64 does not give the published vectors")
    if (jump(1, 10), jump(0xdeadbeef, 1000)) != (6, 285) or \
            [shard_of("foobar", n) for n in (2, 3, 5, 10)] != [1, 1, 1, 5]:
        problems.append("jump hash does not give ShardMapTests' buckets")
    one, two = "chaos.c.2", "chaos.s.0"   # shards 1 and 2 of 3
    assert (shard_of(one, 3), shard_of(two, 3)) == (1, 2)
    lines = [{"k": "run", "nodes": ["a"], "grace": 2, "shards": 3},
             {"k": "fault", "kind": "redis", "shard": 1, "t0": 10.0, "t1": 12.0, "t": 12.0}]
    for w, role in (("p", "publisher"), ("s1", "subscriber"), ("s2", "subscriber")):
        lines.append({"k": "open", "w": w, "c": 1, "role": role, "node": "a", "life": 1, "client": w, "t": 1.0})
    for sub, ch in (("s1", one), ("s2", two)):
        lines.append({"k": "op", "w": sub, "c": 1, "op": "sub", "ch": ch, "ts": 1.0, "t": 1.1, "ok": True})
        for seq in (1, 2, 3):
            lines.append({"k": "op", "w": "p", "c": 1, "op": "pub", "ch": ch, "ts": 9.0 + seq, "t": 9.1 + seq,
                          "ok": True, "seq": seq, "d": f"{ch}.{seq}"})
            if seq != 2:   # seq 2 (sent at 11.0, in the kill's window) never arrives
                lines.append({"k": "ev", "w": sub, "c": 1, "ch": ch, "seq": seq, "sub": "s", "d": f"{ch}.{seq}",
                              "t": 9.2 + seq})
    lines.append({"k": "end", "t": 30})
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    try:
        verdict = check(f.name)
    finally:
        os.unlink(f.name)
    delivered = next(c for c in verdict["checks"] if c["name"] == "acked delivered")
    jumps = next(c for c in verdict["checks"] if c["name"] == "no silent jump")
    if (delivered["count"], delivered["counted_only"], jumps["count"], jumps["counted_only"]) != (1, 1, 1, 1):
        problems.append(f"a shard 1 kill: {delivered['count']} missed deliveries and {jumps['count']} jumps failed, "
                        f"{delivered['counted_only']} and {jumps['counted_only']} counted; 1 of each expected (shard "
                        f"2's fail, shard 1's are counted)")
    if [row.get("acked delivered") for row in verdict["shards"]] != [None, 1, 1] or \
            [row.get("kills") for row in verdict["shards"]] != [None, 1, None]:
        problems.append(f"per-shard figures: {verdict['shards']}")
    if problems:
        report(verdict)
    return problems


def main():
    global EXAMPLES
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("history", nargs="?")
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on synthetic histories (gap and node_reset frames included)")
    parser.add_argument("--json")
    parser.add_argument("--examples", type=int, default=EXAMPLES)
    parser.add_argument("--strict", action="store_true",
                        help="fail what is found at Redis primary kills too (counted only by default)")
    args = parser.parse_args()
    EXAMPLES = args.examples
    if args.self_test:
        return self_test()
    if not args.history:
        parser.error("a history file is needed")
    verdict = check(args.history, args.strict)
    report(verdict)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(verdict, f, indent=2)
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
