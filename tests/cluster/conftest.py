"""A cluster in a box per test (deploy/cluster/cluster.py): real sentinels, Redis, kjudged nodes,
a build node and gateways, on free ports, in a fresh directory; stopped and removed after."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "cluster"))
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("KJUDGE_BIN", str(Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test")) / "bin"))

from cluster import Cluster  # noqa: E402


@pytest.fixture
def cluster_factory():
    made = []

    def make(**kw):
        d = tempfile.mkdtemp(prefix="kjcluster.", dir="/tmp")
        c = Cluster(d, **kw)
        made.append(c)
        return c.up()
    yield make
    for c in made:
        c.down()
        if os.environ.get("KJUDGE_KEEP_CLUSTER") is None:
            shutil.rmtree(c.dir, ignore_errors=True)
