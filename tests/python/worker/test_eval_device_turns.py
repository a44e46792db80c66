"""Parallel `kjudge eval`s on one node judge in turns: each starts a trusted worker that budgets
the whole device for itself, and twelve at once ran an H100 out of memory (INFRA_ERROR,
bench/results/kernelbench/h100-20261125-gpu_run-jobs12.log). An eval builds at once, then takes
the node's device turn (<cache>/cpu.turn, gpu<N>.turn) from its worker's start to its result. Here
the test holds the turn as another eval would, and the eval must wait for it (its
phase_seconds["device_turn_wait"]; it is seen queued for the lock in /proc/locks) and then be
judged as usual. Real `kjudge eval`, sandboxes, g++."""
import fcntl
import json
import os
import subprocess
import time
from pathlib import Path

from eval_workspace import eval_workspace

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASK = ROOT / "tests" / "kernelbench" / "tasks" / "elementwise_add"
HELD_AFTER_S = 2.0  # how long the turn stays held once the eval is seen waiting for it


def blocked_on(path, pid):
    """True while process `pid` waits for an flock on `path` (a "->" line of /proc/locks)."""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" not in fields:
                continue
            rest = fields[fields.index("->") + 1:]  # FLOCK ADVISORY WRITE <pid> <major:minor:inode> ...
            if rest[0] == "FLOCK" and int(rest[3]) == pid and int(rest[4].rsplit(":", 1)[1]) == ino:
                return True
    return False


def test_an_eval_waits_for_the_device_turn_another_holds():
    # the one eval here without a precompiled header, so that path stays judged too
    with eval_workspace("kjudge-turn.", precompiled_header=False) as (_, cache, cfg):
        turn = os.open(cache / "cpu.turn", os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(turn, fcntl.LOCK_EX)  # another eval is judging
        proc = subprocess.Popen([str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference",
                                 str(TASK / "reference.py"), "--kb-candidate", str(TASK / "cpu_ok.py"), "--backend", "cpu",
                                 "--json", "--trials", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600
        while not blocked_on(cache / "cpu.turn", proc.pid):  # it built, then queued for the turn
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"the eval finished while another held the device turn: {out[-1500:]} {err[-1500:]}")
            assert time.monotonic() < deadline, "the eval never asked for the device turn"
            time.sleep(0.1)
        time.sleep(HELD_AFTER_S)
        assert proc.poll() is None
        os.close(turn)  # that eval is done
        out, err = proc.communicate(timeout=600)
        result = json.loads(out)
        assert result["status"] == "OK", (result.get("message"), err[-2000:])
        waited = result["phaseSeconds"]["device_turn_wait"]
        build = sum(s.get("seconds", 0.0) for s in result["stages"] if s.get("stage") == "STAGE_BUILD")
        print(f"build {build:.1f} s, waited for the turn {waited:.1f} s")
        assert waited >= HELD_AFTER_S, (build, waited)
