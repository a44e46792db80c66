"""Redis high availability for the client: ``redis+sentinel://`` URLs (the form redis-py users
know), the primary checked with ROLE after every connect, and the replica acknowledgement
(``WAIT``) that makes a submission count (docs/operator-guide.md, "High availability").

    redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/<master-name>[/db]
"""

import time
import urllib.parse

import redis
from redis.sentinel import Sentinel, SentinelManagedConnection

SCHEME = "redis+sentinel://"
DEFAULT_SENTINEL_PORT = 26379
FAILOVER_WAIT_S = 30.0  # how long an idempotent call keeps retrying while a failover runs
REPLICA_ACK_TIMEOUT_MS = 2000

# Errors after which the same call may succeed against the new primary.
RETRIABLE = (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError)


class NotPrimary(redis.ConnectionError):
    """The server the sentinels named is a replica now (a failover is under way)."""


class ReplicaAckMissing(redis.ConnectionError):
    """Fewer replicas than required acknowledged a write in time."""


def _host_port(text: str, url: str):
    if text.startswith("["):  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not host:
        raise ValueError("redis url %r: no host" % url)
    try:
        p = int(port) if port else DEFAULT_SENTINEL_PORT
    except ValueError:
        raise ValueError("redis url %r: bad port %r" % (url, port)) from None
    if not 1 <= p <= 65535:
        raise ValueError("redis url %r: bad port %r" % (url, port))
    return host, p


def parse_url(url: str) -> dict:
    """{'sentinels': [(host, port)], 'master': name, 'db': n, 'username', 'password'}."""
    rest = url[len(SCHEME):]
    hosts, slash, path = rest.partition("/")
    if not slash:
        raise ValueError("redis url %r: redis+sentinel:// needs /<master-name> after the sentinels" % url)
    username = password = None
    if "@" in hosts:
        userinfo, hosts = hosts.rsplit("@", 1)
        user, colon, pw = userinfo.partition(":")
        if colon:
            username, password = urllib.parse.unquote(user) or None, urllib.parse.unquote(pw)
        else:
            password = urllib.parse.unquote(user)
    sentinels = [_host_port(h, url) for h in hosts.split(",") if h]
    if not sentinels:
        raise ValueError("redis url %r: no sentinel" % url)
    master, _, db = path.partition("/")
    if not master:
        raise ValueError("redis url %r: no master name" % url)
    try:
        db = int(db) if db else 0
    except ValueError:
        raise ValueError("redis url %r: bad database number %r" % (url, db)) from None
    return {"sentinels": sentinels, "master": master, "db": db, "username": username, "password": password}


class RoleCheckedConnection(SentinelManagedConnection):
    """A sentinel may still name a primary that was just demoted: never write there."""

    def connect_to(self, address):
        super().connect_to(address)
        self.send_command("ROLE")
        role = self.read_response()
        name = role[0].decode() if isinstance(role[0], bytes) else str(role[0])
        if name != "master":
            self.disconnect()
            raise NotPrimary("%s:%s is a %s, not the primary" % (address[0], address[1], name))


def connect(url: str, connect_timeout_s: float) -> redis.Redis:
    """A client of the primary the sentinels name; it looks the primary up again after any
    connection error or READONLY reply (redis-py's sentinel pool)."""
    u = parse_url(url)
    sentinel = Sentinel(u["sentinels"], socket_connect_timeout=connect_timeout_s,
                        sentinel_kwargs={"socket_connect_timeout": connect_timeout_s, "socket_timeout": connect_timeout_s})
    return sentinel.master_for(u["master"], db=u["db"], username=u["username"], password=u["password"],
                               socket_connect_timeout=connect_timeout_s, connection_class=RoleCheckedConnection)


def retrying(fn, wait_s: float):
    """fn(), again while it raises a RETRIABLE error, for up to wait_s. Only for calls that may
    run twice (kj_submit is idempotent by job id; reads)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return fn()
        except RETRIABLE:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def wait_replicas(pipe, acks: int) -> None:
    """Appends WAIT to a pipeline (the same connection as its writes)."""
    if acks > 0:
        pipe.execute_command("WAIT", acks, REPLICA_ACK_TIMEOUT_MS)


def check_acks(got, acks: int) -> None:
    if acks > 0 and int(got) < acks:
        raise ReplicaAckMissing("the submission reached %s of %d replicas within %d ms" % (got, acks, REPLICA_ACK_TIMEOUT_MS))
