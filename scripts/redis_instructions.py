"""Redis instructions per cluster op: redis-server under callgrind, driven by one real heraldd node
(issue 29, item 4). Called by `scripts/instructions --redis`.

Inside Redis the cost of an op is the instructions its script call runs, and callgrind counts
them the same way whatever else the machine does, so this is the acceptance figure for the
scripts (rates through the cluster move by tens of percent between runs).

Set-up: `redis-server --save "" --appendonly no` under `valgrind --tool=callgrind
--instr-atstart=yes`, one release heraldd in cluster mode on it (`workers: 1`, default
`history: 100`, `node_timeout_ms: 30000` so liveness refreshes are rare), a subscriber on
`bench.>` and `state.>` on that node (every event is published to one node, as in a cluster
where someone listens). Each phase sends its ops one at a time, each waiting for its answer
(so each op is one script call of one event), between `callgrind_control -z` and `-d`, and
divides the phase's instructions by its ops, after taking off what Redis runs idle (its cron,
the node's liveness refresh) for as long as the phase lasted, measured over 3 s first.

Phases (each N ops):
- `publish, new channel`: `pub` with a receipt to N channels never published before;
- `publish, hot channel, history full`: `pub` with a receipt to one channel that already holds
  3 x history events;
- `set`: `set` of a small object on one channel, N times;
- `append`: `append` of a small value to one of 20 lists, N times.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

PHASES = ("publish, new channel", "publish, hot channel, history full", "set", "append")

# The floor: what Redis runs for single commands and for the least script that can give an
# event its `seq`, keep it and send it (issue 29's goals measured against it). Sent straight to
# Redis (no node), one at a time, with a subscriber on the channel published to.
FLOOR_SCRIPTS = {
    "EVALSHA of `return 1`, 2 keys + 4 ARGV": "return 1",
    "least publish, history 0: HINCRBY, format, PUBLISH":
        "local last = redis.call('HINCRBY', KEYS[1], 'seq', ARGV[2]) "
        "local msg = string.format('%d %s\\n%s', last, ARGV[2], ARGV[4]) "
        "redis.call('PUBLISH', 'floor.n', msg) return last",
    "least publish kept: HINCRBY, format, XADD, PUBLISH":
        "local last = redis.call('HINCRBY', KEYS[1], 'seq', ARGV[2]) "
        "local msg = string.format('%d %s\\n%s', last, ARGV[2], ARGV[4]) "
        "redis.call('XADD', KEYS[2], string.format('%d-0', last), 'r', msg) "
        "redis.call('PUBLISH', 'floor.n', msg) return last",
}
FLOOR_BLOB = b'{"ch":"bench.hot","data":{"n":12345},"from":"c1"}'
FLOOR = ("PUBLISH (one subscriber)", "HSET", "HINCRBY") + tuple(FLOOR_SCRIPTS)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SystemExit(f"redis instructions: timed out waiting for {what}")


class Line:
    """A line client of heraldd that waits for the answer carrying its rid."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        self.file.readline()  # info
        self.rid = 0

    def call(self, frame):
        self.rid += 1
        frame["rid"] = self.rid
        self.sock.sendall(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
        while True:
            line = self.file.readline()
            if not line:
                raise SystemExit("redis instructions: heraldd closed the connection")
            answer = json.loads(line)
            if answer.get("rid") == self.rid:
                if "error" in answer:
                    raise SystemExit(f"redis instructions: {frame['op']} failed: {answer}")
                return answer


class Resp:
    """A bare RESP connection to Redis."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def read(self):
        line = self.file.readline()
        kind, body = line[:1], line[1:-2]
        if kind == b"-":
            raise SystemExit(f"redis instructions: Redis answered {body!r}")
        if kind in (b"+", b":"):
            return body
        if kind == b"$":
            size = int(body)
            return None if size < 0 else self.file.read(size + 2)[:-2]
        if kind == b"*":
            return [self.read() for _ in range(int(body))]
        raise SystemExit(f"redis instructions: Redis closed or sent {line!r}")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for arg in args:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(arg), arg)
        self.sock.sendall(out)
        return self.read()


def floor_ops(redis_port):
    """{floor phase: op(i)}: single commands and the least scripts, straight to Redis."""
    direct = Resp(redis_port)
    listener = Resp(redis_port)
    listener.call("SUBSCRIBE", "floor.n")
    threading.Thread(target=drain, args=(listener.sock,), daemon=True).start()
    ops = {
        FLOOR[0]: lambda i: direct.call("PUBLISH", "floor.n", FLOOR_BLOB),
        FLOOR[1]: lambda i: direct.call("HSET", "floor.m", "v", FLOOR_BLOB),
        FLOOR[2]: lambda i: direct.call("HINCRBY", "floor.c", "seq", "1"),
    }
    for name, body in FLOOR_SCRIPTS.items():
        sha = direct.call("SCRIPT", "LOAD", body)
        ops[name] = (lambda sha: lambda i: direct.call("EVALSHA", sha, 2, "floor.m", "floor.h", "bench.hot", "1",
                                                       "a", FLOOR_BLOB))(sha)
    for i in range(300):
        ops[FLOOR[-1]](i)
    return ops


def drain(sock):
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def total_of(path):
    total = 0
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
    return total


def measure(daemon, count=2000):
    """Returns {phase: instructions per op}."""
    with tempfile.TemporaryDirectory(prefix="herald-rcg-") as folder:
        redis_port, node_port = free_port(), free_port()
        out = os.path.join(folder, "redis.cg")
        redis = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "redis-server",
                                  "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                  "--dir", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        node = None
        try:
            wait_for(lambda: subprocess.run(["redis-cli", "-p", str(redis_port), "ping"], capture_output=True,
                                            text=True).stdout.strip() == "PONG", 120, "redis under callgrind")
            config = os.path.join(folder, "node.json5")
            with open(config, "w") as f:
                f.write('{ host: "127.0.0.1", port: %d, workers: 1, log_level: "info",\n'
                        # collect_keys 0: the idle record collection's steps (a SCAN of
                        # the key space, issue 32) would land in a phase and count as its ops'.
                        '  cluster: { redis: "redis://127.0.0.1:%d", node: "a", node_timeout_ms: 30000,'
                        ' collect_keys: 0 } }\n'
                        % (node_port, redis_port))
            log_path = os.path.join(folder, "node.log")
            node = subprocess.Popen([daemon, "--config", config], stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
            wait_for(lambda: b"cluster ready" in open(log_path, "rb").read(), 120, "the node to be ready")
            listener = Line(node_port)
            listener.call({"op": "sub", "ch": "bench.>"})
            listener.call({"op": "sub", "ch": "state.>"})
            threading.Thread(target=drain, args=(listener.sock,), daemon=True).start()
            client = Line(node_port)
            for i in range(300):
                client.call({"op": "pub", "ch": "bench.hot", "data": i})
            results = {}
            dump = 0

            def phase_total(body):
                nonlocal dump
                subprocess.run(["callgrind_control", "-z", str(redis.pid)], check=True, capture_output=True)
                started = time.monotonic()
                body()
                seconds = time.monotonic() - started
                subprocess.run(["callgrind_control", "-d", str(redis.pid)], check=True, capture_output=True)
                dump += 1
                path = f"{out}.{dump}"
                wait_for(lambda: os.path.exists(path), 60, "the callgrind dump")
                time.sleep(0.5)
                return total_of(path), seconds

            # What Redis runs with nothing asked of it (its cron, the node's liveness refresh),
            # per second: taken off each phase for the time it lasted.
            idle, idle_seconds = phase_total(lambda: time.sleep(3))
            idle_rate = idle / idle_seconds
            ops = {
                PHASES[0]: lambda i: {"op": "pub", "ch": f"bench.new.{i}", "data": {"n": i}},
                PHASES[1]: lambda i: {"op": "pub", "ch": "bench.hot", "data": {"n": i}},
                PHASES[2]: lambda i: {"op": "set", "ch": "state.value", "value": {"n": i}},
                PHASES[3]: lambda i: {"op": "append", "ch": f"state.list.{i % 20}", "value": {"n": i}},
            }
            for phase in PHASES:
                total, seconds = phase_total(lambda: [client.call(ops[phase](i)) for i in range(count)])
                results[phase] = max(0.0, total - idle_rate * seconds) / count
                if os.environ.get("HERALD_CG_KEEP"):
                    shutil.copy(f"{out}.{dump}", os.path.join(os.environ["HERALD_CG_KEEP"], phase.replace(" ", "_").replace(",", "")))
            for phase, op in floor_ops(redis_port).items():
                total, seconds = phase_total(lambda: [op(i) for i in range(count)])
                results[phase] = max(0.0, total - idle_rate * seconds) / count
            results["idle per second"] = idle_rate
            return results
        finally:
            if node:
                node.send_signal(signal.SIGTERM)
                try:
                    node.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    node.kill()
            redis.send_signal(signal.SIGTERM)
            try:
                redis.wait(timeout=60)
            except subprocess.TimeoutExpired:
                redis.kill()


def section(results, command, now, head):
    goals = {PHASES[0]: 40_000, PHASES[1]: 40_000, PHASES[2]: 50_000}
    lines = ["<!-- redis-instructions:start -->", "## Redis instructions per cluster op (callgrind)", "",
             f"Generated by `{command}` on {now} (commit {head}): `redis-server` (7.0, `--save \"\" "
             "--appendonly no`) under callgrind, one release heraldd in cluster mode on it, a subscriber "
             "on the node; each op sent alone and answered before the next (one script call of one "
             "event), 2,000 per phase between `callgrind_control -z` and `-d`; Redis's instructions "
             "(its network reads and writes included), less its idle instructions per second "
             f"({results['idle per second']:,.0f}/s: its cron and the node's liveness refresh) times "
             "the phase's length, divided by the ops.", "",
             "| op | Redis instructions per op | goal (issue 29) |", "|---|---|---|"]
    for phase in PHASES:
        goal = goals.get(phase)
        verdict = "—"
        if goal:
            verdict = f"≤ {goal:,}: " + ("met" if results[phase] <= goal else "**missed**")
        lines.append(f"| {phase} | {results[phase]:,.0f} | {verdict} |")
    lines += ["", "The floor, same run, sent straight to Redis (no node; the scripts get 2 keys and 4 "
              "`ARGV`, as the node's `publishOne` does; `PUBLISH` to one subscriber): what any script "
              "that gives an event its `seq`, keeps it and sends it costs at least.", "",
              "| command or least script | Redis instructions per op |", "|---|---|"]
    for phase in FLOOR:
        lines.append(f"| {phase} | {results[phase]:,.0f} |")
    lines.append("<!-- redis-instructions:end -->")
    return "\n".join(lines)


def write_docs(path, results, command, now, head):
    text = open(path).read()
    block = section(results, command, now, head)
    pattern = re.compile(r"<!-- redis-instructions:start -->.*?<!-- redis-instructions:end -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)
