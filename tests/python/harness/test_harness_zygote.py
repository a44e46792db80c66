"""The harness zygote (python/kjudge_harness/zygote.py): a KernelBench-format candidate resumed
from it runs without a torch import of its own, yet in the same sandbox an exec'd interpreter
gets. The candidate probes its own process (ids, no_new_privs, seccomp, its pid namespace, its
environment, its file descriptors, the host's paths) and refuses to work if anything of the
zygote or the host shows; the same probe runs with the zygote switched off. Real `kjudge eval`,
real sandboxes, real g++."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from eval_workspace import eval_workspace

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASK = ROOT / "tests" / "kernelbench" / "tasks" / "elementwise_add"

PROBE = r'''
import os as _os, socket as _socket


def _probe(host_dir):
    found = []
    status = open("/proc/self/status").read()
    if "NoNewPrivs:\t1" not in status:
        found.append("no_new_privs is not set")
    if "Seccomp:\t2" not in status:
        found.append("no seccomp filter")
    if _os.getuid() == 0:
        found.append("uid 0")
    if not open("/proc/1/cmdline", "rb").read().startswith(b"kjsandbox-init"):
        found.append("pid 1 is not the sandbox's init")
    # spelled in pieces: the static policy refuses a candidate that names the judge's internals
    prefixes = tuple("KJ" + p for p in ("SANDBOX", "UDGE_RES" + "UME", "UDGE_HAR" + "NESS", "UDGE_ZYG" + "OTE"))
    leaked = [k for k in _os.environ if k.startswith(prefixes)]
    if leaked:
        found.append(f"zygote environment: {leaked}")
    if _os.path.exists(host_dir):
        found.append(f"host path {host_dir} is visible")
    for fd in _os.listdir("/proc/self/fd"):
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            s = _socket.socket(fileno=_os.dup(int(fd)))
            if s.type == _socket.SOCK_SEQPACKET:
                found.append(f"a SEQPACKET socket (the zygote's?) on fd {fd}")
            s.close()
    for pid in filter(str.isdigit, _os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if (b"kj" + b"udge_har" + b"ness.zygote") in cmd:
            found.append(f"the zygote is visible as pid {pid}")
    if found:
        raise RuntimeError("PROBE: " + "; ".join(found))
'''


def candidate_source(host_dir):
    src = (TASK / "cpu_ok.py").read_text()
    src = src.replace("import torch\n", "import torch\n" + PROBE, 1)
    return src.replace("        super().__init__()\n", f"        super().__init__()\n        _probe({str(host_dir)!r})\n", 1)


@pytest.mark.parametrize("zygote", [True, False])
def test_candidate_from_the_zygote_is_sandboxed_and_skips_the_import(tmp_path, zygote):
    with eval_workspace("kjudge-zyg.", zygote=zygote) as (base, _, cfg):
        # a model's answer, as a trainer sends it: the extraction (harness modules imported late) and
        # the build run as resumed roles too
        cand = base / "completion.md"
        cand.write_text("Here is the kernel.\n\n```python\n" + candidate_source(ROOT / "python") + "```\n")
        cand.chmod(0o644)
        p = subprocess.run([str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference", str(TASK / "reference.py"),
                            "--kb-completion", str(cand), "--backend", "cpu", "--json", "--trials", "2"],
                           capture_output=True, text=True, timeout=900)
        result = json.loads(p.stdout)
        assert result["status"] == "OK", (result.get("message"), result.get("feedback"), p.stderr[-2000:])
        phases = result["phaseSeconds"]
        build = sum(s.get("seconds", 0.0) for s in result["stages"] if s.get("stage") == "STAGE_BUILD")
        print(f"zygote={zygote}: build {build:.1f} s, build.import {phases['build.import']:.3f} s, "
              f"candidate.import {phases['candidate.import']:.3f} s")
        for role in ("build", "candidate"):
            if zygote:  # `kjudge eval` waits for the zygote: every role is resumed, torch already imported
                assert phases[f"{role}.import"] < 0.3, phases
            else:  # a fresh interpreter imports torch (~2 s here)
                assert phases[f"{role}.import"] > 0.5, phases
