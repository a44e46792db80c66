"""Build role (compile sandbox: no GPU, no network): the static policy first, then the
candidate module is imported with load_inline redirected so every extension is compiled into the
job's build dir (or taken from the cache) and recorded in a manifest for the candidate role."""
import json
import os

from . import diagnosis, extensions, phases, static_policy
from kjudge_protocol.module_loader import load_module


def run(request, report):
    if request.get("completion_path"):
        # A raw model answer: take the right fenced block, or fail the way a compile error does.
        from .extract import extract_code
        with open(request["completion_path"]) as f:
            code, message = extract_code(f.read())
        report["extraction"] = message
        if code is None:
            raise diagnosis.NoCandidateCode(message)
        with open(request["candidate_path"], "w") as f:
            f.write(code)
    with open(request["candidate_path"]) as f:
        source = f.read()
    report["stage"] = "static_policy"
    policy = static_policy.check(source, request["backend"], request.get("policy_overrides") or {})
    report["static_policy"] = policy
    phases.mark("static_policy")
    if policy.get("reject"):
        if policy["reject"].get("rule") == "syntax_error":  # the daemon's feedback: where, with a caret
            report.update(diagnosis.syntax_feedback(source) or {})
        report["ok"] = True  # the policy ran; the daemon turns its reject into the verdict
        return report
    report["stage"] = "build"
    os.environ["TORCH_EXTENSIONS_DIR"] = request["ext_dir"]
    os.environ.setdefault("MAX_JOBS", str(request.get("max_jobs", 2)))
    if request.get("arch_list"):
        os.environ["TORCH_CUDA_ARCH_LIST"] = request["arch_list"]
    os.environ.update(nvcc_environment(request))
    if request.get("light_headers") is False:  # the node's kernelbench.light_headers
        os.environ["KJUDGE_LIGHT_HEADERS"] = "0"
    hooks = extensions.BuildHooks(request["ext_dir"], request.get("cache_dir"), request.get("pch_dir"),
                                  request["backend"], request.get("arch_list", ""))
    extensions.install(hooks)
    cand = load_module(request["candidate_path"], "candidate")
    phases.mark("build")
    if not hasattr(cand, "ModelNew"):
        raise AttributeError("the candidate module defines no ModelNew")
    # Extensions built in ModelNew.__init__ are only seen when it runs: try it, its tensors on the
    # meta device (a KernelBench model's weights reach 8 GB, twice the build's memory limit); a
    # failure is not the candidate's fault at this stage, only a missed prebuild.
    if request.get("reference_path"):
        try:
            ref = load_module(request["reference_path"], "reference", request.get("size_overrides"))
            init_inputs = ref.get_init_inputs()
            with meta_factories():
                cand.ModelNew(*init_inputs)
        except Exception as exc:  # noqa: BLE001
            report["init_probe"] = f"{type(exc).__name__}: {exc}"[:500]
    phases.mark("init_probe")
    report["extensions"] = hooks.records
    import torch  # already imported by the candidate and the hooks
    report["torch"] = {"version": torch.__version__, "file": torch.__file__}  # the daemon's build memo
    with open(request["manifest_path"], "w") as f:
        json.dump(hooks.records, f)
    report["ok"] = True
    report["stage"] = "done"
    return report


def meta_factories():
    """A mode in which tensors made without a device go to the meta device: shapes, no storage
    (what `with torch.device("meta")` does in torch >= 2.0; this works from 1.13, the CI's torch)."""
    import torch  # the candidate imported it already; a policy reject never gets here
    factories = {torch.empty, torch.empty_strided, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn,
                 torch.randint, torch.randperm, torch.arange, torch.linspace, torch.logspace, torch.eye, torch.tensor,
                 torch.as_tensor, torch.scalar_tensor}

    class MetaFactories(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in factories and kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    return MetaFactories()


def nvcc_environment(request):
    """What nvcc_steps.py reads from the daemon's request: [kernelbench] nvcc_halves = false
    (nvcc itself) and the build sandbox's memory limit (its MemoryGuard)."""
    env = {}
    if not request.get("nvcc_halves", True):
        env["KJUDGE_NVCC_STEPS"] = "0"
    if request.get("memory_limit_bytes"):
        env["KJUDGE_BUILD_MEMORY_BYTES"] = str(int(request["memory_limit_bytes"]))
    return env
