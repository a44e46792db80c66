"""A fresh place for a `kjudge eval -c` of a KernelBench-format job: its state dir (0711, bound into
sandboxes as an unprivileged uid), its cache dir (0755) and a kjudge.toml naming them, with the
source tree's harness, the suite's precompiled header (shared_pch) and any further [kernelbench]
keys. Removed afterwards: sandboxes fill it with builds."""
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
SUITE_CACHE = BUILD / "kb-cache"  # the KernelBench suite's cache dir (test_kernelbench_suite.py)
# its header's variants: the -O0 and -O2 its tests' builds use (no -O3: ~30 CPU-s and 620 MB saved)
SUITE_PCH_VARIANTS = 'pch_variants = ["O0", "O2"]\n'
FIRST_TASK = ROOT / "tests" / "kernelbench" / "tasks" / "elementwise_add"


def suite_config(state):
    """A kjudge.toml for a `kjudge eval` on the suite's cache dir, as the suite writes it."""
    SUITE_CACHE.mkdir(mode=0o755, exist_ok=True)
    cfg = state / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{state}"\n\n[kernelbench]\ncache_dir = "{SUITE_CACHE}"\n'
                   f'harness_dir = "{ROOT / "python"}"\n{SUITE_PCH_VARIANTS}')
    return cfg


def suite_pch():
    """The suite's precompiled torch/extension.h (cpu), made first if it is missing: by a `kjudge eval`
    of the suite's first job, which takes the judge's own lock on the header (so it waits for the
    suite's making of it, or the suite for its). The candidate's text is made new (a comment) so
    that its build is never replayed from the cache, which would not need the header; a failure
    the judge recorded (it waits an hour before trying again) is cleared: this call asks for it."""
    pch = SUITE_CACHE / "torch-pch" / "cpu"
    if (pch / "pch" / "torch" / "extension.h.gch").is_dir():
        return pch
    state = Path(tempfile.mkdtemp(prefix="kjudge-pch-state."))
    state.chmod(0o711)
    try:
        candidate = state / "cpu_ok.py"
        candidate.write_text((FIRST_TASK / "cpu_ok.py").read_text() + f"\n# suite_pch {time.time_ns()}\n")
        candidate.chmod(0o644)
        (pch.parent / "cpu.failed").unlink(missing_ok=True)
        p = subprocess.run([str(BUILD / "bin/kjudge"), "eval", "-c", str(suite_config(state)), "--kb-reference",
                            str(FIRST_TASK / "reference.py"), "--kb-candidate", str(candidate),
                            "--backend", "cpu", "--json", "--trials", "10"], capture_output=True, text=True, timeout=1800)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert (pch / "pch" / "torch" / "extension.h.gch").is_dir(), p.stderr[-3000:]
    return pch


def shared_pch(cache):
    """Gives a fresh cache dir the suite's precompiled header (hard links: no copy of its 1.9 GB), so
    its builds take ~10 CPU-s instead of ~19 without one, and no test makes the header again. Its
    builds stay its own; test_kernelbench_pch makes its own header, test_eval_device_turns builds
    without one."""
    dest = cache / "torch-pch"
    dest.mkdir(mode=0o711)
    dest.chmod(0o711)
    shutil.copytree(suite_pch(), dest / "cpu", symlinks=True, copy_function=link_or_copy)


def link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:  # another filesystem
        shutil.copy2(src, dst)


@contextmanager
def eval_workspace(prefix, precompiled_header=True, **kernelbench):
    """(base dir, cache dir, config file), removed when the block ends."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o711)
    (base / "state").mkdir(mode=0o711)
    cache = base / "cache"
    cache.mkdir(mode=0o755)
    if precompiled_header:
        shared_pch(cache)
    kernelbench["precompiled_header"] = precompiled_header
    extra = "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in kernelbench.items())
    cfg = base / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{base / "state"}"\n\n[kernelbench]\ncache_dir = "{cache}"\n'
                   f'harness_dir = "{ROOT / "python"}"\n{extra}')
    try:
        yield base, cache, cfg
    finally:
        shutil.rmtree(base, ignore_errors=True)
