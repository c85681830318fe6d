#!/usr/bin/env python3
"""scripts/bench_presence.py: presence figures (issue 36) against a release heraldd.

    scripts/bench_presence.py [--members N] [--seconds S] [--channels C] [--no-build]

1. A channel of N members (default 15,000: one connection each, as a member is a connection;
   this machine allows 20,000 open files per process, for the daemon and for this script
   alike, so 100,000 members cannot be opened here): `presence` walked page by page with
   `limit` 100 and 1000, each page timed from request to answer; `count_only` timed too. Also
   run at N/10 to show that a page costs the same whatever the channel's size.
2. Join/leave events per second: one client sends `sub`/`unsub` pairs over C channels (default
   1,000) round robin, pipelined, for S seconds (default 5); a watcher on `$presence.>` counts
   the events it is told (each channel tells at most 100 changes a second, then counts).
Prints a Markdown table for docs/benchmarks.md ("Presence (issue 36)").
"""
import argparse
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import ROOT, Daemon, LineSocket, log, percentile, raise_nofile  # noqa: E402


def open_members(port, n, channel):
    """n connections, each subscribed to `channel` (answers drained after all are sent)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f'{{"op":"sub","ch":"{channel}"}}\n'.encode())
        socks.append(s)
    for s in socks:
        s.settimeout(30)
        got = b""
        while got.count(b"\n") < 2:  # the info line and the sub's answer
            got += s.recv(4096)
    return socks


def walk(port, channel, limit):
    """Every page of `channel`'s members; returns (members seen, per-page ms list)."""
    asker = LineSocket(port, timeout=60)
    seen, times, after = 0, [], None
    while True:
        req = {"op": "presence", "ch": channel, "limit": limit, "rid": 1}
        if after:
            req["after"] = after
        t0 = time.perf_counter()
        asker.send(req)
        page = asker.until(lambda f: f.get("rid") == 1)
        times.append((time.perf_counter() - t0) * 1000)
        seen += len(page.get("members", []))
        after = page.get("next")
        if not after:
            break
    t0 = time.perf_counter()
    asker.send({"op": "presence", "ch": channel, "count_only": True, "rid": 2})
    count = asker.until(lambda f: f.get("rid") == 2)
    count_ms = (time.perf_counter() - t0) * 1000
    asker.sock.close()
    return seen, times, count_ms, count.get("count")


def events_per_second(port, channels, seconds):
    watcher = LineSocket(port, timeout=30)
    watcher.send({"op": "sub", "ch": "$presence.>", "sub": "w", "rid": "w"})
    watcher.until(lambda f: f.get("rid") == "w")
    told = [0]
    stop = threading.Event()

    def watch():
        watcher.sock.settimeout(0.2)
        while not stop.is_set():
            try:
                chunk = watcher.sock.recv(1 << 20)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            if not chunk:
                return
            told[0] += chunk.count(b'"event":"$presence.')
    threading.Thread(target=watch, daemon=True).start()
    churn = socket.create_connection(("127.0.0.1", port))
    churn.recv(4096)
    sent = [0]

    def drain():
        churn.settimeout(0.5)
        while not stop.is_set():
            try:
                if not churn.recv(1 << 20):
                    return
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
    threading.Thread(target=drain, daemon=True).start()
    batch = b"".join(f'{{"op":"sub","ch":"r.{i}","sub":"s{i}"}}\n{{"op":"unsub","sub":"s{i}"}}\n'.encode()
                     for i in range(channels))
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        churn.sendall(batch)
        sent[0] += 2 * channels
    elapsed = time.monotonic() - t0
    time.sleep(1.5)
    stop.set()
    churn.close()
    watcher.sock.close()
    return sent[0] / elapsed, told[0] / elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=15_000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--channels", type=int, default=1_000)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "heraldd"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    binary = os.path.join(ROOT, ".build", "release", "heraldd")
    raise_nofile(args.members + 1_000)
    rows = []
    for n in (args.members // 10, args.members):
        d = Daemon(binary, config={"heartbeat_ms": 0}, nofile=args.members + 1_000)
        try:
            t0 = time.monotonic()
            socks = open_members(d.port, n, "hall")
            log(f"{n:,} members in {time.monotonic() - t0:.1f} s")
            for limit in (100, 1000):
                seen, times, count_ms, count = walk(d.port, "hall", limit)
                rows.append((n, limit, seen, count, percentile(times, 50), percentile(times, 99), sum(times), count_ms))
                log(f"{n:,} members, limit {limit}: {seen:,} seen in {len(times)} pages, page p50 "
                    f"{percentile(times, 50):.2f} ms p99 {percentile(times, 99):.2f} ms, walk {sum(times):.0f} ms, "
                    f"count_only {count_ms:.2f} ms")
            for s in socks:
                s.close()
        finally:
            d.stop()
    d = Daemon(binary, config={"heartbeat_ms": 0})
    try:
        sent, told = events_per_second(d.port, args.channels, args.seconds)
    finally:
        d.stop()
    log(f"churn over {args.channels:,} channels: {sent:,.0f} sub/unsub a second sent, {told:,.0f} presence events a second told")
    print("| members | limit | pages | members seen | page p50 | page p99 | whole walk | `count_only` |")
    print("|---|---|---|---|---|---|---|---|")
    for n, limit, seen, count, p50, p99, total, count_ms in rows:
        pages = -(-seen // limit)
        print(f"| {n:,} | {limit} | {pages} | {seen:,} (count {count:,}) | {p50:.2f} ms | {p99:.2f} ms | {total:.0f} ms | {count_ms:.2f} ms |")
    print()
    print(f"Churn: one client, `sub`/`unsub` pairs over {args.channels:,} watched channels for {args.seconds:g} s: "
          f"{sent:,.0f} changes a second sent, {told:,.0f} join/leave events a second told to a `$presence.>` watcher "
          f"(at most 100 a second per channel, then counts).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
