"""Where scripts/setup (scripts/setup_python_envs) puts the Python environments the suite uses
besides Debian's: a wheelhouse of the client's dependencies (the fresh-virtualenv install test
resolves from it with no network) and a virtualenv with the torch 2.x the GPU nodes run (the
torch 2.x tier of scripts/test). Both paths may be given in the environment; the defaults are
the setup script's."""
import os
from pathlib import Path

CACHE = Path(os.environ.get("KJUDGE_PY_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kjudge")
WHEELHOUSE = Path(os.environ.get("KJUDGE_WHEELHOUSE") or CACHE / "wheels")
TORCH2_VERSION = "2.11.0"  # the GPU nodes' torch (scripts/setup_python_envs pins the same)
TORCH2_PYTHON = Path(os.environ.get("KJUDGE_TORCH2_PYTHON") or CACHE / f"torch-{TORCH2_VERSION}" / "bin" / "python")

if __name__ == "__main__":  # scripts/test: the torch 2.x tier's interpreter
    print(TORCH2_PYTHON)
