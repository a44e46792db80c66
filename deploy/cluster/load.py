"""Steady load on a cluster and the ledger that checks it (tests/cluster, bench/cluster).

Submitters send trivial jobs at a fixed rate, directly (kjudge.Client on the redis+sentinel URL)
or through the gateways (kjudge.GatewayClient, trying the next gateway on an error). A job counts
as acknowledged when submit returned. A reader reads every acknowledged job's result as soon as
it exists and keeps the bytes it first read. check() then says what was lost (acknowledged, no
result), what changed after it was read, and which jobs have more than one completion event.
"""

import threading
import time

from kjudge import keys
from kjudge.client import Client, QueueError, completion_counts
from kjudge.gateway_client import GatewayClient
from kjudge.v1 import job_pb2, verdict_pb2


def trivial(job_id, tenant, argv=("/bin/true",)):
    job = job_pb2.Job(job_id=job_id, tenant=tenant)
    job.trivial.argv.extend(argv)
    job.submitted_at.GetCurrentTime()
    return job


class Ledger:
    """What clients were told: acknowledged jobs, results read (first bytes, when)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}        # (tenant, job id) -> monotonic time of the acknowledgement
        self.read = {}         # (tenant, job id) -> (result bytes, monotonic time first read)
        self.failed = 0        # submissions given up after the client's own retries
        self.retried = 0       # submissions that needed another try (same job id)
        self.ack_latency = []  # seconds from submit to acknowledgement

    def unread(self, tenant, limit=500):
        with self.lock:
            return [j for (t, j) in self.acked if t == tenant and (t, j) not in self.read][:limit]


class Submitter(threading.Thread):
    """Submits trivial jobs at `rate` per second until stop; a failed submit is retried with the
    same job id (idempotent) for up to `give_up_s`, then counted as failed."""

    def __init__(self, ledger, tenant, rate, prefix, submit, argv=("/bin/true",), give_up_s=60):
        super().__init__(daemon=True)
        self.ledger, self.tenant, self.rate, self.prefix = ledger, tenant, rate, prefix
        self.submit, self.argv, self.give_up_s = submit, argv, give_up_s
        self.stop_flag = threading.Event()
        self.sent = 0

    def run(self):
        t0 = time.monotonic()
        while not self.stop_flag.is_set():
            time.sleep(max(0.0, t0 + self.sent / self.rate - time.monotonic()))
            job_id = f"{self.prefix}-{self.sent}"
            self.sent += 1
            self.one(job_id)

    def one(self, job_id):
        start = time.monotonic()
        tries = 0
        while True:
            try:
                self.submit(trivial(job_id, self.tenant, self.argv), tries)
                break
            except (QueueError, OSError) as e:  # the gateway client raises QueueError too
                tries += 1
                if time.monotonic() - start > self.give_up_s:
                    with self.ledger.lock:
                        self.ledger.failed += 1
                    print(f"load: {job_id} not acknowledged: {e}", flush=True)
                    return
                time.sleep(0.2)
        now = time.monotonic()
        with self.ledger.lock:
            self.ledger.acked[(self.tenant, job_id)] = now
            self.ledger.ack_latency.append(now - start)
            self.ledger.retried += 1 if tries else 0


def direct_submit(url):
    client = Client(url)
    return lambda job, _tries: client.submit(job)


def gateway_submit(gateway_urls, token):
    clients = [GatewayClient(u, token=token, timeout_s=30) for u in gateway_urls]
    # the next try goes to the next gateway, as a client behind a load balancer would
    return lambda job, tries: clients[tries % len(clients)].submit(job)


class Reader(threading.Thread):
    """Reads the results of acknowledged jobs as they appear (the first read is what a client saw)."""

    def __init__(self, ledger, url, tenants):
        super().__init__(daemon=True)
        self.ledger, self.tenants = ledger, tenants
        self.client = Client(url)
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            idle = True
            for t in self.tenants:
                ids = self.ledger.unread(t)
                if not ids:
                    continue
                idle = False
                try:
                    got = self.client.wait_many(t, ids, timeout_s=0.3)
                except QueueError:
                    time.sleep(0.2)
                    continue
                now = time.monotonic()
                with self.ledger.lock:
                    for j, r in got.items():
                        if r is not None and (t, j) not in self.ledger.read:
                            self.ledger.read[(t, j)] = (r.SerializeToString(), now)
            if idle:
                time.sleep(0.05)


def check(ledger, url, tenants, settle_s=60):
    """After the load stopped: waits up to settle_s for every acknowledged job's result, then
    {'acked', 'lost', 'changed_after_read', 'duplicates', 'verdicts'} (lists of job ids)."""
    client = Client(url)
    final = {}
    for t in tenants:
        ids = [j for (tt, j) in ledger.acked if tt == t]
        for start in range(0, len(ids), 1000):
            got = client.wait_many(t, ids[start:start + 1000], timeout_s=settle_s)
            final.update({(t, j): r for j, r in got.items()})
    lost = sorted(k for k, r in final.items() if r is None)
    changed = sorted(k for k, (raw, _) in ledger.read.items() if final.get(k) is None or final[k].SerializeToString() != raw)
    duplicates, verdicts = [], {}
    for t in tenants:
        events = completion_counts(client.redis, t)
        duplicates += [(t, j) for j, n in events.items() if n > 1]
    for r in final.values():
        if r is not None:
            name = verdict_pb2.Verdict.Name(r.status)
            verdicts[name] = verdicts.get(name, 0) + 1
    return {"acked": len(final), "lost": lost, "changed_after_read": changed, "duplicates": duplicates,
            "verdicts": verdicts}


def stored_at(rc, tenants):
    """Wall-clock seconds at which the primary stored each result: the done stream's entry ids
    are the primary's milliseconds at kj_complete (one machine here, one clock)."""
    out = []
    for t in tenants:
        for entry_id, fields in rc.xrange(keys.done(0, t), "-", "+"):
            if fields.get(b"id"):
                out.append(int(entry_id.split(b"-")[0]) / 1000)
    return sorted(out)


def gaps(completions, events):
    """For each event time: last completion before it to first completion after it (seconds)."""
    out = []
    for e in events:
        before = [t for t in completions if t <= e]
        after = [t for t in completions if t > e]
        if before and after:
            out.append(after[0] - before[-1])
    return out
