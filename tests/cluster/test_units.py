"""The shipped HA units and configs (systemd/kjudge-sentinel.*, systemd/kjudge-redis.conf) are
what the real programs accept: systemd's parser takes the unit, redis-sentinel runs the sample
config (quorum 2), redis-server runs the data node's lines."""

import os
import subprocess
from pathlib import Path

import pytest
import redis

from cluster import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_sentinel_unit_verifies():
    analyze = "/usr/bin/systemd-analyze"
    if not os.path.exists(analyze):
        pytest.skip("systemd-analyze not installed")
    p = subprocess.run([analyze, "verify", str(ROOT / "systemd/kjudge-sentinel.service")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "kjudge-sentinel.service" not in p.stderr, p.stderr


def run(argv, port):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: proc.poll() is not None or _pings(port), 20, f"{argv[0]} on {port}")
        assert proc.poll() is None, f"{argv} exited {proc.returncode}"
        return proc
    except BaseException:
        proc.kill()
        raise


def _pings(port):
    try:
        return redis.Redis(host="127.0.0.1", port=port).ping()
    except redis.RedisError:
        return False


def test_sample_configs_run(tmp_path):
    data_port, sentinel_port = free_port(), free_port()
    data_conf = tmp_path / "redis.conf"
    data_conf.write_text((ROOT / "systemd/kjudge-redis.conf").read_text() +
                         f"\nport {data_port}\nbind 127.0.0.1\ndir {tmp_path}\nsave \"\"\n")
    conf = (ROOT / "systemd/kjudge-sentinel.conf").read_text()
    conf = conf.replace("port 26379", f"port {sentinel_port}").replace("bind 0.0.0.0", "bind 127.0.0.1")
    conf = conf.replace("dir /var/lib/redis", f"dir {tmp_path}").replace(
        "logfile /var/log/redis/kjudge-sentinel.log", f"logfile {tmp_path}/sentinel.log")
    conf = conf.replace("10.0.0.11 6379", f"127.0.0.1 {data_port}")
    (tmp_path / "sentinel.conf").write_text(conf)
    procs = [run(["redis-server", str(data_conf)], data_port)]
    try:
        procs.append(run(["/usr/bin/redis-sentinel", str(tmp_path / "sentinel.conf")], sentinel_port))
        data = redis.Redis(host="127.0.0.1", port=data_port)
        assert data.config_get("min-replicas-to-write") == {"min-replicas-to-write": "1"}
        assert data.config_get("appendonly") == {"appendonly": "yes"}
        s = redis.Redis(host="127.0.0.1", port=sentinel_port, decode_responses=True)
        master = s.execute_command("SENTINEL", "MASTER", "kjudge")
        fields = dict(zip(master[::2], master[1::2]))
        assert fields["quorum"] == "2" and fields["port"] == str(data_port)
        assert fields["down-after-milliseconds"] == "2000"
    finally:
        for p in procs:
            p.kill()
            p.wait()
