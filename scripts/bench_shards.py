#!/usr/bin/env python3
"""Helper of `scripts/bench --cluster --shards LIST` (issue 33): snapshots of every shard's
Redis counters and of the processes' CPU around each phase, one JSON line per phase, and the
report (throughput side by side, the split per shard, the projection to one core per Redis).

    bench_shards.py snap --redis P0,P1,.. --pids a=PID,b=PID,c=PID,redis0=PID,..   (JSON on stdout)
    bench_shards.py record --shards N --rep R --phase pub|set1|set3 --before F --after F
                           --bench F1[,F2,..] --bench-cpu C1[,C2,..]           (JSON line on stdout)
    bench_shards.py report RESULTS.jsonl                                        (markdown on stdout)

What a snapshot holds, per shard: `INFO commandstats` (calls and usec of every command; the
data-path scripts are EVALSHA), `INFO cpu` (used_cpu_user + used_cpu_sys: Redis's own CPU,
its main thread and background threads), and the channels' own counters read back from Redis
(`seq` of `herald:m:bench.c*`, `rev` of `herald:m:bench.state.*`): the number of publishes and
of sets that shard ran, counted by Redis itself, and which shard holds which channel (checked
against the placement: jump consistent hash over FNV-1a 64 of the name). Per process: utime +
stime from /proc/PID/stat. For the machine: the busy ticks of /proc/stat's `cpu` line.
"""
import json
import os
import socket
import statistics
import sys
import time

PREFIX = "herald:"
QUIET = 0.25  # cores other work may take during a run counted as quiet
TICK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ placement (ShardMap.swift)
# One Python copy of the placement, chaos_check.py's (checked there against ShardMapTests'
# vectors by its --self-test).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos_check import shard_of  # noqa: E402


# ------------------------------------------------------------------ a minimal RESP client
class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise OSError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise OSError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def pipeline(self, commands):
        out = bytearray()
        for args in commands:
            out += b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(bytes(out))
        return [self._reply() for _ in commands]

    def call(self, *args):
        return self.pipeline([args])[0]


def info(r, section):
    text = r.call("INFO", section).decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def shard_snapshot(port):
    r = Redis(port)
    stats = {}
    for k, v in info(r, "commandstats").items():
        if k.startswith("cmdstat_"):
            fields = dict(p.split("=", 1) for p in v.split(","))
            stats[k[len("cmdstat_"):]] = {"calls": int(fields.get("calls", 0)), "usec": int(fields.get("usec", 0))}
    cpu = info(r, "cpu")
    keys, cursor = [], b"0"
    while True:
        cursor, batch = r.call("SCAN", cursor, "MATCH", PREFIX + "m:bench.*", "COUNT", 1000)
        keys += [k.decode() for k in batch]
        if cursor == b"0":
            break
    channels = {}
    if keys:
        replies = r.pipeline([("HMGET", k, "seq", "rev") for k in keys])
        for k, (seq, rev) in zip(keys, replies):
            channels[k[len(PREFIX) + 2:]] = [int(seq or 0), int(rev or 0)]
    r.sock.close()
    return {"port": port, "commandstats": stats,
            "cpu_s": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
            "cpu_main_s": float(cpu.get("used_cpu_user_main_thread", 0)) + float(cpu.get("used_cpu_sys_main_thread", 0)),
            "channels": channels}


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)
    except OSError:
        return None


def machine_busy_s():
    """Busy, total, interrupt (irq + softirq: loopback TCP is mostly softirq work, only partly
    charged to the process that sent) and steal (the host ran someone else) seconds so far."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    ticks = [int(x) for x in parts[:8]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle - ticks[7]) / TICK, sum(ticks) / TICK, (ticks[5] + ticks[6]) / TICK, ticks[7] / TICK


def cmd_snap(argv):
    args = dict(zip(argv[::2], argv[1::2]))
    ports = [int(p) for p in args["--redis"].split(",")]
    pids = dict(item.split("=") for item in args.get("--pids", "").split(",") if item)
    busy, total, irq, steal = machine_busy_s()
    snap = {"time": time.monotonic(), "machine_busy_s": busy, "machine_total_s": total,
            "machine_irq_s": irq, "machine_steal_s": steal,
            "procs": {name: proc_cpu_s(int(pid)) for name, pid in pids.items()},
            "shards": [shard_snapshot(p) for p in ports]}
    json.dump(snap, sys.stdout)
    print()


def cmd_record(argv):
    args = dict(zip(argv[::2], argv[1::2]))
    n = int(args["--shards"])
    before = json.load(open(args["--before"]))
    after = json.load(open(args["--after"]))
    benches, errors = [], []
    for path in args["--bench"].split(","):
        try:
            line = [l for l in open(path) if l.startswith("{")][-1]
            benches.append(json.loads(line))
        except (OSError, IndexError, ValueError):
            err = path.rsplit(".", 1)[0] + ".err"
            text = open(err).read() if os.path.exists(err) else ""
            errors.append(f"{os.path.basename(path)}: " + " ".join(text.split())[:300])
    gen_cpu = 0.0
    for path in args["--bench-cpu"].split(","):
        try:
            u, s = open(path).read().split()[:2]
            gen_cpu += float(u) + float(s)
        except (OSError, ValueError):
            pass
    wall = after["time"] - before["time"]
    shards = []
    misplaced = []
    for k, (b, a) in enumerate(zip(before["shards"], after["shards"])):
        ev_b = b["commandstats"].get("evalsha", {"calls": 0, "usec": 0})
        ev_a = a["commandstats"].get("evalsha", {"calls": 0, "usec": 0})
        all_calls = sum(v["calls"] for v in a["commandstats"].values()) - sum(v["calls"] for v in b["commandstats"].values())
        all_usec = sum(v["usec"] for v in a["commandstats"].values()) - sum(v["usec"] for v in b["commandstats"].values())
        pubs = sets = 0
        chans = {"pub": 0, "set": 0}
        for ch, (seq, rev) in a["channels"].items():
            old = b["channels"].get(ch, [0, 0])
            if ch.startswith("bench.c"):
                pubs += seq - old[0]
                chans["pub"] += 1
            elif ch.startswith("bench.state."):
                sets += rev - old[1]
                chans["set"] += 1
            if shard_of(ch, n) != k:
                misplaced.append(f"{ch} on shard {k}, placement says {shard_of(ch, n)}")
        shards.append({"evalsha_calls": ev_a["calls"] - ev_b["calls"], "evalsha_usec": ev_a["usec"] - ev_b["usec"],
                       "all_calls": all_calls, "all_usec": all_usec,
                       "cpu_s": a["cpu_s"] - b["cpu_s"], "cpu_main_s": a["cpu_main_s"] - b["cpu_main_s"],
                       "pubs": pubs, "sets": sets, "channels": chans})
    procs = {}
    for name, v in after["procs"].items():
        if v is not None and before["procs"].get(name) is not None:
            procs[name] = v - before["procs"][name]
    row = {"shards": n, "rep": int(args["--rep"]), "phase": args["--phase"], "wall_s": wall,
           "machine_busy_s": after["machine_busy_s"] - before["machine_busy_s"],
           "machine_total_s": after["machine_total_s"] - before["machine_total_s"],
           "machine_irq_s": after.get("machine_irq_s", 0) - before.get("machine_irq_s", 0),
           "machine_steal_s": after.get("machine_steal_s", 0) - before.get("machine_steal_s", 0),
           "generator_cpu_s": gen_cpu, "procs": procs, "shard": shards, "misplaced": misplaced[:20]}
    if errors:
        row["error"] = "; ".join(errors)
    else:
        row["rate"] = sum(bch["msgs_per_sec"] for bch in benches)
        row["seconds"] = max(bch["seconds"] for bch in benches)
        row["count"] = sum(bch["count"] for bch in benches)
        row["delivered"] = sum(bch["delivered"] for bch in benches)
        row["lost"] = sum(bch.get("lost", 0) for bch in benches)
        if args["--phase"] == "pub":
            # the channels workload counts deliveries (2 per publish: its channel's subscriber
            # and the wildcard); publishes/s = publishes sent / (first publish .. last delivery)
            row["rate"] = benches[0]["count"] / benches[0]["seconds"] if benches[0]["seconds"] > 0 else 0
            row["delivered_per_s"] = benches[0]["msgs_per_sec"]
    json.dump(row, sys.stdout)
    print()


# ------------------------------------------------------------------ report
PHASES = [("pub", "publishes/s, 1,000 channels + a wildcard (publisher on a, subscribers on b, c)", "pubs", "publish"),
          ("set1", "acknowledged `set`s/s, one connection on a, 256 in flight", "sets", "set"),
          ("set3", "acknowledged `set`s/s, one connection on each of a, b, c at once, summed", "sets", "set")]


def fmt_rate(v):
    return f"{v / 1e6:.2f} M" if v >= 1e6 else f"{v / 1e3:.1f} k"


def pct(v):
    return f"{v:+.1f} %"


def cmd_report(argv):
    rows = [json.loads(l) for l in open(argv[0]) if l.strip()]
    counts = sorted({r["shards"] for r in rows})
    med = statistics.median
    out = []
    p = out.append
    ok = {(r["shards"], r["phase"]): [] for r in rows}
    for r in rows:
        if "error" not in r:
            ok[(r["shards"], r["phase"])].append(r)
    failed = [r for r in rows if "error" in r]

    def others(r):
        """Cores other work took during the phase: busy - interrupts - the benchmark's processes."""
        mine = sum(sh["cpu_s"] for sh in r["shard"]) + sum(r["procs"].get(x, 0) for x in ("a", "b", "c"))
        return (r["machine_busy_s"] - r.get("machine_irq_s", 0) - mine - r["generator_cpu_s"]) / r["wall_s"]

    # ---- table 1: throughput side by side
    p("### Throughput, side by side (median of the runs, best in brackets)")
    p("")
    p("| what | " + " | ".join(f"{n} shard{'s' if n > 1 else ''}" for n in counts) + " |")
    p("|---|" + "---|" * len(counts))
    for phase, text, _, _ in PHASES:
        cells = []
        for n in counts:
            rs = ok.get((n, phase), [])
            if not rs:
                cells.append("**FAILED**")
                continue
            v = [r["rate"] for r in rs]
            lost = sum(r.get("lost", 0) for r in rs)
            note = f" ({fmt_rate(max(v))})" if len(v) > 1 else ""
            cells.append(f"{fmt_rate(med(v))}{note}" + (f", {lost} lost" if lost else ""))
        p(f"| {text} | " + " | ".join(cells) + " |")
    p("")
    p(f"The same, only the runs during which other work took under {QUIET} cores (median; runs counted; "
      "in brackets the busiest shard's Redis CPU ÷ run time, 1.00 = its core full, and the machine's busy "
      "cores, of " + str(os.cpu_count()) + "):")
    p("")
    p("| what | " + " | ".join(f"{n} shard{'s' if n > 1 else ''}" for n in counts) + " |")
    p("|---|" + "---|" * len(counts))
    for phase, text, _, _ in PHASES:
        cells = []
        for n in counts:
            rs = [r for r in ok.get((n, phase), []) if others(r) < QUIET]
            if not rs:
                cells.append("no quiet run")
                continue
            redis_max = med([max(sh["cpu_s"] for sh in r["shard"]) / r["seconds"] for r in rs])
            busy = med([r["machine_busy_s"] / r["wall_s"] for r in rs])
            cells.append(f"{fmt_rate(med([r['rate'] for r in rs]))} [{len(rs)}] (Redis {redis_max:.2f}, machine {busy:.2f})")
        p(f"| {text} | " + " | ".join(cells) + " |")
    p("")
    p("Each run, in the order run, with the cores other work on the machine took meanwhile (\"others\" "
      "below) in brackets: " + "; ".join(
        f"{n} shard(s) {phase}: " + ", ".join(f"{fmt_rate(r['rate'])} ({others(r):.2f})" for r in ok.get((n, phase), []))
        for n in counts for phase, *_ in PHASES) + ".")
    p("")

    # ---- table 2: the split per shard
    p("### The split per shard (all runs of a shard count pooled)")
    p("")
    p("Ops are counted by Redis itself: the `seq` (publishes) and `rev` (sets) the phase added to the "
      "benchmark's channels on each shard. EVALSHA calls and µs are from `INFO commandstats` (µs: time "
      "inside the command); Redis CPU is `used_cpu_user + used_cpu_sys` from `INFO cpu` (the whole "
      "process, its network reads and writes included), taken before and after each phase. ± is the "
      "shard's difference from the mean over the shards.")
    p("")
    p("The `pub` phase's EVALSHA calls are batches (one `publish` call per shard per loop pass of node a, "
      "carrying many events), and shard 0's count also holds the workload's 1,000 subscribes and "
      "unsubscribes (the `interest` script: the cluster's records live on shard 0), so its calls are "
      "not a split of the publishes; the ops are. A `set` is one EVALSHA on its channel's shard. "
      "The commandstats µs are time inside the call, wall time: on a loaded machine they include "
      "the time Redis was preempted, which `INFO cpu` does not.")
    p("")
    p("| shards | phase | shard | ops | ops ± mean | EVALSHA calls | calls ± mean | ops per call | Redis CPU µs/op | CPU ± mean | EVALSHA µs/op | Redis CPU ÷ run time (1.00 = one core) |")
    p("|---|---|---|---|---|---|---|---|---|---|---|---|")
    split = {}
    worst_ops_dev = {}
    for n in counts:
        for phase, _, opkey, _ in PHASES:
            rs = ok.get((n, phase), [])
            if not rs:
                continue
            ops = [sum(r["shard"][k][opkey] for r in rs) for k in range(n)]
            calls = [sum(r["shard"][k]["evalsha_calls"] for r in rs) for k in range(n)]
            usec = [sum(r["shard"][k]["evalsha_usec"] for r in rs) for k in range(n)]
            cpu = [sum(r["shard"][k]["cpu_s"] for r in rs) for k in range(n)]
            secs = sum(r["seconds"] for r in rs)
            total = sum(ops)
            mo, mc, mcpu = total / n, sum(calls) / n, sum(cpu) / n
            split[(n, phase)] = (ops, cpu, secs)
            worst_ops_dev[(n, phase)] = (max(abs(o / mo - 1) for o in ops) if mo else 0,
                                         max(abs(c / mcpu - 1) for c in cpu) if mcpu else 0)
            for k in range(n):
                per_op = cpu[k] / ops[k] * 1e6 if ops[k] else float("nan")
                p(f"| {n} | {phase} | {k} | {ops[k]:,} | {pct(100 * (ops[k] / mo - 1)) if n > 1 and mo else '–'} | "
                  f"{calls[k]:,} | {pct(100 * (calls[k] / mc - 1)) if n > 1 and mc else '–'} | "
                  f"{ops[k] / calls[k] if calls[k] else 0:.1f} | {per_op:.1f} | "
                  f"{pct(100 * (cpu[k] / mcpu - 1)) if n > 1 and mcpu else '–'} | "
                  f"{usec[k] / ops[k] if ops[k] else float('nan'):.1f} | {cpu[k] / secs:.2f} |")
    p("")
    verdicts = []
    for (n, phase), (dev, cdev) in sorted(worst_ops_dev.items()):
        if n > 1:
            verdicts.append(f"{n} shards {phase}: ops {100 * dev:.1f} %, Redis CPU {100 * cdev:.1f} % "
                            f"({'within' if max(dev, cdev) <= 0.15 else '**outside**'})")
    if verdicts:
        p("Largest difference of a shard from the mean (the acceptance: each shard within ±15 %): "
          + "; ".join(verdicts) + ".")
        p("")
    misplaced = sorted({m for r in rows for m in r.get("misplaced", [])})
    if misplaced:
        p(f"**Channels found on a shard the placement does not give ({len(misplaced)}):** " + "; ".join(misplaced[:10]))
    else:
        p("Every benchmark channel was found on the shard that jump consistent hash over FNV-1a 64 gives "
          "(computed again here in Python from the names, independently of the engine).")
    p("")

    # ---- table 3: the projection
    p("### Projection: one core per Redis")
    p("")
    p("Bound of shard k = 1 s ÷ (Redis CPU µs per op on shard k × shard k's share of the ops); the "
      "projection is the least bound over the shards (the shard that fills its core first). Assumes "
      "Redis runs each shard's commands on one thread (it does: scripts, commands, network), that a "
      "shard's CPU per op stays what was measured here, and that nothing else (nodes, generator) is "
      "the limit; the last columns say whether that last part holds.")
    p("")
    p("| shards | phase | measured ops/s (median) | bound per shard (ops/s) | projection, one core per Redis | projection ÷ measured | nodes' CPU µs/op (a, b, c) | node bound: 1 s ÷ the busiest node's µs/op | one core per Redis and per node: the lesser |")
    p("|---|---|---|---|---|---|---|---|---|")
    proj = {}
    for n in counts:
        for phase, _, opkey, _ in PHASES:
            rs = ok.get((n, phase), [])
            if (n, phase) not in split or not rs:
                continue
            ops, cpu, _ = split[(n, phase)]
            total = sum(ops)
            bounds = []
            for k in range(n):
                share = ops[k] / total if total else 0
                per_op = cpu[k] / ops[k] if ops[k] else 0
                bounds.append(1 / (per_op * share) if per_op and share else float("inf"))
            projection = min(bounds)
            measured = med([r["rate"] for r in rs])
            proj[(n, phase)] = (projection, measured)
            nodes = []
            for name in ("a", "b", "c"):
                c = sum(r["procs"].get(name, 0) for r in rs)
                nodes.append(c / total * 1e6 if total else 0)
            node_bound = 1e6 / max(nodes) if max(nodes) else float("inf")
            p(f"| {n} | {phase} | {fmt_rate(measured)} | " + ", ".join(fmt_rate(b) for b in bounds) +
              f" | **{fmt_rate(projection)}** | {projection / measured:.1f}× | " +
              ", ".join(f"{v:.1f}" for v in nodes) + f" | {fmt_rate(node_bound)} | {fmt_rate(min(projection, node_bound))} |")
    p("")
    base = {phase: proj[(1, phase)][0] for phase, *_ in PHASES if (1, phase) in proj}
    if base:
        lines = []
        for n in counts:
            if n == 1:
                continue
            parts = [f"{phase} {proj[(n, phase)][0] / base[phase]:.2f}×" for phase, *_ in PHASES
                     if (n, phase) in proj and phase in base]
            lines.append(f"{n} shards: " + ", ".join(parts))
        if lines:
            p("Projection relative to one shard's projection: " + "; ".join(lines) + ".")
            p("")

    # ---- table 4: the CPU of one op, all processes
    p("### What one op costs in CPU, all the benchmark's processes together (µs per op, all runs pooled)")
    p("")
    p("Independent of what else ran on the machine: the CPU time each process spent in the phase "
      "divided by the ops. Their sum bounds what this machine could do with its "
      f"{os.cpu_count()} cores to the benchmark alone ({os.cpu_count()} s ÷ the sum; kernel interrupt "
      "time, charged to no process, left out), whatever the shard count: sharding spreads Redis's "
      "part over several processes, it does not make an op cheaper.")
    p("")
    p(f"| shards | phase | Redis, all shards | nodes a + b + c | generator | sum | {os.cpu_count()} cores ÷ sum |")
    p("|---|---|---|---|---|---|---|")
    for n in counts:
        for phase, _, opkey, _ in PHASES:
            rs = ok.get((n, phase), [])
            if not rs:
                continue
            total = sum(sum(sh[opkey] for sh in r["shard"]) for r in rs)
            if not total:
                continue
            red = sum(sum(sh["cpu_s"] for sh in r["shard"]) for r in rs) / total * 1e6
            nd = sum(sum(r["procs"].get(x, 0) for x in ("a", "b", "c")) for r in rs) / total * 1e6
            gen = sum(r["generator_cpu_s"] for r in rs) / total * 1e6
            whole = red + nd + gen
            p(f"| {n} | {phase} | {red:.1f} | {nd:.1f} | {gen:.1f} | {whole:.1f} | {fmt_rate(os.cpu_count() * 1e6 / whole)} |")
    p("")

    # ---- table 5: who uses the CPU
    p("### Who uses the 2 cores (CPU seconds per second of run, all runs pooled; 1.00 = one core)")
    p("")
    p("Redis from `INFO cpu`; nodes from /proc/PID/stat (utime + stime); the generator (herald-bench) from "
      "its own rusage; the machine from /proc/stat (busy = all but idle, iowait and steal; interrupts = "
      "irq + softirq, where the kernel does much of the loopback TCP work without charging it to a "
      "process; steal = time the host gave the VM's CPUs to others), over the same snapshot "
      "interval, which is a little longer than the run (connecting and subscribing); "
      "\"others\" = busy − interrupts − the benchmark's processes: other work on the machine.")
    p("")
    p("| shards | phase | Redis (sum over shards) | node a | node b | node c | generator | interrupts | others | machine busy, of " +
      f"{os.cpu_count()} | steal |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in counts:
        for phase, *_ in PHASES:
            rs = ok.get((n, phase), [])
            if not rs:
                continue
            wall = sum(r["wall_s"] for r in rs)
            red = sum(sum(s["cpu_s"] for s in r["shard"]) for r in rs) / wall
            nd = [sum(r["procs"].get(x, 0) for r in rs) / wall for x in ("a", "b", "c")]
            gen = sum(r["generator_cpu_s"] for r in rs) / wall
            busy = sum(r["machine_busy_s"] for r in rs) / wall
            irq = sum(r.get("machine_irq_s", 0) for r in rs) / wall
            steal = sum(r.get("machine_steal_s", 0) for r in rs) / wall
            others = busy - irq - red - sum(nd) - gen
            p(f"| {n} | {phase} | {red:.2f} | {nd[0]:.2f} | {nd[1]:.2f} | {nd[2]:.2f} | {gen:.2f} | {irq:.2f} | "
              f"{others:.2f} | {busy:.2f} | {steal:.2f} |")
    p("")
    if failed:
        p(f"**Failed runs ({len(failed)}):**")
        p("")
        for r in failed:
            p(f"- {r['shards']} shard(s) {r['phase']} rep {r['rep']}: {r['error']}")
        p("")
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "snap":
        cmd_snap(sys.argv[2:])
    elif cmd == "record":
        cmd_record(sys.argv[2:])
    elif cmd == "report":
        cmd_report(sys.argv[2:])
    elif cmd == "placement":
        # placement N NAME...: the shard of each name (a check against ShardMapTests' vectors)
        for name in sys.argv[3:]:
            print(name, shard_of(name, int(sys.argv[2])))
    else:
        print(__doc__)
        sys.exit(2)
