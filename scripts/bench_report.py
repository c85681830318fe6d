#!/usr/bin/env python3
"""Tables (markdown) and plots for scripts/bench.

Reads the JSON lines written by `herald-bench --json` (plus "rep", or "error" for a failed
run), takes medians over repetitions, prints markdown tables with Herald/peer ratios, and
optionally writes docs/benchmarks.md and docs/bench-fanout.png.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

ORDER = ["herald", "nats", "redis", "mqtt", "sink"]
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


def latency_table(summary, brokers):
    keys = sorted(k for k in summary if k[0] == "latency")
    if not keys:
        return ""
    peers = [b for b in brokers if b not in ("herald", "sink")]
    lines = ["### Latency (one publisher, one subscriber, sequential round trips, µs; lower is better)", ""]
    head = ["broker", "payload", "p50", "p99", "p99.9", "round trips/s"]
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
    ap.add_argument("--cmdline", default="")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--nproc", default="")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--versions", default="")
    ap.add_argument("--brokers", default=",".join(ORDER))
    ap.add_argument("--out-md")
    ap.add_argument("--out-png")
    a = ap.parse_args()

    rows = load(a.results)
    if not rows:
        print("bench_report: no results", file=sys.stderr)
        return 1
    summary = group(rows)
    present = {r["proto"] for r in rows}
    brokers = [b for b in ORDER if b in a.brokers.split(",") and b in present]

    tables = "\n".join(t for t in [
        throughput_table(summary, "fanout", brokers,
                         "Fan-out (messages delivered per second, summed over subscribers; median)"),
        throughput_table(summary, "channels", brokers,
                         "Channels: 1000 channels × 1 subscriber (10 connections) + 1 wildcard subscriber"),
        latency_table(summary, brokers),
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
        f"- Command: `{a.cmdline}` (mode {a.mode}, {a.reps} repetition(s) per case, medians shown)",
    ]
    for v in [x for x in a.versions.splitlines() if x.strip()]:
        md.append(f"- Peer: {v.strip()}")
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
        tables,
    ]
    if png_ok:
        md += ["", f"![fan-out and payload curves]({os.path.basename(a.out_png)})", ""]
    if failed:
        md += ["", "Failed runs:", ""]
        md += [f"- {r['proto']} {r['workload']} subs={r['subs']} size={r['size']} rep {r.get('rep')}: "
               f"{r['error']}" for r in failed]
    md.append(f"\nRaw results: `{os.path.basename(os.path.dirname(a.out_md)) or '.'}/bench-results.jsonl`.\n")
    with open(a.out_md, "w") as f:
        f.write("\n".join(md))
    print(f"bench_report: wrote {a.out_md}" + (f" and {a.out_png}" if png_ok else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
