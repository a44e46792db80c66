"""Redis key names of the kjudge queue (design §8).

Mirrors queue/src/keys.cpp exactly; tests in both languages pin the same literal names. Every key
carries the partition hash tag ``{p<N>}`` and, where it concerns one tenant, the tenant.
"""

import re

GROUP = "kjudged"  # the consumer group of every jobs stream

_TENANT = re.compile(r"[a-z0-9_-]{1,64}")
_JOB_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def valid_tenant(tenant: str) -> bool:
    """Tenant names end up inside keys: ``[a-z0-9_-]{1,64}``."""
    return isinstance(tenant, str) and _TENANT.fullmatch(tenant) is not None


def valid_job_id(job_id: str) -> bool:
    """Job ids end up inside keys: ``[A-Za-z0-9._:-]{1,128}``."""
    return isinstance(job_id, str) and _JOB_ID.fullmatch(job_id) is not None


def tag(partition: int) -> str:
    return "{p%d}" % partition


def _prefix(partition: int) -> str:
    return "kj:" + tag(partition) + ":"


def tenants(partition: int) -> str:
    """Set of registered tenants."""
    return _prefix(partition) + "tenants"


def tokens(partition: int) -> str:
    """kjudge-gateway's API tokens: hash sha256(token) hex -> tenant (kjudge admin token)."""
    return _prefix(partition) + "tokens"


LANES = (1, 0, -1)  # priority lanes, highest first


def lane_of_priority(priority: int) -> int:
    """Job.priority > 0 runs in lane 1, < 0 in lane -1, 0 in lane 0."""
    return 1 if priority > 0 else -1 if priority < 0 else 0


def jobs(partition: int, tenant: str, lane: int = 0) -> str:
    """The tenant's jobs stream of one priority lane (":high" / ":low" appended for lanes 1 / -1)."""
    return _prefix(partition) + "jobs:" + tenant + (":high" if lane > 0 else ":low" if lane < 0 else "")


def job_marker(partition: int, tenant: str, job_id: str) -> str:
    """Idempotency marker: holds the stream entry id of the first submission."""
    return _prefix(partition) + "job:" + tenant + ":" + job_id


def result(partition: int, tenant: str, job_id: str) -> str:
    """The serialized kjudge.v1.Result (first one wins, expires)."""
    return _prefix(partition) + "result:" + tenant + ":" + job_id


def done(partition: int, tenant: str) -> str:
    """The tenant's completion-event stream (fields ``id``, ``status``)."""
    return _prefix(partition) + "done:" + tenant


def node(partition: int, node_name: str) -> str:
    """A node's heartbeat."""
    return _prefix(partition) + "node:" + node_name


def queued(partition: int, tenant: str) -> str:
    """Counter of the tenant's jobs that have no result yet (admission/quota)."""
    return _prefix(partition) + "queued:" + tenant


def config(partition: int) -> str:
    """Hash of partition settings kjudged publishes: max_job_bytes (kj_submit's payload limit)."""
    return _prefix(partition) + "config"


def quotas(partition: int) -> str:
    """Hash tenant (or ``*``) -> max jobs waiting for a result."""
    return _prefix(partition) + "quotas"


def batch(partition: int, tenant: str, batch_id: str) -> str:
    """Batch counters (hash: submitted, completed, expected, verdict:<V>)."""
    return _prefix(partition) + "batch:" + tenant + ":" + batch_id


def dead(partition: int, tenant: str) -> str:
    """Dead-letter stream."""
    return _prefix(partition) + "dead:" + tenant


def retry(partition: int, tenant: str) -> str:
    """Payloads of jobs parked for a retry."""
    return _prefix(partition) + "retry:" + tenant


def delayed(partition: int, tenant: str) -> str:
    """Zset job id -> due time (unix ms) of parked retries."""
    return _prefix(partition) + "delayed:" + tenant


def cancel(partition: int, tenant: str, job_id: str) -> str:
    """Cancel marker of one job."""
    return _prefix(partition) + "cancel:" + tenant + ":" + job_id


def batch_cancel(partition: int, tenant: str, batch_id: str) -> str:
    """Cancel marker of a whole batch."""
    return _prefix(partition) + "bcancel:" + tenant + ":" + batch_id


def drain(partition: int, node_name: str) -> str:
    """An operator's drain request for a node."""
    return _prefix(partition) + "drain:" + node_name


# The shared build store (docs/operator-guide.md, *Build nodes*): daemons only, no tenant user reads them.
def artifact(partition: int, key: str) -> str:
    """A shared build: sha256 + artifact bytes, keyed by the build's content key (expires)."""
    return _prefix(partition) + "art:" + key


def build_lease(partition: int, key: str) -> str:
    """Who builds that content key now (PX, renewed by its builder)."""
    return _prefix(partition) + "blease:" + key


def building(partition: int, tenant: str) -> str:
    """Zset of the tenant's live build leases (its cluster cap counts them on build nodes)."""
    return _prefix(partition) + "building:" + tenant


def builders(partition: int) -> str:
    """Zset of live build nodes: node -> expiry ms."""
    return _prefix(partition) + "builders"


def build_requests(partition: int, tenant: str, lane: int = 0) -> str:
    """A tenant lane's build requests (entry ids of KernelBench jobs), read by build nodes' group kjbuild."""
    return _prefix(partition) + "breq:" + tenant + (":high" if lane > 0 else ":low" if lane < 0 else "")


def archs(partition: int) -> str:
    """Hash judging node -> "<expiry ms> <TORCH_CUDA_ARCH_LIST>" its CUDA builds target."""
    return _prefix(partition) + "archs"


def housekeeper(partition: int) -> str:
    """The elected housekeeper's lease: "<owner> <token>", PX."""
    return _prefix(partition) + "housekeeper"
