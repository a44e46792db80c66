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


def jobs(partition: int, tenant: str) -> str:
    """The tenant's jobs stream."""
    return _prefix(partition) + "jobs:" + tenant


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
