"""A fresh place for a `kjudge eval -c` of a KernelBench-format job: its state dir (0711, bound into
sandboxes as an unprivileged uid), its cache dir (0755) and a kjudge.toml naming them, with the
source tree's harness, no precompiled header (a build takes seconds) and any further
[kernelbench] keys. Removed afterwards: sandboxes fill it with builds."""
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def eval_workspace(prefix, **kernelbench):
    """(base dir, cache dir, config file), removed when the block ends."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o711)
    (base / "state").mkdir(mode=0o711)
    cache = base / "cache"
    cache.mkdir(mode=0o755)
    extra = "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in kernelbench.items())
    cfg = base / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{base / "state"}"\n\n[kernelbench]\ncache_dir = "{cache}"\n'
                   f'harness_dir = "{ROOT / "python"}"\nprecompiled_header = false\n{extra}')
    try:
        yield base, cache, cfg
    finally:
        shutil.rmtree(base, ignore_errors=True)
