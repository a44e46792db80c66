"""A kjudge cluster in a box: three sentinels, a Redis primary and two replicas, N judging kjudged
nodes (cpu backend, each its own state dir), one build node and two gateways, all on this machine,
all real processes. The operator's rehearsal of docs/operator-guide.md "High availability" and the
test bed of tests/cluster/. `scripts/cluster up|status|down` is its command line.

Everything lives under one directory (ports picked free at `up`, written to cluster.json there);
`down` stops what `up` started, by the pids it recorded.
"""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MASTER = "kjudge"
SENTINELS = 3
REPLICAS = 2
GATEWAYS = 2
TENANT = "demo"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bin_dir():
    """build/bin (release) when it has kjudged, else build-test/bin; KJUDGE_BIN overrides."""
    if os.environ.get("KJUDGE_BIN"):
        return Path(os.environ["KJUDGE_BIN"])
    for d in (ROOT / "build/bin", ROOT / "build-test/bin"):
        if (d / "kjudged").exists() and (d / "kjudge-gateway").exists():
            return d
    raise SystemExit("cluster: no kjudged build (run scripts/build)")


def binds(host):
    """Loopback, and `host` when the cluster answers on another address (a node in a network
    namespace reaches it there); then protected mode must be off (no password on a test bed)."""
    return ["bind 127.0.0.1"] if host == "127.0.0.1" else [f"bind 127.0.0.1 {host}", "protected-mode no"]


def redis_conf(port, d, primary_port=None, host="127.0.0.1"):
    """A data node: AOF every second, and a primary that loses every replica stops taking writes
    after 10 s (an isolated primary must not take writes that a failover will drop)."""
    lines = [f"port {port}", *binds(host), f"dir {d}", "appendonly yes", "appendfsync everysec",
             'save ""', "repl-diskless-sync yes", "repl-diskless-sync-delay 0", "min-replicas-to-write 1",
             "min-replicas-max-lag 10", f"logfile {d}/redis.log", f"pidfile {d}/redis.pid"]
    if primary_port:
        lines.append(f"replicaof {host} {primary_port}")
    return "\n".join(lines) + "\n"


def sentinel_conf(port, d, primary_port, down_after_ms=1000, host="127.0.0.1"):
    """Quorum 2 of 3; a primary silent for down_after_ms is failed over."""
    return "\n".join([f"port {port}", *binds(host), f"dir {d}", f"logfile {d}/sentinel.log",
                      f"pidfile {d}/sentinel.pid",
                      f"sentinel monitor {MASTER} {host} {primary_port} 2",
                      f"sentinel down-after-milliseconds {MASTER} {down_after_ms}",
                      f"sentinel failover-timeout {MASTER} 10000",
                      f"sentinel parallel-syncs {MASTER} 2"]) + "\n"


def node_conf(name, state, lease_ms, role_extra=""):
    return f"""[daemon]
node = "{name}"
state_dir = "{state}"
workers = 2
[queue]
lease_ms = {lease_ms}
reap_interval_ms = 500
retry_base_ms = 100
retry_max_ms = 1000
drain_timeout_ms = 20000
[kernelbench]
cache_dir = "{state}/kb-cache"
harness_dir = "{ROOT / 'python'}"
{role_extra}"""


GATEWAY_CONF = """[gateway]
address = "127.0.0.1"
token_refresh_ms = 500
max_queued = 100000
rate_per_s = 100000
burst = 100000
max_batch_jobs = 1000
"""


class Proc:
    """One process of the cluster: how to start it, its log, its pid."""

    def __init__(self, name, argv, log, pid=None):
        self.name, self.argv, self.log, self.pid = name, argv, Path(log), pid
        self.popen = None

    def start(self):
        with open(self.log, "a") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.popen.pid

    def alive(self):
        if self.popen is not None:
            return self.popen.poll() is None
        try:
            os.kill(self.pid, 0)
            return Path(f"/proc/{self.pid}/stat").read_text().split()[2] != "Z"
        except (OSError, TypeError):
            return False

    def signal(self, sig):
        if self.pid and self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout=20):
        self.signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.signal(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait()

    def to_json(self):
        return {"name": self.name, "argv": self.argv, "log": str(self.log), "pid": self.pid}


class Cluster:
    """The processes of one cluster directory. up() starts them; from_dir() finds a running one."""

    def __init__(self, d, nodes=3, lease_ms=5000, down_after_ms=1000, host="127.0.0.1", netns=None):
        """host: the address every part uses (another than loopback when a node runs in a network
        namespace); netns: node name -> network namespace (ip netns add) it runs in."""
        self.host, self.netns = host, dict(netns or {})
        self.dir = Path(d)
        self.nodes, self.lease_ms, self.down_after_ms = nodes, lease_ms, down_after_ms
        self.procs = {}
        self.redis_ports, self.sentinel_ports, self.gateway_ports = [], [], []
        self.tokens = {}

    # -- names -------------------------------------------------------------------------------

    @property
    def url(self):
        return "redis+sentinel://" + ",".join(f"{self.host}:{p}" for p in self.sentinel_ports) + f"/{MASTER}"

    def gateway_url(self, i):
        return f"http://127.0.0.1:{self.gateway_ports[i]}"

    def node_names(self):
        return [f"node{i}" for i in range(self.nodes)]

    # -- up ----------------------------------------------------------------------------------

    def _add(self, name, argv):
        p = Proc(name, argv, self.dir / f"{name}.log")
        self.procs[name] = p
        p.start()
        return p

    def start_redis(self):
        self.redis_ports = [free_port() for _ in range(1 + REPLICAS)]
        for i, port in enumerate(self.redis_ports):
            d = self.dir / f"redis{i}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "redis.conf").write_text(redis_conf(port, d, None if i == 0 else self.redis_ports[0], self.host))
            self._add(f"redis{i}", ["redis-server", str(d / "redis.conf")])
        for port in self.redis_ports:
            wait_for(lambda port=port: redis_cli(port, "PING") == "PONG", 20, f"redis on {port}")
        # replicas in sync before anyone writes: the first failover must have somewhere to go
        wait_for(lambda: all(in_sync(p) for p in self.redis_ports[1:]), 30, "replicas in sync")

    def start_sentinels(self):
        self.sentinel_ports = [free_port() for _ in range(SENTINELS)]
        for i, port in enumerate(self.sentinel_ports):
            d = self.dir / f"sentinel{i}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "sentinel.conf").write_text(sentinel_conf(port, d, self.redis_ports[0], self.down_after_ms, self.host))
            self._add(f"sentinel{i}", sentinel_argv(d / "sentinel.conf"))
        # each sentinel has found the replicas and the other sentinels
        wait_for(lambda: all(sentinel_ready(p) for p in self.sentinel_ports), 30, "sentinels to see each other")

    def node_argv(self, name, role_extra="", role_args=()):
        state = self.dir / name
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(0o711)
        cfg = self.dir / f"{name}.toml"
        cfg.write_text(node_conf(name, state, self.lease_ms, role_extra))
        # nsenter changes only the network namespace (ip netns exec also remounts /sys: no cgroups)
        netns = ["nsenter", f"--net=/run/netns/{self.netns[name]}", "--"] if name in self.netns else []
        return [*netns, str(bin_dir() / "kjudged"), *role_args, "--config", str(cfg), "--redis", self.url]

    def start_nodes(self):
        for name in self.node_names():
            self._add(name, self.node_argv(name))
        self._add("builder", self.node_argv("builder", role_args=("--role", "build")))

    def start_gateways(self):
        self.gateway_ports = [free_port() for _ in range(GATEWAYS)]
        cfg = self.dir / "gateway.toml"
        cfg.write_text(GATEWAY_CONF)
        for i, port in enumerate(self.gateway_ports):
            self._add(f"gateway{i}", [str(bin_dir() / "kjudge-gateway"), "-c", str(cfg), "--redis", self.url,
                                      "--port", str(port)])
        for port in self.gateway_ports:
            wait_for(lambda port=port: listening(port), 30, f"gateway on {port}")

    def up(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o711)  # sandboxes (another uid) must reach the nodes' job dirs below it
        try:
            self.start_redis()
            self.start_sentinels()
            self.start_nodes()
            self.wait_nodes()
            self.tokens[TENANT] = self.kjudge("admin", "token", "create", TENANT).strip()
            self.start_gateways()
        except BaseException:
            self.down()
            raise
        self.save()
        return self

    def wait_nodes(self, timeout=60):
        import redis  # the client's own dependency

        names = set(self.node_names()) | {"builder"}

        def up():
            for n in names:
                if not self.procs[n].alive():
                    raise RuntimeError(f"cluster: {n} exited: " + self.procs[n].log.read_text()[-2000:])
            try:
                rc = self.primary_client(redis)
                return names <= {k.decode().rsplit(":", 1)[1] for k in rc.scan_iter(match="kj:{p0}:node:*")}
            except redis.RedisError:
                return False
        wait_for(up, timeout, "kjudged nodes' heartbeats")

    # -- state -------------------------------------------------------------------------------

    def save(self):
        state = {"nodes": self.nodes, "lease_ms": self.lease_ms, "down_after_ms": self.down_after_ms,
                 "host": self.host, "netns": self.netns,
                 "redis_ports": self.redis_ports, "sentinel_ports": self.sentinel_ports,
                 "gateway_ports": self.gateway_ports, "tokens": self.tokens, "url": self.url,
                 "procs": [p.to_json() for p in self.procs.values()]}
        (self.dir / "cluster.json").write_text(json.dumps(state, indent=1))

    @classmethod
    def from_dir(cls, d):
        state = json.loads((Path(d) / "cluster.json").read_text())
        c = cls(d, state["nodes"], state["lease_ms"], state["down_after_ms"], state.get("host", "127.0.0.1"),
                state.get("netns"))
        c.redis_ports, c.sentinel_ports = state["redis_ports"], state["sentinel_ports"]
        c.gateway_ports, c.tokens = state["gateway_ports"], state["tokens"]
        for p in state["procs"]:
            c.procs[p["name"]] = Proc(p["name"], p["argv"], p["log"], p["pid"])
        return c

    def down(self):
        # clients first, Redis last: nodes and gateways stop cleanly while Redis still answers
        order = sorted(self.procs.values(), key=lambda p: (p.name.startswith(("redis", "sentinel")), p.name))
        for p in order:
            p.stop()

    # -- breaking things (tests/cluster, bench/cluster) -------------------------------------

    def restart(self, name):
        """Starts `name` again as `up` did (same config, same state dir)."""
        p = self.procs[name]
        if p.alive():
            p.stop()
        p.start()

    def primary_name(self):
        port = self.primary_port()
        return f"redis{self.redis_ports.index(port)}" if port in self.redis_ports else None

    def kill_primary(self, timeout=60):
        """SIGKILLs the primary, waits for the sentinels to name another and starts the old one
        again (the sentinels make it a replica), then waits until both replicas are in sync.
        Returns (wall-clock time of the kill, seconds until a new primary was named, seconds until
        the replicas were back)."""
        old = self.primary_name()
        killed_at, t0 = time.time(), time.monotonic()
        self.procs[old].signal(signal.SIGKILL)
        self.procs[old].stop()
        wait_for(lambda: self.primary_name() not in (None, old), timeout, "a new primary")
        named = time.monotonic() - t0
        self.restart(old)

        def synced():  # the sentinels' view is asked each time: it may be undecided for a moment
            new = self.primary_port()
            return new is not None and all(in_sync(p) for p in self.redis_ports if p != new)
        wait_for(synced, timeout, "replicas in sync again")
        return killed_at, named, time.monotonic() - t0

    # -- looking -----------------------------------------------------------------------------

    def primary_port(self):
        """The port the sentinels' majority names as primary (None when they disagree or are down)."""
        votes = {}
        for port in self.sentinel_ports:
            got = redis_cli(port, "SENTINEL", "get-master-addr-by-name", MASTER)
            if got:
                votes[got] = votes.get(got, 0) + 1
        best = max(votes.items(), key=lambda kv: kv[1], default=(None, 0))
        return int(best[0].split()[-1]) if best[1] >= 2 else None

    def primary_client(self, redis):
        port = self.primary_port()
        if port is None:
            raise redis.ConnectionError("no primary named by a majority of the sentinels")
        return redis.Redis(host="127.0.0.1", port=port)

    def kjudge(self, *args, timeout=60):
        p = subprocess.run([str(bin_dir() / "kjudge"), "--redis", self.url, *args], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"kjudge {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def summary(self):
        primary = self.primary_port()
        rows = []
        for i, port in enumerate(self.redis_ports):
            role = (redis_cli(port, "ROLE") or "down").split()[0]
            rows.append((f"redis{i}", f"127.0.0.1:{port}", role + (" (sentinels' primary)" if port == primary else "")))
        for i, port in enumerate(self.sentinel_ports):
            rows.append((f"sentinel{i}", f"127.0.0.1:{port}", "up" if redis_cli(port, "PING") == "PONG" else "down"))
        for name in self.node_names() + ["builder"]:
            p = self.procs.get(name)
            rows.append((name, str(self.dir / name), "running" if p and p.alive() else "down"))
        for i, port in enumerate(self.gateway_ports):
            rows.append((f"gateway{i}", self.gateway_url(i), "listening" if listening(port) else "down"))
        width = max(len(r[0]) for r in rows)
        out = [f"kjudge cluster in {self.dir}"]
        out += [f"  {name:<{width}}  {where:<40}  {state}" for name, where, state in rows]
        out.append(f"  redis url      {self.url}")
        if self.tokens.get(TENANT):
            out.append(f"  tenant {TENANT!r} token  {self.tokens[TENANT]}")
        out.append(f"  try: {bin_dir() / 'kjudge'} --redis '{self.url}' status")
        return "\n".join(out)


# -- small helpers ---------------------------------------------------------------------------

def sentinel_argv(conf):
    """Debian's redis-sentinel (scripts/setup installs it); redis-server --sentinel is the same code."""
    if Path("/usr/bin/redis-sentinel").exists():
        return ["/usr/bin/redis-sentinel", str(conf)]
    return ["redis-server", str(conf), "--sentinel"]


def redis_cli(port, *args, timeout=2):
    """redis-cli's answer as one line (words joined by spaces), or None when nothing answers."""
    try:
        p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    out = " ".join(p.stdout.split())
    if p.returncode != 0 or not out or out.startswith(("Could not connect", "ERR")):
        return None
    return out


def in_sync(port):
    info = redis_cli(port, "INFO", "replication") or ""
    return "master_link_status:up" in info


def sentinel_ready(port):
    info = redis_cli(port, "SENTINEL", "master", MASTER) or ""
    words = info.split()
    fields = dict(zip(words[::2], words[1::2]))
    return fields.get("num-slaves") == str(REPLICAS) and fields.get("num-other-sentinels") == str(SENTINELS - 1)


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster: timed out waiting for {what}")
        time.sleep(0.1)
