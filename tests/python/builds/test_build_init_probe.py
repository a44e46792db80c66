"""The build role's init probe (ModelNew built once to see extensions made in __init__) must not
hold the model's weights: KernelBench's shipped sizes reach 8 GB of parameters (level 3's
ShallowWideMLP, level 2's 32768x32768 GEMMs), twice the build sandbox's memory limit, and an
honest candidate was COMPILE_ERROR "build exceeded its memory limit" on an H100 (2026-11-27)."""
import json
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

REFERENCE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)

        def forward(self, x):
            return self.fc(x)

    def get_inputs():
        return [torch.randn(2, 16384)]

    def get_init_inputs():
        return [16384]
""")

# 1 GiB of weights, initialised (every page written) unless they are on the meta device
CANDIDATE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
            self.register_buffer("scale", torch.ones(n))
            self.built_in_init = torch.zeros(1).device.type

        def forward(self, x):
            return self.fc(x) * self.scale
""")

PROBE = textwrap.dedent("""
    import json, resource, sys
    sys.path.insert(0, sys.argv[1])
    import torch  # the candidate's import, before the baseline
    from kjudge_harness import build
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    req = json.loads(sys.argv[2])
    report = build.run(req, {})
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024
    print(json.dumps({"grew": grew, "report": {k: report.get(k) for k in ("ok", "stage", "init_probe", "static_policy")}}))
""")


def test_init_probe_holds_no_weights(tmp_path):
    (tmp_path / "reference.py").write_text(REFERENCE)
    (tmp_path / "candidate.py").write_text(CANDIDATE)
    request = {"candidate_path": str(tmp_path / "candidate.py"), "reference_path": str(tmp_path / "reference.py"),
               "backend": "cpu", "policy_overrides": {"no_kernel_for_backend": "off"}, "ext_dir": str(tmp_path / "ext"), "manifest_path": str(tmp_path / "manifest.json")}
    p = subprocess.run([sys.executable, "-c", PROBE, os.path.join(REPO, "python"), json.dumps(request)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["report"]["ok"] and out["report"]["stage"] == "done", out["report"]
    assert out["report"]["init_probe"] is None  # ModelNew.__init__ ran to its end
    assert out["grew"] < 256 << 20, "the init probe held %.2f GiB" % (out["grew"] / (1 << 30))
