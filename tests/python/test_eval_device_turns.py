"""Parallel `kjudge eval`s on one node judge in turns: each starts a trusted worker that budgets
the whole device for itself, and twelve at once ran an H100 out of memory (INFRA_ERROR,
bench/results/kernelbench/h100-20261125-gpu_run-jobs12.log). An eval builds at once, then takes
the node's device turn (<cache>/cpu.turn, gpu<N>.turn) from its worker's start to its result. Here
the test holds the turn as another eval would, and the eval must wait for it (its
phase_seconds["device_turn_wait"]) and then be judged as usual. Real `kjudge eval`, sandboxes, g++."""
import fcntl
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASK = ROOT / "tests" / "kernelbench" / "tasks" / "elementwise_add"
HOLD_S = 45.0  # longer than the zygote start and the build below (~20 s here): the eval reaches the turn while it is held


def test_an_eval_waits_for_the_device_turn_another_holds():
    base = Path(tempfile.mkdtemp(prefix="kjudge-turn."))
    base.chmod(0o711)
    (base / "state").mkdir(mode=0o711)
    cache = base / "cache"
    cache.mkdir(mode=0o755)
    cfg = base / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{base / "state"}"\n\n[kernelbench]\ncache_dir = "{cache}"\n'
                   f'harness_dir = "{ROOT / "python"}"\nprecompiled_header = false\n')
    turn = os.open(cache / "cpu.turn", os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(turn, fcntl.LOCK_EX)  # another eval is judging
    t0 = time.monotonic()
    proc = subprocess.Popen([str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference",
                             str(TASK / "reference.py"), "--kb-candidate", str(TASK / "cpu_ok.py"), "--backend", "cpu",
                             "--json", "--trials", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while time.monotonic() - t0 < HOLD_S and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the eval finished while another held the device turn"
    os.close(turn)  # that eval is done
    out, err = proc.communicate(timeout=600)
    result = json.loads(out)
    assert result["status"] == "OK", (result.get("message"), err[-2000:])
    waited = result["phaseSeconds"]["device_turn_wait"]
    build = sum(s.get("seconds", 0.0) for s in result["stages"] if s.get("stage") == "STAGE_BUILD")
    print(f"build {build:.1f} s, waited for the turn {waited:.1f} s")
    assert waited > 5.0, (build, waited)
