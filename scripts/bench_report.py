#!/usr/bin/env python3
"""Tables (markdown) and plots for scripts/bench.

Reads the JSON lines written by `herald-bench --json` (plus "rep", or "error" for a failed
run), takes medians over repetitions, prints markdown tables with Herald/peer ratios, and
optionally writes docs/benchmarks.md and docs/bench-fanout.png. The scale workloads (idle,
subscriptions) carry rss_before/rss_after/bytes_per_conn|bytes_per_sub/seconds instead of
rates and get a table of their own.
"""
import re
import argparse
import datetime
import json
import os
import statistics
import sys

ORDER = ["herald", "nats", "redis", "mqtt", "sink"]
SCALE = ("idle", "subscriptions")
LABEL = {"herald": "heraldd", "nats": "nats-server", "redis": "redis", "mqtt": "mosquitto",
         "sink": "sink (generator ceiling)"}


def fmt_rate(v):
    if v is None:
        return "–"
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e3:
        return f"{v / 1e3:.0f} k"
    return f"{v:.0f}"


def fmt_us(v):
    return "–" if v is None else f"{v:.1f}"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"bench_report: skipping bad line: {line[:80]}", file=sys.stderr)
    return rows


def group(rows):
    """(workload, subs, size) -> proto -> summary."""
    out = {}
    for r in rows:
        if r["workload"] in SCALE:
            continue
        key = (r["workload"], r["subs"], r["size"])
        out.setdefault(key, {}).setdefault(r["proto"], []).append(r)
    summary = {}
    for key, by in out.items():
        for proto, runs in by.items():
            ok = [r for r in runs if "error" not in r]
            s = {"runs": len(runs), "failed": len(runs) - len(ok)}
            if ok:
                s["rate"] = median([r["msgs_per_sec"] for r in ok])
                s["p50"] = median([r.get("p50_us") for r in ok])
                s["p99"] = median([r.get("p99_us") for r in ok])
                s["p999"] = median([r.get("p999_us") for r in ok])
                exp = [r["delivered"] + r["lost"] for r in ok]
                s["loss_pct"] = max(100.0 * r["lost"] / e if e else 0.0 for r, e in zip(ok, exp))
                s["count"] = ok[0]["count"]
            else:
                s["error"] = runs[0].get("error", "failed")
            summary.setdefault(key, {})[proto] = s
    return summary


def cell(s):
    if s is None:
        return "–"
    if "rate" not in s:
        return "failed"
    t = fmt_rate(s["rate"])
    if s["loss_pct"] > 0:
        t += f" (loss {s['loss_pct']:.1f}%)"
    if s["failed"]:
        t += f" ({s['failed']} failed)"
    return t


def ratio(a, b, invert=False):
    if not a or not b or a.get("rate") is None or b.get("rate") is None or not b["rate"]:
        return "–"
    return f"{a['rate'] / b['rate']:.2f}×"


def throughput_table(summary, workload, brokers, title):
    keys = sorted(k for k in summary if k[0] == workload)
    if not keys:
        return ""
    peers = [b for b in brokers if b not in ("herald", "sink")]
    show_ratio = "herald" in brokers
    head = ["subscribers" if workload == "fanout" else "channels", "payload"]
    head += [LABEL[b] for b in brokers]
    if show_ratio:
        head += [f"herald/{b}" for b in peers]  # higher is better
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        by = summary[k]
        first = f"1→{k[1]}" if workload == "fanout" else f"{k[1]} + wildcard"
        row = [first, f"{k[2]} B"] + [cell(by.get(b)) for b in brokers]
        if show_ratio:
            row += [ratio(by.get("herald"), by.get(b)) for b in peers]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines)


def latency_table(summary, brokers, workload="latency",
                  title="Latency (one publisher, one subscriber, sequential round trips, µs; lower is better)",
                  rate_head="round trips/s"):
    keys = sorted(k for k in summary if k[0] == workload)
    if not keys:
        return ""
    peers = [b for b in brokers if b not in ("herald", "sink")]
    lines = [f"### {title}", ""]
    head = ["broker", "payload", "p50", "p99", "p99.9", rate_head]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        by = summary[k]
        for b in brokers:
            s = by.get(b)
            if not s or "rate" not in s:
                continue
            lines.append(f"| {LABEL[b]} | {k[2]} B | {fmt_us(s['p50'])} | {fmt_us(s['p99'])} | "
                         f"{fmt_us(s['p999'])} | {fmt_rate(s['rate'])} |")
        h = by.get("herald")
        if h and "rate" in h:
            for b in peers:
                s = by.get(b)
                if s and s.get("p50") and h.get("p50"):
                    lines.append(f"| herald/{b} (ratio) | | {h['p50'] / s['p50']:.2f}× | "
                                 f"{h['p99'] / s['p99']:.2f}× | {h['p999'] / s['p999']:.2f}× | |")
    lines.append("")
    return "\n".join(lines)


def fmt_bytes(v):
    if v is None:
        return "–"
    if abs(v) >= 1024 * 1024:
        return f"{v / 1048576:,.1f} MiB"
    return f"{v:,.0f} B"


def fmt_mib(v):
    return "–" if v is None else f"{v / 1048576:,.1f} MiB"


def fmt_secs(v):
    if v is None:
        return "–"
    return f"{v:.2f} s" if v < 100 else f"{v:.0f} s"


def scale_summary(rows):
    """workload -> proto -> medians of the scale fields, at the largest size measured."""
    out = {}
    for w, size_key, per_key in (("idle", "conns", "bytes_per_conn"),
                                 ("subscriptions", "subs_total", "bytes_per_sub")):
        runs = [r for r in rows if r["workload"] == w]
        if not runs:
            continue
        sizes = [r.get(size_key) or r.get("size") for r in runs]
        size = max(x for x in sizes if x is not None)
        for r in runs:
            if (r.get(size_key) or r.get("size")) != size:
                continue
            out.setdefault(w, {"size": size}).setdefault(r["proto"], []).append(r)
        for proto, rs in list(out[w].items()):
            if proto == "size":
                continue
            ok = [r for r in rs if "error" not in r]
            s = {"runs": len(rs), "failed": len(rs) - len(ok)}
            if ok:
                s["per"] = median([r.get(per_key) for r in ok])
                s["seconds"] = median([r.get("seconds") for r in ok])
                s["rss_before"] = median([r.get("rss_before") for r in ok])
                s["rss_after"] = median([r.get("rss_after") for r in ok])
            else:
                s["error"] = rs[0].get("error", "failed")
            out[w][proto] = s
    return out


def scale_table(rows, brokers):
    sc = scale_summary(rows)
    if not sc:
        return ""
    names = [b for b in brokers if b != "sink"]
    idle = sc.get("idle", {})
    subs = sc.get("subscriptions", {})
    n_conn = f"{idle['size']:,}" if idle else "–"
    n_sub = f"{subs['size']:,}" if subs else "–"
    head = ["broker", f"RSS per idle connection ({n_conn} conns)", f"time to connect {n_conn}",
            f"time to create {n_sub} subscriptions", "subscriptions/s",
            "RSS per subscription", "RSS with all subscriptions"]
    lines = ["### Scale (memory per idle connection and per subscription, subscription set-up time; "
             "lower is better)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def get(table, b, field):
        s = table.get(b)
        return None if not s or "error" in s else s.get(field)

    def failed(table, b, text):
        s = table.get(b)
        if s and "error" in s:
            return "failed"
        if s and s.get("failed"):
            return f"{text} ({s['failed']} failed)"
        return text

    for b in names:
        if b not in idle and b not in subs:
            continue
        secs = get(subs, b, "seconds")
        rate = subs["size"] / secs if subs and secs else None
        lines.append("| " + " | ".join([
            LABEL[b],
            failed(idle, b, fmt_bytes(get(idle, b, "per"))),
            failed(idle, b, fmt_secs(get(idle, b, "seconds"))),
            failed(subs, b, fmt_secs(secs)),
            fmt_rate(rate),
            failed(subs, b, fmt_bytes(get(subs, b, "per"))),
            fmt_mib(get(subs, b, "rss_after")),
        ]) + " |")

    def r(table, b, field):
        h, p = get(table, "herald", field), get(table, b, field)
        return f"{h / p:.2f}×" if h is not None and p else "–"

    for b in names:
        if b == "herald":
            continue
        if not (idle.get("herald") or subs.get("herald")) or not (idle.get(b) or subs.get(b)):
            continue
        lines.append("| " + " | ".join([
            f"herald/{b} (ratio)", r(idle, b, "per"), r(idle, b, "seconds"), r(subs, b, "seconds"),
            "", r(subs, b, "per"), r(subs, b, "rss_after")]) + " |")
    lines.append("")
    return "\n".join(lines)


def many_channels_table(rows, brokers):
    """Issue 35's many-channels shapes (`scripts/bench --channels`): one row per shape and
    measure, one column per broker, and heraldd against the best peer of that row (the
    fastest for rates; the smallest for times and memory). Each run had a fresh broker."""
    peers = [b for b in brokers if b not in ("herald", "sink")]
    names = [b for b in brokers if b != "sink"]
    runs = {}
    for r in rows:
        if r.get("workload") != "channels":
            continue
        key = (r.get("channels") or r["subs"], r.get("sub_conns") or 10)
        runs.setdefault(key, {}).setdefault(r["proto"], []).append(r)
    if not runs:
        return ""

    def summary(key, proto, field):
        rs = runs.get(key, {}).get(proto)
        if not rs:
            return None, "–"
        ok = [r for r in rs if "error" not in r]
        if not ok:
            return None, "failed: " + rs[0].get("error", "?")[:80]
        return median([r.get(field) for r in ok]), None

    def row(label, key, field, fmt, higher_better):
        cells, values = [], {}
        for b in names:
            v, text = summary(key, b, field)
            rs = [r for r in runs.get(key, {}).get(b, []) if "error" not in r]
            if v is not None:
                values[b] = v
                text = fmt(v)
                lost = max((r.get("lost", 0) / max(1, r["delivered"] + r["lost"]) for r in rs), default=0)
                if field == "msgs_per_sec" and lost > 0:
                    text += f" (loss {100 * lost:.1f}%)"
                failed = len(runs[key][b]) - len(rs)
                if failed:
                    text += f" ({failed} failed)"
            cells.append(text)
        best = [(values[b], b) for b in peers if b in values]
        if "herald" in values and best and (higher_better or values["herald"] > 0):
            v, b = max(best) if higher_better else min(best)
            verdict = f"{values['herald'] / v:.2f}× ({LABEL[b]})" if v else "–"
        else:
            verdict = "–"
        return "| " + " | ".join([label, *cells, verdict]) + " |"

    shapes = sorted(runs)
    head = ["shape", *[LABEL[b] for b in names], "heraldd ÷ best peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in shapes:
        lines.append(row(f"{key[0]:,} channels / {key[1]} conns + wildcard: delivered msgs/s", key,
                         "msgs_per_sec", fmt_rate, True))
    for key in shapes:
        if key[0] >= 10000:
            lines.append(row(f"{key[0]:,} channels / {key[1]} conns: time to subscribe all (confirmed)", key,
                             "subscribe_seconds", lambda v: f"{v:.3f} s", False))
    for key in shapes:
        if key[0] >= 100000:
            lines.append(row(f"{key[0]:,} channels / {key[1]} conns: RSS growth per channel, subscribed", key,
                             "bytes_per_channel", fmt_bytes, False))
            lines.append(row(f"{key[0]:,} channels / {key[1]} conns: RSS growth per channel, after the publishes",
                             key, "bytes_per_channel_delivered", fmt_bytes, False))
    lines.append("")
    return "\n".join(lines)


def plot(summary, brokers, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_report: matplotlib missing (pip install matplotlib); no plot", file=sys.stderr)
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for b in brokers:
        pts = sorted((k[1], s[b]["rate"]) for k, s in summary.items()
                     if k[0] == "fanout" and k[2] == 16 and b in s and "rate" in s[b])
        if pts:
            ax1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=LABEL[b],
                     linestyle="--" if b == "sink" else "-")
        pts = sorted((k[2], s[b]["rate"]) for k, s in summary.items()
                     if k[0] == "fanout" and k[1] == 1 and b in s and "rate" in s[b])
        if pts:
            ax2.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=LABEL[b],
                     linestyle="--" if b == "sink" else "-")
    ax1.set(xscale="log", yscale="log", xlabel="subscribers (payload 16 B)",
            ylabel="messages delivered / s", title="Fan-out 1→S")
    ax2.set(xscale="log", yscale="log", xlabel="payload bytes (1 subscriber)",
            ylabel="messages delivered / s", title="Payload size, fan-out 1→1")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--mode", default="full")
    ap.add_argument("--reps", default="?")
    ap.add_argument("--scale-reps", default=None)
    ap.add_argument("--latency-reps", default=None)
    ap.add_argument("--cmdline", default="")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--nproc", default="")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--versions", default="")
    ap.add_argument("--brokers", default=",".join(ORDER))
    ap.add_argument("--out-md")
    ap.add_argument("--out-png")
    ap.add_argument("--many-channels", action="store_true",
                    help="print only the many-channels table (scripts/bench --channels)")
    a = ap.parse_args()

    rows = load(a.results)
    if not rows:
        print("bench_report: no results", file=sys.stderr)
        return 1
    if a.many_channels:
        present = {r["proto"] for r in rows}
        print(many_channels_table(rows, [b for b in ORDER if b in a.brokers.split(",") and b in present]))
        return 0
    summary = group(rows)
    present = {r["proto"] for r in rows}
    # rows carried over from an earlier run (scale-only) may name brokers not started now
    listed = set(a.brokers.split(",")) | {r["proto"] for r in rows if r.get("carried_over")}
    brokers = [b for b in ORDER if b in listed and b in present]

    tables = "\n".join(t for t in [
        throughput_table(summary, "fanout", brokers,
                         "Fan-out (messages delivered per second, summed over subscribers; median)"),
        throughput_table(summary, "channels", brokers,
                         "Channels: 1000 channels × 1 subscriber (10 connections) + 1 wildcard subscriber"),
        latency_table(summary, brokers),
        latency_table(summary, brokers, "rate",
                      "Latency at a fixed rate (10,000 msgs/s, one publisher, one subscriber, each delivery "
                      "timed against its send, µs; lower is better)", "delivered/s"),
        scale_table(rows, brokers),
    ] if t)
    print(tables)

    if not a.out_md:
        return 0
    png_ok = bool(a.out_png) and plot(summary, brokers, a.out_png)
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    failed = [r for r in rows if "error" in r]
    md = [
        "# Benchmarks",
        "",
        "Generated by `scripts/bench` (load generator: `herald-bench`, one code path for every "
        "protocol; brokers and generator share this machine, all over 127.0.0.1).",
        "",
        f"- Date: {now}",
        f"- Machine: {a.nproc} CPUs ({a.cpu}), Linux {a.kernel}",
        f"- Command: `{a.cmdline}` (mode {a.mode}, {a.reps} repetition(s) per case"
        + (f", {a.scale_reps} per scale case" if a.scale_reps and a.scale_reps != a.reps else "")
        + (f", {a.latency_reps} per latency case" if a.latency_reps and a.latency_reps != a.reps else "")
        + ", medians shown)",
        "- Warm-up: before the first case each broker took one unrecorded 1→1 16 B run ("
        + ("400,000 events, mosquitto 100,000" if a.mode == "quick" else "2,000,000 events, mosquitto 500,000")
        + "), so a fresh heraldd's one-time page faults in its history rings are not counted in "
        "the first case",
    ]
    for v in [x for x in a.versions.splitlines() if x.strip()]:
        md.append(f"- Peer: {v.strip()}")
    if any(r.get("carried_over") for r in rows):
        md.append("- The fan-out, channels and latency tables are carried over from the previous "
                  "results file; only the scale table was measured by this command.")
    if "herald" not in present:
        md.append("- **heraldd was not measured** (not built when this ran): ratios are missing.")
    md += [
        "",
        "Method: S subscriber connections (one OS thread each, blocking reads of up to 1 MiB) and one "
        "publisher connection writing the frames back to back in 64 KiB writes; the rate is messages "
        "delivered per second summed over subscribers, from the first publish to the last delivery "
        "(a run ends when everything arrived or after 2 s without a delivery; `loss` = expected − "
        "delivered). QoS 0 for MQTT; brokers run with default settings (Redis without persistence). "
        "mosquitto runs a quarter of the count of the others so its runs stay short: rates are "
        "compared, not totals. The sink column is an in-process no-op server that forwards the "
        "publisher's frames in Herald's delivery format: the generator's own ceiling.",
        "",
        "Scale: every scale run starts a fresh broker and reads its VmRSS (/proc/PID/status) "
        "before and after. *Idle connections*: N connections opened with non-blocking connects "
        "(at most 64 in flight, below every listen backlog), each completing its handshake so the broker has set up its "
        "per-connection state (Herald: the `{\"info\":…}` line; NATS: CONNECT + PING → PONG; "
        "Redis: PING → PONG; MQTT: CONNECT → CONNACK), held while RSS is read (0.5 s after the "
        "last handshake), then closed; RSS per connection = growth / N. *Subscriptions*: N "
        "distinct concrete channels `bench.s.<i>` subscribed over 4 connections, the requests "
        "pipelined back to back (Redis: 100 channels per SUBSCRIBE, MQTT: 100 filters per "
        "SUBSCRIBE packet, Herald and NATS: one request each) while the confirmations are "
        "counted (Herald `{\"ok\":\"sub\"…}` lines, Redis subscribe replies, MQTT SUBACKs; NATS "
        "confirms nothing per SUB, so one PING at the end and its PONG); the time runs from the "
        "first request to the last confirmation, RSS per subscription = growth / N (the four "
        "connections already exist in the RSS before). RSS includes whatever the broker has "
        "not returned to the OS (allocator caches, for nats-server the Go heap not yet collected).",
        "",
        tables,
    ]
    if png_ok:
        md += ["", f"![fan-out and payload curves]({os.path.basename(a.out_png)})", ""]
    if failed:
        md += ["", "Failed runs:", ""]
        md += [f"- {r['proto']} {r['workload']} subs={r.get('subs', '–')} size={r.get('size', '–')} rep {r.get('rep')}: "
               f"{r['error']}" for r in failed]
    md.append(f"\nRaw results: `{os.path.basename(os.path.dirname(a.out_md)) or '.'}/bench-results.jsonl`.\n")
    md += kept_sections(a.out_md)
    with open(a.out_md, "w") as f:
        f.write("\n".join(md))
    print(f"bench_report: wrote {a.out_md}" + (f" and {a.out_png}" if png_ok else ""), file=sys.stderr)
    return 0


def kept_sections(path):
    """Sections written by other modes (`<!-- NAME:start -->` … `<!-- NAME:end -->`, e.g. the
    --state table, the workers comparison, or `fault-soak`, the figures of scripts/fault and
    scripts/soak) survive a regeneration of the page."""
    try:
        with open(path) as f:
            old = f.read()
    except OSError:
        return []
    return ["", *re.findall(r"<!-- [a-z-]+:start -->.*?<!-- [a-z-]+:end -->", old, re.S)]


if __name__ == "__main__":
    sys.exit(main())
