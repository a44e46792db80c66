"""A model of one GPU phase's device-memory admission (src/pipeline/worker/device_budget.h), fed
with a measured rlstep phase: its jobs in their submission order, each problem's median hold of
the device (the candidate's sandbox, from its `candidate.*` phase seconds) and its admission
estimate (kjudged's `kernelbench.device_memory` log lines). It replays the phase under each
admission order, so an order can be weighed before a GPU run measures it. A model, not a
measurement: holds do not stretch with the number running, the work before admission (build
fetch, the worker's prepare) takes a fixed PRE_SECONDS, nothing else waits.

    python3 bench/admission_model/model.py KJRL_TGZ PHASE DAEMON_LOG CAPACITY_GIB [PROBLEM=GIB ...] [--lend=GIB]

e.g. `... bench/results/rlstep-20261208-h100-steady/kjrl.tgz b-g1-next judge-b-g1.log 23.8`;
PROBLEM=GIB replaces a problem's estimate (a prefix of its file name); --lend=GIB adds the orders
again with the head borrowing its shortfall from the worker's preparation budget, at most GIB out
(kernelbench.candidate_borrow_share times the budget), never while a job that made sets in the
measured phase is before its admission (its preparation)."""
import io
import json
import statistics
import sys
import tarfile

PRE_SECONDS = 1.5  # from a slot's start to its admission request, the median of a warm phase's first jobs
POST_SECONDS = 0.4  # from the hold's end to the result
STEP = 0.01


def read_phase(tgz, phase, log_name):
    """[{problem, est (GiB), hold (s)}] in submission order, each problem's median hold."""
    with tarfile.open(tgz) as tar:
        text = {m.name.lstrip("./"): tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}
    rows = {r["job_id"]: r for r in map(json.loads, text["out/rows.jsonl"].splitlines()) if r["step"] == phase}
    order = list(json.loads(text[f"out/jobs-{phase}.json"]))
    estimate = {}
    for line in io.StringIO(text[log_name]):
        if "kernelbench.device_memory" in line:
            event = json.loads(line[line.index("{"):])
            estimate[event["job_id"]] = event["estimate_bytes"] / 2**30
    jobs = [{"problem": rows[j]["problem"].split("/")[-1], "est": estimate[j], "hold": sandbox_seconds(rows[j]),
             "prepares": rows[j]["phase_seconds"].get("oracle.sets", 0) > 0.05} for j in order]
    medians = {p: statistics.median(j["hold"] for j in jobs if j["problem"] == p) for p in {j["problem"] for j in jobs}}
    return [{**j, "hold": medians[j["problem"]]} for j in jobs]


def sandbox_seconds(row):
    phases = row["phase_seconds"]
    return sum(v for k, v in phases.items() if k.startswith("candidate.") and k != "candidate.wall_extension") + 0.3


class Budget:
    """DeviceBudget's rules: the head fits or waits; within the backfill window a later waiter
    passes it if it fits now and leaves the head its reservation; one over the capacity runs alone."""

    def __init__(self, capacity, backfill, largest_first, lendable=0.0):
        self.capacity, self.backfill, self.largest_first = capacity, backfill, largest_first
        self.held, self.holders, self.head, self.head_since, self.passed = 0.0, 0, None, 0.0, 0.0
        self.lendable, self.borrowed = lendable, 0.0

    def limit(self):
        return self.capacity + self.borrowed

    def fits(self, job):
        return self.holders == 0 or self.held + job["est"] <= self.limit()

    def borrow_for(self, head, lending_open):
        """The head's shortfall lent (True) when the worker may lend it now."""
        short = self.held + head["est"] - self.limit()
        if not lending_open or not self.holders or short <= 0 or self.borrowed + short > self.lendable:
            return False
        head["loan"] = short
        self.borrowed += short
        return True

    def choose_head(self, waiting, now):
        head = max(waiting, key=lambda j: (j["est"], -j["ticket"])) if self.largest_first else waiting[0]
        if head is not self.head:
            self.head, self.head_since, self.passed = head, now, 0.0
        return head

    def next_admitted(self, waiting, now, lending_open=False):
        if not waiting:
            return None
        head = self.choose_head(waiting, now)
        if self.fits(head) or self.borrow_for(head, lending_open):
            return head
        if head["est"] > self.capacity or now - self.head_since >= self.backfill:
            return None
        return next((j for j in waiting if j is not head and self.fits(j)
                     and self.passed + j["est"] + head["est"] <= self.limit()), None)

    def admit(self, job):
        self.held += job["est"]
        self.holders += 1
        job["passed"] = None if job is self.head else self.head
        if job["passed"] is not None:
            self.passed += job["est"]

    def release(self, job):
        self.held -= job["est"]
        self.holders -= 1
        self.borrowed -= job.get("loan", 0.0)
        if job["passed"] is not None and job["passed"] is self.head:
            self.passed -= job["est"]


def replay(jobs, capacity, slots=16, backfill=20.0, largest_first=False, lendable=0.0):
    """The phase's makespan in seconds under these rules."""
    jobs = [{**j, "state": "queued", "ticket": k} for k, j in enumerate(jobs)]
    budget, now = Budget(capacity, backfill, largest_first, lendable), 0.0
    while any(j["state"] != "done" for j in jobs):
        for j in jobs:
            if j["state"] in ("pre", "hold", "post") and now >= j["until"]:
                if j["state"] == "hold":
                    budget.release(j)
                j["state"], j["until"] = {"pre": ("wait", 0), "hold": ("post", now + POST_SECONDS),
                                          "post": ("done", now)}[j["state"]]
                if j["state"] == "done":
                    j["done"] = now
        free = slots - sum(j["state"] in ("pre", "wait", "hold", "post") for j in jobs)
        for j in [j for j in jobs if j["state"] == "queued"][:max(0, free)]:
            j["state"], j["until"] = "pre", now + PRE_SECONDS
        waiting = [j for j in jobs if j["state"] == "wait"]
        lending_open = not any(j["state"] == "pre" and j.get("prepares") for j in jobs)
        while (job := budget.next_admitted(waiting, now, lending_open)) is not None:
            budget.admit(job)
            job["state"], job["until"] = "hold", now + job["hold"]
            waiting.remove(job)
        now += STEP
    return max(j["done"] for j in jobs)


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    jobs = read_phase(argv[1], argv[2], argv[3])
    lend = [float(a.split("=", 1)[1]) for a in argv[5:] if a.startswith("--lend=")]
    for override in (a for a in argv[5:] if not a.startswith("--lend=")):
        prefix, gib = override.split("=")
        jobs = [{**j, "est": float(gib)} if j["problem"].startswith(prefix) else j for j in jobs]
    capacity = float(argv[4])
    for lendable in [0.0] + lend:
        suffix = f", borrowing {lendable:g} GiB" if lendable else ""
        for name, kw in (("arrival order, backfill 20 s", {}), ("arrival order, strict", {"backfill": 0}),
                         ("largest first, backfill 20 s", {"largest_first": True}),
                         ("largest first, strict", {"largest_first": True, "backfill": 0})):
            print(f"{name + suffix:52s} {replay(jobs, capacity, lendable=lendable, **kw):6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
