"""Shared helpers for scripts/fault and scripts/soak (Python 3 standard library only).

Starts a release `heraldd` on an ephemeral port with a temporary config and data folder,
reads its RSS and open file descriptors from /proc, talks to it over plain sockets, and makes
sure every daemon started here is killed when the script ends (normally, on an exception, or
on SIGINT/SIGTERM).
"""

import atexit
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DAEMONS = []


def log(*parts):
    """One line to stderr with a UTC time stamp, flushed at once (runs are watched live)."""
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print(f"[{stamp}]", *parts, file=sys.stderr, flush=True)


def heraldd_path(build=True):
    """The release heraldd: $HERALDD, else .build/release/heraldd (built first unless build=False)."""
    env = os.environ.get("HERALDD")
    if env:
        return env
    if build:
        log("building heraldd (release)")
        subprocess.run(["swift", "build", "-c", "release", "--product", "heraldd"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    path = os.path.join(ROOT, ".build", "release", "heraldd")
    if not os.path.exists(path):
        raise SystemExit(f"no heraldd at {path}: run `swift build -c release --product heraldd`")
    return path


def raise_nofile(wanted):
    """Raises this process's open-file limit toward `wanted` (up to the hard limit); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Daemon:
    """One heraldd process with its own temp folder (config, data, log)."""

    def __init__(self, binary, config=None, workers=1, data=False, nofile=None, args=(), ready=None):
        """`ready`: bytes the log must show, besides the listening line, before the daemon counts
        as started (a cluster node: b"cluster ready")."""
        self.dir = tempfile.mkdtemp(prefix="herald-fault-")
        self.ready = ready
        # log_level info: the "listening" line carries the port (nothing is logged per connection).
        cfg = {"host": "127.0.0.1", "port": 0, "log_level": "info", "workers": workers}
        if data:
            cfg["data_dir"] = os.path.join(self.dir, "data")
        cfg.update(config or {})
        self.config = cfg
        self.config_path = os.path.join(self.dir, "heraldd.json5")
        with open(self.config_path, "w") as f:
            json.dump(cfg, f, indent=1)
        self.log_path = os.path.join(self.dir, "heraldd.log")
        self._log = open(self.log_path, "wb")

        def limits():
            if nofile:
                soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile, hard), hard))

        self.proc = subprocess.Popen([os.path.abspath(binary), "--config", self.config_path, *args], stdout=self._log,
                                     stderr=subprocess.STDOUT, preexec_fn=limits, cwd=self.dir)
        _DAEMONS.append(self)
        self.pid = self.proc.pid
        self.port = self._wait_port()

    def _wait_port(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"heraldd exited ({self.proc.returncode}): {self.log_tail()}")
            with open(self.log_path, "rb") as f:
                text = f.read()
            m = re.search(rb"listening transport=tcp host=\S+ port=(\d+)", text)
            if m and (self.ready is None or self.ready in text):
                return int(m.group(1))
            time.sleep(0.05)
        raise RuntimeError("heraldd did not start listening: " + self.log_tail())

    def log_tail(self, n=2000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        """Resident set size in KiB (VmRSS)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self):
        """Open file descriptors of the daemon."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def stats(self, timeout=10):
        """The daemon's `stats` answer, over a fresh connection."""
        return query(self.port, {"op": "stats", "rid": "stats"}, timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if self in _DAEMONS:
            _DAEMONS.remove(self)
        if os.environ.get("HERALD_FAULT_KEEP"):
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server on a free 127.0.0.1 port, in its own temp folder, no persistence (the
    cluster rows of scripts/fault measure memory, not durability). Stopped at exit like a Daemon."""

    def __init__(self, extra=()):
        self.dir = tempfile.mkdtemp(prefix="herald-fault-redis-")
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                          "--save", "", "--appendonly", "no", "--dir", self.dir,
                                          "--loglevel", "warning", *extra],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if self.proc.poll() is not None:
                    break  # the port was taken meanwhile: another one
                if self.cli("PING") == "PONG":
                    _DAEMONS.append(self)
                    return
                time.sleep(0.05)
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError("redis-server did not start")

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def cli(self, *args):
        done = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True,
                              timeout=60)
        return done.stdout.strip()

    def info(self, section="memory"):
        """`INFO section` as a dict of strings."""
        out = {}
        for line in self.cli("INFO", section).splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out

    def used_memory(self):
        return int(self.info("memory")["used_memory"])

    def dbsize(self):
        return int(self.cli("DBSIZE") or 0)

    def count_keys(self, pattern):
        """Keys matching `pattern` (a SCAN over the data set)."""
        out = subprocess.run(["redis-cli", "-p", str(self.port), "--scan", "--pattern", pattern],
                             capture_output=True, text=True, timeout=120).stdout
        return sum(1 for line in out.splitlines() if line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self in _DAEMONS:
            _DAEMONS.remove(self)
        shutil.rmtree(self.dir, ignore_errors=True)


def _cleanup():
    for d in reversed(list(_DAEMONS)):  # cluster nodes before the Redis they leave
        try:
            d.stop()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


def _on_signal(signum, _frame):
    _cleanup()
    sys.exit(128 + signum)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


class LineSocket:
    """A blocking socket that reads frames line by line (answers heartbeats with pong)."""

    def __init__(self, port, timeout=10, read_info=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.info = self.frame() if read_info else None

    def send(self, obj):
        data = obj if isinstance(obj, bytes) else (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        self.sock.sendall(data)

    def frame(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 1:]
                obj = json.loads(line)
                if "ping" in obj:
                    self.send({"op": "pong"})
                    continue
                return obj
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed by daemon")
            self.buf += chunk

    def until(self, pred):
        while True:
            f = self.frame()
            if pred(f):
                return f

    def close(self):
        self.sock.close()


def query(port, req, timeout=10):
    """Sends one request with a rid and returns its answer."""
    c = LineSocket(port, timeout)
    try:
        c.send(req)
        return c.until(lambda f: f.get("rid") == req.get("rid"))
    finally:
        c.close()


def percentile(samples, p):
    """The p-th percentile (0…100) of a list, nearest rank; None when empty."""
    if not samples:
        return None
    s = sorted(samples)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


class Checks:
    """Pass/fail conditions of a scenario: each `check` records one; `ok` says whether all held."""

    def __init__(self, name):
        self.name = name
        self.failed = []
        self.count = 0

    def check(self, cond, what):
        self.count += 1
        log(("PASS " if cond else "FAIL ") + f"{self.name}: {what}")
        if not cond:
            self.failed.append(what)
        return cond

    @property
    def ok(self):
        return not self.failed
