#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus: valid frames covering every op of docs/protocol.md.

Each seed is one input for `FuzzHarness.run` (Sources/HeraldFuzzHarness): byte 0 picks
config variants, bytes 1-2 where the stream is split in two feeds, then the lines a client
sends. A line starting with 0x01..0x07 is a harness directive: 01 N (switch to slot N),
02 LO HI (advance the clock by (LO | HI<<8) * 10 ms and tick), 03 (hang up the slot),
04 (stop/start reading), 05 (journal records durable), 06 (shutdown), 07 (reply to the
last request token seen). Run: scripts/fuzz_seeds.py [OUT_DIR] (default
FuzzTesting/corpus/seed). Also writes FuzzTesting/herald.dict, the libFuzzer dictionary.
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
        advance(100), b'{"op":"req","ch":"nobody.here","rid":3}',
        b'{"op":"reply","to":"00000000000000000000000000000000","data":1,"rid":4}',
        b'{"op":"req","ch":"math.double","timeout_ms":3600000}', slot(0), HANG_UP],
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
}

# Config variants (byte 0): heartbeat off, small max_pending, drop policy, no history,
# few connections, journaling; auth (0x40) has a seed of its own.
FLAGS = {"": 0x00, "-drop": 0x06, "-journal": 0x20, "-nohistory": 0x09, "-fewconns": 0x10}


def write_seeds(out):
    os.makedirs(out, exist_ok=True)
    for name, lines in SCENARIOS.items():
        stream = b"\n".join(lines) + b"\n"
        variants = FLAGS if name in ("pub-sub", "retained-lists", "heartbeat-slow-consumer", "journal") else {"": 0}
        if name == "journal":
            variants = {"": 0x20}
        if name == "auth":
            variants = {"": 0x40}
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
            "touch", "append", "assign", "splice", "stats", "channels", "pass", "stop"]


def write_dictionary(path):
    with open(path, "w") as f:
        f.write("# libFuzzer dictionary of Herald protocol keywords (scripts/fuzz_seeds.py)\n")
        for word in KEYWORDS:
            f.write('kw_%s="\\"%s\\""\n' % (word, word))
        for i, token in enumerate(['{"op":"', '":', '","', "\\\\u0000", ".*", ".>", "$sys.", "true",
                                   "false", "null", "\\x0a", "\\x0a\\x01\\x01", "\\x0a\\x02\\xff\\x00", "\\x0a\\x03",
                                   "\\x0a\\x04", "\\x0a\\x05", "\\x0a\\x06", "\\x0a\\x07"]):
            f.write('tok_%d="%s"\n' % (i, token.replace('"', '\\"') if not token.startswith("\\x") else token))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "FuzzTesting", "corpus", "seed")
    write_seeds(out)
    write_dictionary(os.path.join(ROOT, "FuzzTesting", "herald.dict"))
