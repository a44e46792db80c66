"""Two KernelBench-format jobs started together on a fresh cache dir: the precompiled
torch/extension.h is built once, the other job waits for it (an flock in the cache dir) instead
of failing (kernelbench.pch_failed) and building without it. Then the same job again: its build is
replayed from the build memo (no build sandbox) in well under 0.5 s. Real `kjudge eval`
processes, real sandboxes, real g++."""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASKS = ROOT / "tests" / "kernelbench" / "tasks"


def build_seconds(result):
    return sum(s.get("seconds", 0.0) for s in result.get("stages", []) if s.get("stage") == "STAGE_BUILD")


def start_eval(config, task, state):
    state.mkdir(mode=0o711)
    cfg = state / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{state}"\n\n' + config.read_text())
    cmd = [str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference", str(TASKS / task / "reference.py"),
           "--kb-candidate", str(TASKS / task / "cpu_ok.py"), "--backend", "cpu", "--json", "--trials", "3",
           "--job-id", f"pch-{task}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(stderr, name):
    out = []
    for line in stderr.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("event") == name:
            out.append(rec)
    return out


@pytest.fixture
def base():
    """Outside pytest's 0700 tmp_path (the sandboxes' user must reach the cache); removed after the
    test: the precompiled header and its builds are about 1.9 GB a run."""
    d = Path(tempfile.mkdtemp(prefix="kjudge-pch."))
    d.chmod(0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_concurrent_first_uses_wait_for_one_pch(tmp_path, base):
    cache = base / "cache"
    cache.mkdir(mode=0o755)
    config = tmp_path / "kb.toml"
    # one variant of the header (the tasks' -O2), not three: the waiting is the same, at a third of the CPU
    config.write_text(f'[kernelbench]\ncache_dir = "{cache}"\nharness_dir = "{ROOT / "python"}"\npch_variants = ["O2"]\n')
    procs = [start_eval(config, task, base / f"state-{task}") for task in ("elementwise_add", "activation_relu")]
    outs = [p.communicate(timeout=3000) for p in procs]
    waits = []
    for (stdout, stderr), p in zip(outs, procs):
        assert p.returncode == 0, stderr[-3000:]
        assert not events(stderr, "kernelbench.pch_failed"), stderr[-3000:]  # warn: kjudge eval shows it
        result = json.loads(stdout)
        assert result["status"] == "OK", result
        waits.append(result["phaseSeconds"]["build.pch_wait"])
    assert not (cache / "torch-pch" / "cpu.failed").exists()
    assert [p.name for p in (cache / "torch-pch" / "cpu" / "pch" / "torch" / "extension.h.gch").iterdir()] == ["O2.gch"]
    # extensions live in a folder per tenant and candidate source: two sources, two folders
    folders = [d for d in (cache / "torch-ext").iterdir() if d.is_dir()]
    assert len(folders) == 2 and all(any(f.iterdir()) for f in folders), folders
    # one job built the header, the other waited for it (the header takes half a minute or more)
    assert max(waits) > 10 and min(waits) < 1, waits
    again, stderr = start_eval(config, "elementwise_add", base / "state-again").communicate(timeout=600)
    result = json.loads(again)
    assert result["status"] == "OK", stderr[-3000:]
    assert result["compile"].get("cacheHit") and result["phaseSeconds"].get("build.replayed") == 1, result
    assert build_seconds(result) < 0.5, result["stages"]
    print(f"cache hit: build stage {build_seconds(result):.3f} s")
