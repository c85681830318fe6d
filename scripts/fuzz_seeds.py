#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus: valid frames covering every op of docs/protocol.md.

Each seed is one input for `FuzzHarness.run` (Sources/HeraldFuzzHarness): byte 0 picks
config variants, bytes 1-2 where the stream is split in two feeds, then the lines a client
sends. A line starting with 0x01..0x08 or 0x0B is a harness directive: 01 N (switch to
slot N), 02 LO HI (advance the clock by (LO | HI<<8) * 10 ms and tick), 03 (hang up the
slot), 04 (stop/start reading), 05 (journal records durable), 06 (shutdown), 07 (reply to
the last request token seen), 08 M (reload: auth mode M&3 = off, basic, guarded, narrowed;
M&0x80 the abuse caps), 0B (hold token verifications / complete the held ones). Flags:
0x01 heartbeat off, 0x02 small max_pending, 0x04 drop, 0x08 no history, 0x10 few
connections, 0x20 journaling, 0x40 auth, 0x80 abuse caps and tiny scan budgets (with 0x40:
user limits, a pbkdf2 user `p`, failed-hello blocking). Run: scripts/fuzz_seeds.py
[OUT_DIR] (default FuzzTesting/corpus/seed). Also writes FuzzTesting/herald.dict, the
libFuzzer dictionary.
"""
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def slot(n):
    return bytes([1, n])


def advance(ms):
    steps = ms // 10
    return bytes([2, steps & 0xFF, steps >> 8])


HANG_UP, PAUSE, DURABLE, SHUTDOWN, REPLY = b"\x03", b"\x04", b"\x05", b"\x06", b"\x07\x01"
HOLD_VERIFICATIONS = b"\x0b"
AUTH_OFF, AUTH_BASIC, AUTH_GUARDED, AUTH_NARROWED = 0, 1, 2, 3


def reload(mode, caps=False):
    return bytes([8, mode | (0x80 if caps else 0)])


def big(n):
    return b'"' + b"z" * n + b'"'

SCENARIOS = {
    "hello-ping-pong-stats": [
        b'{"op":"hello","name":"fuzz","echo":false,"rid":1}', b'{"op":"ping","rid":"p"}',
        b'{"op":"pong","rid":2}', b'{"op":"pong"}', b'{"op":"stats"}'],
    "pub-sub": [
        b'{"op":"sub","ch":"chat.*","sub":"room","rid":1}', b'{"op":"sub","ch":"chat.>","once":true}',
        b'{"op":"sub","ch":"chat.lobby","max":2,"group":"g","args":{"k":[1,2]}}',
        slot(1), b'{"op":"sub","ch":"chat.lobby","group":"g"}',
        b'{"op":"pub","ch":"chat.lobby","data":{"text":"hi"},"rid":1}',
        b'{"op":"pub","ch":"chat.lobby","data":[1,2.5,-3e2,true,null,"\\u00e9"]}',
        slot(0), b'{"op":"subs"}', b'{"op":"channels"}', b'{"op":"channels","ch":"chat.*"}',
        b'{"op":"unsub","sub":"room"}', b'{"op":"unsub","ch":"chat.>"}', b'{"op":"unsub","all":true,"rid":3}'],
    "presence-admin": [
        b'{"op":"hello","info":{"name":"a","instance":"i-1"},"rid":0}', b'{"op":"sub","ch":"$presence.room","sub":"p"}',
        slot(1), b'{"op":"hello","info":{"instance":"i-2"}}', b'{"op":"sub","ch":"room","sub":"r"}',
        b'{"op":"sub","ch":"room","sub":"h","handle":true}', slot(0),
        b'{"op":"presence","ch":"room","rid":1}', b'{"op":"presence","ch":"room","limit":1,"after":"c1","count_only":true}',
        b'{"op":"presence","ch":"room.*"}', b'{"op":"clients","limit":1,"rid":2}', b'{"op":"clients","after":"c1"}',
        b'{"op":"handlers","ch":"room","rid":4}', b'{"op":"handlers","ch":"room.*"}', b'{"op":"handlers"}',
        b'{"op":"kick","client":"c2","rid":3}', b'{"op":"kick","client":"c99"}', b'{"op":"kick","client":"x"}',
        slot(1), b'{"op":"unsub","sub":"r"}', HANG_UP],
    "history-since": [
        b'{"op":"pub","ch":"h.a","data":1}', b'{"op":"pub","ch":"h.a","data":2}',
        b'{"op":"pub","ch":"h.a","data":3}', b'{"op":"sub","ch":"h.a","since":1}',
        b'{"op":"sub","ch":"h.*","since":0,"sub":"x"}', b'{"op":"pub","ch":"h.a","data":4}'],
    "locks": [
        b'{"op":"sub","ch":"l.a","sub":"n"}', slot(1), b'{"op":"sub","ch":"l.*","sub":"w"}',
        slot(0), b'{"op":"lock","ch":"l.a"}', b'{"op":"lock","ch":"l.*","subs":["c2/w","c9/x"]}',
        b'{"op":"lock","sub":"n"}', b'{"op":"locks","ch":"l.a"}', b'{"op":"pub","ch":"l.a","data":1,"rid":1}',
        b'{"op":"unlock","sub":"n"}', b'{"op":"unlock","ch":"l.a"}', b'{"op":"unlock","ch":"l.*","subs":["c2/w"]}',
        b'{"op":"lock","ch":"l.b"}', HANG_UP, slot(1), b'{"op":"pub","ch":"l.a","data":2,"rid":2}'],
    "request-reply": [
        b'{"op":"sub","ch":"math.double","sub":"m"}', slot(1),
        b'{"op":"req","ch":"math.double","data":21,"rid":1}', slot(0), REPLY,
        slot(1), b'{"op":"req","ch":"math.double","data":2,"timeout_ms":50,"rid":2}',
        advance(200), b'{"op":"req","ch":"nobody.here","rid":3}',
        b'{"op":"reply","to":"00000000000000000000000000000000","data":1,"rid":4}',
        b'{"op":"req","ch":"math.double","timeout_ms":3600000}', slot(0), HANG_UP],
    "cancel": [
        b'{"op":"sub","ch":"math.double","sub":"m"}', b'{"op":"sub","ch":"app","sub":"h","handle":true}',
        slot(1), b'{"op":"req","ch":"math.double","data":21,"rid":1}',
        b'{"op":"cancel","of":1,"rid":"c1"}', slot(0), REPLY, slot(1),
        b'{"op":"signal","ch":"app.x","rid":"s"}', b'{"op":"cancel","of":"s"}',
        b'{"op":"cancel","of":"s","rid":2}', b'{"op":"cancel","rid":3}', slot(0),
        b'{"op":"handled","id":"g1","action":"pass","rid":4}', b'{"op":"callback","id":"g1"}'],
    "instances": [
        b'{"op":"declare","ch":"svc.a1","rid":1}', b'{"op":"declare","ch":"svc.a2"}',
        slot(1), b'{"op":"declare","ch":"svc.a1"}', b'{"op":"sub","ch":"$sys.>"}', slot(0),
        b'{"op":"remove","ch":"svc.a1"}', b'{"op":"remove","all":true}', b'{"op":"declare","ch":"svc.a3"}',
        HANG_UP, slot(1), b'{"op":"channels","ch":"$sys.>"}'],
    "signals": [
        b'{"op":"sub","ch":"app.settings","sub":"screen","handle":true,"args":7}',
        b'{"op":"sub","ch":"app","sub":"root","handle":true,"max":1}', slot(1),
        b'{"op":"link","ch":"app.settings.profile","parent":"app.settings"}',
        b'{"op":"signal","ch":"app.settings.profile","data":"save","tag":7,"timeout_ms":100,"rid":1}',
        slot(0), b'{"op":"callback","id":"g1","data":{"progress":1},"rid":9}',
        b'{"op":"handled","id":"g1","action":"pass","rid":2}', advance(200),
        b'{"op":"handled","id":"g1","action":"stop"}', slot(1), b'{"op":"unlink","ch":"app.settings.profile"}',
        b'{"op":"link","ch":"a.b","parent":"a.b.c"}', b'{"op":"signal","ch":"x.y"}',
        b'{"op":"unlink","ch":"nope"}', HANG_UP],
    "retained-values": [
        b'{"op":"set","ch":"app.theme","value":{"mode":"dark"},"rid":1}',
        b'{"op":"set","ch":"app.theme","value":{"mode":"light"},"if_rev":0}',
        b'{"op":"get","ch":"app.theme"}', b'{"op":"touch","ch":"app.theme"}',
        b'{"op":"sub","ch":"app.*","current":true}', b'{"op":"del","ch":"app.theme","if_rev":2}',
        b'{"op":"get","ch":"app.none"}'],
    "retained-lists": [
        b'{"op":"append","ch":"app.todo","value":"milk"}',
        b'{"op":"splice","ch":"app.todo","index":0,"remove":0,"insert":["eggs","tea"]}',
        b'{"op":"assign","ch":"app.todo","index":1,"value":"coffee","if_rev":2}',
        b'{"op":"splice","ch":"app.todo","index":3,"remove":1}',
        b'{"op":"get","ch":"app.todo"}', b'{"op":"append","ch":"app.todo","value":[1,2,3]}',
        b'{"op":"del","ch":"app.todo"}'],
    "errors": [
        b'{"op":"nope"}', b'{"op":1}', b'{}', b'[]', b'{"op":"sub","ch":"a..b"}', b'{"op":"pub","ch":"a.*"}',
        b'{"op":"sub","ch":"x","ch":"y"}', b'{"op":"pub","ch":"a","rid":{"x":1}}', b'   ', b'{"op":"hello",',
        b'{"op":"sub","ch":"q","max":0}', b'{"op":"set","ch":"v"}', b'{"op":"pub","ch":"a","data":"\xff"}',
        b'{"op":"hello","name":"' + b"n" * 300 + b'"}', b'{"op":"pub","ch":"big","data":"' + b"x" * 1100 + b'"}'],
    "heartbeat-slow-consumer": [
        b'{"op":"sub","ch":"flood"}', PAUSE, slot(1), b'{"op":"pub","ch":"flood","data":"' + b"y" * 900 + b'"}',
        b'{"op":"pub","ch":"flood","data":"' + b"y" * 900 + b'"}', b'{"op":"pub","ch":"flood","data":"' + b"y" * 900 + b'"}',
        advance(6000), advance(6000), advance(6000), b'{"op":"stats"}'],
    "auth": [
        b'{"op":"ping"}', b'{"op":"sub","ch":"x.y"}', b'{"op":"hello","token":"b","rid":1}',
        b'{"op":"sub","ch":"x.>","sub":"all"}', b'{"op":"sub","ch":">"}', b'{"op":"sub","ch":"x.*.q"}',
        b'{"op":"pub","ch":"x.y","data":1,"rid":2}', b'{"op":"pub","ch":"x.z","data":2}',
        b'{"op":"set","ch":"y.v","value":3}', b'{"op":"get","ch":"y.v"}', b'{"op":"channels"}',
        b'{"op":"lock","ch":"x.y"}', b'{"op":"signal","ch":"x.y.z"}',
        slot(1), b'{"op":"hello","token":"a"}', b'{"op":"sub","ch":">"}', b'{"op":"pub","ch":"q","data":4}',
        slot(2), b'{"op":"hello","token":"wrong"}', slot(3), advance(600)],
    "journal": [
        b'{"op":"set","ch":"j.v","value":1,"rid":1}', b'{"op":"append","ch":"j.l","value":2}',
        DURABLE, b'{"op":"del","ch":"j.v"}', SHUTDOWN],
    # Issue 12: channels pages (limit, after, next), with tiny scan budgets under 0x80.
    "paging": [
        b'{"op":"pub","ch":"p.a","data":1}', b'{"op":"pub","ch":"p.b"}', b'{"op":"pub","ch":"p.c"}',
        b'{"op":"pub","ch":"p.d"}', b'{"op":"pub","ch":"q.a"}', b'{"op":"sub","ch":"p.e"}',
        b'{"op":"link","ch":"p.f","parent":"p.a"}', b'{"op":"declare","ch":"p.g"}',
        b'{"op":"channels","limit":2,"rid":1}', b'{"op":"channels","limit":2,"after":"p.b"}',
        b'{"op":"channels","ch":"p.*","limit":1,"after":"p.a"}', b'{"op":"channels","ch":"p.*","after":"p.zzz"}',
        b'{"op":"channels","ch":"p.c","after":"p.b"}', b'{"op":"channels","ch":"$sys.>","limit":3}',
        b'{"op":"channels","ch":">","limit":1000,"after":""}', b'{"op":"channels","limit":0}',
        b'{"op":"channels","limit":1001}', b'{"op":"channels","after":5}',
        advance(200), b'{"op":"channels","ch":"p.>","limit":3}'],
    # Issue 12's caps, reachable under 0x80: args, declare, link, lock, max_pending_total.
    "abuse-caps": [
        b'{"op":"sub","ch":"c.1","args":{"k":"0123456789abcdef"}}', b'{"op":"sub","ch":"c.1","args":[1,2],"sub":"ok"}',
        b'{"op":"declare","ch":"c.d1"}', b'{"op":"declare","ch":"c.d2"}', b'{"op":"declare","ch":"c.d3"}',
        b'{"op":"declare","ch":"c.d4"}', b'{"op":"link","ch":"c.l1","parent":"c.p"}',
        b'{"op":"link","ch":"c.l2","parent":"c.p"}', b'{"op":"link","ch":"c.l3","parent":"c.p"}',
        slot(1), b'{"op":"sub","ch":"c.1"}', b'{"op":"sub","ch":"c.*"}', b'{"op":"sub","ch":"c.>"}',
        slot(2), b'{"op":"sub","ch":"c.1"}', slot(0), b'{"op":"lock","ch":"c.1","rid":1}',
        b'{"op":"lock","ch":"c.2"}', b'{"op":"lock","ch":"c.3"}', b'{"op":"lock","ch":"c.4"}',
        b'{"op":"lock","ch":"c.5"}', b'{"op":"locks","ch":"c.1"}', b'{"op":"unlock","ch":"c.1"}',
        b'{"op":"sub","ch":"c.flood"}', PAUSE, slot(1),
        *[b'{"op":"pub","ch":"c.flood","data":' + big(900) + b'}'] * 5, advance(200), advance(200), advance(200)],
    # Records nothing holds are swept at ticks (budget 2 under 0x80: the sweep resumes).
    "records-collected": [
        b'{"op":"pub","ch":"r.1"}', b'{"op":"pub","ch":"r.2"}', b'{"op":"pub","ch":"r.3"}',
        b'{"op":"pub","ch":"r.4"}', b'{"op":"sub","ch":"r.5"}', b'{"op":"pub","ch":"r.5","data":1}',
        b'{"op":"set","ch":"r.6","value":1}', b'{"op":"unsub","ch":"r.5"}', advance(200), advance(200),
        advance(200), b'{"op":"channels","ch":"r.*"}', b'{"op":"pub","ch":"r.1","rid":1}'],
    # Guarded auth (0xC0): 4 slots against max_unauthenticated 3, so slot 0 starts evicted.
    "auth-guarded": [
        slot(1), b'{"op":"hello","token":"a","rid":1}', b'{"op":"sub","ch":"x.>"}',
        b'{"op":"sub","ch":"a.1"}', b'{"op":"sub","ch":"a.2"}', b'{"op":"sub","ch":"a.3"}', b'{"op":"sub","ch":"a.4"}',
        b'{"op":"sub","ch":"a.5"}', b'{"op":"pub","ch":"c.1"}', b'{"op":"pub","ch":"c.2"}', b'{"op":"pub","ch":"c.3"}',
        b'{"op":"pub","ch":"c.4"}', b'{"op":"pub","ch":"c.5","rid":2}',
        slot(2), b'{"op":"hello","token":"b"}', b'{"op":"sub","ch":"x.y"}', b'{"op":"pub","ch":"x.y","data":1}',
        b'{"op":"lock","ch":"x.y"}', b'{"op":"channels"}',
        slot(3), b'{"op":"hello","token":"p","name":"slow","rid":3}', b'{"op":"sub","ch":"p.>"}',
        b'{"op":"pub","ch":"p.q","data":1}', b'{"op":"channels","ch":"p.>"}',
        slot(0), b'{"op":"hello","token":"a"}', slot(3), b'{"op":"hello","token":"a","rid":4}',
        slot(2), b'{"op":"hello","token":"wrong1"}', b'{"op":"hello","token":"wrong2"}',
        b'{"op":"hello","token":"wrong3"}', b'{"op":"hello","token":"a","rid":5}', advance(6000),
        b'{"op":"hello","token":"b","rid":6}', b'{"op":"stats"}'],
    # Held verifications: a second hello with the same token follows the first; one closes
    # while its token is being checked; lines behind a parked hello wait for the verdict.
    "auth-deferred": [
        slot(1), b'{"op":"hello","token":"a"}', HOLD_VERIFICATIONS,
        slot(2), b'{"op":"hello","token":"p","rid":1}', b'{"op":"sub","ch":"p.x"}',
        slot(3), b'{"op":"hello","token":"p","rid":2}', b'{"op":"pub","ch":"p.x","data":1}',
        slot(0), b'{"op":"hello","token":"nope"}', HANG_UP, HOLD_VERIFICATIONS,
        slot(2), b'{"op":"channels","ch":"p.>","rid":3}'],
    # SIGHUP: rights narrowed (locks, links, declarations, reply tokens, signal offers go),
    # a user renamed, a pbkdf2 credential re-salted, auth off and on again.
    "reload": [
        slot(1), b'{"op":"hello","token":"a","rid":1}', slot(2), b'{"op":"hello","token":"b","rid":2}',
        b'{"op":"sub","ch":"x.k","sub":"k"}', b'{"op":"sub","ch":"x.k","sub":"h","handle":true}',
        b'{"op":"sub","ch":"x.w.1"}', b'{"op":"lock","ch":"x.y"}', b'{"op":"lock","ch":"x.k"}',
        b'{"op":"link","ch":"x.w.2","parent":"x.y"}', b'{"op":"declare","ch":"x.w.3"}',
        b'{"op":"declare","ch":"x.v"}', slot(3), b'{"op":"hello","token":"p"}', b'{"op":"sub","ch":"p.1"}',
        slot(1), b'{"op":"declare","ch":"x.o"}', b'{"op":"link","ch":"x.lk","parent":"z.t"}',
        slot(2), b'{"op":"channels","ch":"x.*","rid":8}',
        slot(1), b'{"op":"req","ch":"x.k","data":1,"timeout_ms":60000,"rid":3}',
        b'{"op":"signal","ch":"x.k.m","data":"s","timeout_ms":60000,"rid":4}',
        reload(AUTH_NARROWED), slot(2), REPLY, b'{"op":"channels","ch":"x.*","rid":5}', b'{"op":"locks","ch":"x.k"}',
        slot(1), b'{"op":"channels","rid":6}', reload(AUTH_OFF), slot(2), b'{"op":"sub","ch":">"}',
        reload(AUTH_GUARDED, caps=True), slot(1), b'{"op":"channels","rid":7}', reload(AUTH_BASIC)],
    # Auth switched on by a reload: a connection that gave a token keeps going, one that did
    # not is closed.
    "reload-auth-on": [
        b'{"op":"hello","token":"a","name":"x"}', b'{"op":"sub","ch":"y.1"}', slot(1), b'{"op":"sub","ch":"y.*"}',
        slot(2), b'{"op":"hello","token":"b"}', b'{"op":"sub","ch":"x.1"}', reload(AUTH_BASIC),
        slot(0), b'{"op":"pub","ch":"y.1","data":1,"rid":1}', slot(2), b'{"op":"pub","ch":"x.1","rid":2}',
        reload(AUTH_OFF)],
}

# Config variants (byte 0): heartbeat off, small max_pending, drop policy, no history,
# few connections, journaling; auth (0x40) has a seed of its own.
FLAGS = {"": 0x00, "-drop": 0x06, "-journal": 0x20, "-nohistory": 0x09, "-fewconns": 0x10}


# Scenarios that run under variants of their own rather than FLAGS or none.
VARIANTS = {
    "journal": {"": 0x20},
    "auth": {"": 0x40},
    "paging": {"": 0x00, "-budgets": 0x80, "-budgets-nohistory": 0x88},
    "abuse-caps": {"": 0x80, "-drop": 0x86, "-nohistory": 0x88},
    "records-collected": {"": 0x08, "-budgets": 0x88, "-journal": 0xA8},
    "auth-guarded": {"": 0xC0, "-nohistory": 0xC8},
    "auth-deferred": {"": 0xC0},
    "reload": {"": 0xC0, "-basic": 0x40},
    "reload-auth-on": {"": 0x00},
}


def write_seeds(out):
    os.makedirs(out, exist_ok=True)
    for name, lines in SCENARIOS.items():
        stream = b"\n".join(lines) + b"\n"
        variants = FLAGS if name in ("pub-sub", "retained-lists", "heartbeat-slow-consumer") else {"": 0}
        variants = VARIANTS.get(name, variants)
        for suffix, flags in variants.items():
            split = int(hashlib.sha1(stream).hexdigest(), 16) % (len(stream) + 1)
            data = bytes([flags, split & 0xFF, split >> 8 & 0xFF]) + stream
            with open(os.path.join(out, name + suffix), "wb") as f:
                f.write(data)


KEYWORDS = ["op", "rid", "ch", "sub", "data", "name", "echo", "once", "max", "group", "args",
            "current", "since", "handle", "all", "subs", "timeout_ms", "to", "id", "action", "tag",
            "parent", "value", "if_rev", "index", "remove", "insert",
            "hello", "ping", "pong", "unsub", "pub", "req", "reply", "lock", "unlock", "locks",
            "declare", "signal", "handled", "callback", "link", "unlink", "set", "get", "del",
            "touch", "append", "assign", "splice", "stats", "channels", "pass", "stop",
            "token", "limit", "after", "next", "truncated", "owned", "cancel", "of",
            "presence", "count_only", "info", "instance", "clients", "kick", "client", "$presence.",
            "handlers"]


def write_dictionary(path):
    with open(path, "w") as f:
        f.write("# libFuzzer dictionary of Herald protocol keywords (scripts/fuzz_seeds.py)\n")
        for word in KEYWORDS:
            f.write('kw_%s="\\"%s\\""\n' % (word, word))
        for i, token in enumerate(['{"op":"', '":', '","', "\\\\u0000", ".*", ".>", "$sys.", "true",
                                   "false", "null", "\\x0a", "\\x0a\\x01\\x01", "\\x0a\\x02\\xff\\x00", "\\x0a\\x03",
                                   "\\x0a\\x04", "\\x0a\\x05", "\\x0a\\x06", "\\x0a\\x07",
                                   "\\x0a\\x08\\x00", "\\x0a\\x08\\x01", "\\x0a\\x08\\x02", "\\x0a\\x08\\x83",
                                   "\\x0a\\x0b", '"token":"p"', '"token":"a"', '"token":"b"',
                                   '"limit":1', '"after":"', '"args":{"k":"0123456789abcdef"}',
                                   '"timeout_ms":60000']):
            f.write('tok_%d="%s"\n' % (i, token.replace('"', '\\"') if not token.startswith("\\x") else token))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "FuzzTesting", "corpus", "seed")
    write_seeds(out)
    write_dictionary(os.path.join(ROOT, "FuzzTesting", "herald.dict"))
