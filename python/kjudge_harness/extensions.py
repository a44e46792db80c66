"""load_inline under the judge. In the build sandbox every call is compiled into the job's build
dir (or taken from the content-addressed cache) and recorded in a manifest; in the candidate
sandbox the same call loads the prebuilt shared object read-only instead of compiling. The key
of a call is a hash of everything that determines its build, so a candidate cannot get a
different binary at run time than the one the build stage made."""
import hashlib
import importlib.util
import inspect
import json
import os
import sys

import torch
import torch.utils.cpp_extension as cpp_extension

from . import light_headers, nvcc_steps, phases
from .scoped_env import scoped_env
from .compile_feedback import ExtensionBuildError

_IGNORED = {"verbose", "build_directory", "keep_intermediates"}
_REAL_LOAD_INLINE = cpp_extension.load_inline


def call_key(bound_args, backend, arch_list):
    args = {k: v for k, v in bound_args.items() if k not in _IGNORED}
    blob = json.dumps([args, torch.__version__, backend, arch_list], sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _bind(args, kwargs):
    bound = inspect.signature(_REAL_LOAD_INLINE).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _as_list(sources):
    return [sources] if isinstance(sources, str) else list(sources or [])


def _compiled(build, bound):
    """build(); a failed compile becomes an ExtensionBuildError that keeps what maps its lines."""
    try:
        return build()
    except RuntimeError as exc:
        if not str(exc).startswith("Error building extension"):
            raise
        raise ExtensionBuildError(str(exc), bound["build_directory"], _as_list(bound.get("cpp_sources")),
                                  _as_list(bound.get("cuda_sources"))) from exc


def _so_in(directory):
    for name in sorted(os.listdir(directory)):
        if name.endswith(".so"):
            return os.path.join(directory, name)
    return None


def import_shared_object(path):
    """Imports a built extension from `path`; its module name is the file's stem (PyInit_<stem>)."""
    name = os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildHooks:
    """Build role: compile (or reuse) every load_inline call and remember where its .so is."""

    def __init__(self, ext_dir, cache_dir, pch_dir, backend, arch_list):
        self.ext_dir, self.cache_dir, self.pch_dir = ext_dir, cache_dir, pch_dir
        self.backend, self.arch_list = backend, arch_list
        self.records = []

    def load_inline(self, *args, **kwargs):
        bound = _bind(args, kwargs)
        key = call_key(bound, self.backend, self.arch_list)
        cached = os.path.join(self.cache_dir, key) if self.cache_dir else None
        if cached and os.path.isdir(cached) and _so_in(cached):
            so = _so_in(cached)
            self.records.append({"key": key, "name": bound["name"], "so": so, "cache_hit": True})
            return import_shared_object(so)
        build_dir = os.path.join(self.ext_dir, key)
        os.makedirs(build_dir, exist_ok=True)
        bound["build_directory"] = build_dir
        bound["verbose"] = False
        # A precompiled torch/extension.h found first on the include path (GCC looks for
        # <header>.gch beside each candidate header; ignored silently if flags differ)
        pch = self.pch_dir if self.pch_dir and os.path.isdir(self.pch_dir) else None
        env = nvcc_env(bound, os.path.join(self.ext_dir, f".nvcc-steps-{key}.jsonl"))
        try:
            with scoped_env(**env):
                module, mode = _compiled(lambda: light_headers.build(_REAL_LOAD_INLINE, bound, self.ext_dir, pch),
                                         bound)
        finally:  # a failed build's second device half still counts in its phases
            seen = nvcc_steps_seen(env)
        self.records.append({"key": key, "name": bound["name"], "so": _so_in(build_dir), "cache_hit": False,
                             "pch": bool(pch), "headers": mode, "gencodes": gencodes(build_dir),
                             "nvcc_steps": seen})
        return module


def nvcc_env(bound, step_log):
    """The .cu's nvcc with its host and device halves side by side (nvcc_steps.py), its record of
    each compile in step_log (outside the build dir, which goes into the cache)."""
    if not bound.get("cuda_sources"):
        return {}
    env = nvcc_steps.environment(cpp_extension.CUDA_HOME, sys.executable)
    if env and not os.environ.get("KJUDGE_NVCC_STEP_LOG"):
        env["KJUDGE_NVCC_STEP_LOG"] = step_log
    return env


def nvcc_steps_seen(env):
    """What nvcc_steps.py did for this call's .cu: each compile's wall seconds and whether its device
    half ran again after the host half (the memory guard, a module id that differed); the seconds
    of those second runs go into the role's phases (build.nvcc_device_half_again)."""
    path = env.get("KJUDGE_NVCC_STEP_LOG")
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    os.remove(path)  # read once: a second call of the same key starts a fresh record
    again = sum(r.get("again_seconds", 0.0) for r in recs)
    if again:
        phases.seconds["nvcc_device_half_again"] = round(phases.seconds.get("nvcc_device_half_again", 0.0) + again, 4)
    return [{"wall": round(r["wall"], 3), "status": r["status"], "device_half_again": r["device_half_again"]}
            for r in recs]


def gencodes(build_dir):
    """The -gencode flags nvcc got (one per architecture built), from the build.ninja."""
    try:
        with open(os.path.join(build_dir, "build.ninja")) as f:
            return sorted({a for line in f if line.startswith("cuda_cflags") for a in line.split()
                           if a.startswith("-gencode")})
    except OSError:
        return []


class PrebuiltHooks:
    """Candidate role: every load_inline call must match one the build stage compiled."""

    def __init__(self, manifest, backend, arch_list, fallback_dir):
        self.by_key = {r["key"]: r for r in manifest}
        self.backend, self.arch_list = backend, arch_list
        self.fallback_dir = fallback_dir
        self.loaded = []          # extension modules, for the legality trace's call counting
        self.built_at_run = []

    def load_inline(self, *args, **kwargs):
        bound = _bind(args, kwargs)
        key = call_key(bound, self.backend, self.arch_list)
        record = self.by_key.get(key)
        if record and record.get("so") and os.path.exists(record["so"]):
            module = import_shared_object(record["so"])
        else:
            # A call the build stage did not see (e.g. sources built at run time): compile it
            # here, in the candidate's own sandbox, and say so in the report.
            self.built_at_run.append(bound["name"])
            build_dir = os.path.join(self.fallback_dir, key)
            os.makedirs(build_dir, exist_ok=True)
            bound["build_directory"] = build_dir
            bound["verbose"] = False
            module = _compiled(lambda: _REAL_LOAD_INLINE(**bound), bound)
        self.loaded.append(module)
        return module


def install(hooks):
    cpp_extension.load_inline = hooks.load_inline
    torch.utils.cpp_extension.load_inline = hooks.load_inline

