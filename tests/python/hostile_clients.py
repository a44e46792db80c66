"""Misbehaving HTTP clients for kjudge-gateway (tests/python/gateway/test_gateway_hostile.py and
bench/gateway/hostile_bench.py), and the tenant that submits beside them.

A Strangers attack keeps N connections from 127.0.0.1 misbehaving on one thread (non-blocking
sockets): whenever the gateway closes one, it opens another, so the pressure stays on for as long
as it runs. `reopened` counts the connections the gateway closed.
"""

import http.client
import socket
import threading
import time

# What each kind sends: once at the start (head), then one piece per tick (drip), never reading.
KINDS = {
    # a request head that never ends (nginx: client_header_timeout)
    "slow_head": (b"GET /livez HTTP/1.1\r\nHost: x\r\n", b"X-a: b\r\n"),
    # a body promised, sent a few bytes at a time (no token: the gateway must not wait for it)
    "slow_body": (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000000\r\n\r\n{", b"\"a\": 1, "),
    # pipelined requests whose replies are never read (nginx: send_timeout)
    "unread": (b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 50),
    # connect, say nothing
    "idle": (b"", b""),
}


class Strangers:
    def __init__(self, port, kind, connections, tick_s=0.2, token=None):
        self.port, self.kind, self.n, self.tick_s = port, kind, connections, tick_s
        self.head, self.drip = KINDS[kind]
        if token:  # a tenant misbehaving with its own token
            self.head = self.head.replace(b"Host: x\r\n", b"Host: x\r\nAuthorization: Bearer " + token.encode() + b"\r\n")
        self.reopened = 0
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _open(self):
        s = socket.socket()
        if self.kind == "unread":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills sooner
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", self.port))
        except OSError:
            pass  # the next tick sees it closed and opens another
        s.setblocking(False)
        self.opened += 1
        return [s, self.head]

    def _send(self, conn):
        """False once the gateway closed it."""
        s, pending = conn
        try:
            if pending:
                conn[1] = pending[s.send(pending):]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return False
        if self.kind == "unread":
            return True  # never reads: a send fails once the gateway closed it
        try:
            return s.recv(65536) != b""
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False

    def _run(self):
        conns = [self._open() for _ in range(self.n)]
        while not self._stop.is_set():
            for i, conn in enumerate(conns):
                if not conn[1] and self.drip:
                    conn[1] = self.drip
                if not self._send(conn):
                    conn[0].close()
                    conns[i] = self._open()
                    self.reopened += 1
            self._stop.wait(self.tick_s)
        for s, _ in conns:
            s.close()


def submit_beside(port, token, jobs, prefix, new_connection_every=10, pause_s=0.01, source="127.0.0.2"):
    """A tenant's trivial submissions, one at a time over keep-alive connections (a fresh one every
    `new_connection_every`), from another address than the strangers' (127.0.0.1): (statuses,
    latencies in seconds). A stranger's address has only its share of the pending budget
    (max_pending_per_address), so it cannot displace a newcomer from elsewhere."""
    statuses, latencies = [], []
    conn = None
    for i in range(jobs):
        if conn is None or i % new_connection_every == 0:
            if conn:
                conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
        body = '{"job_id": "%s-%d", "trivial": {"argv": ["/bin/true"]}}' % (prefix, i)
        start = time.perf_counter()
        try:
            conn.request("POST", "/v1/jobs", body=body,
                         headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            statuses.append(resp.status)
        except OSError as e:
            statuses.append(repr(e))
            conn.close()
            conn = None
        latencies.append(time.perf_counter() - start)
        time.sleep(pause_s)
    if conn:
        conn.close()
    return statuses, latencies


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
