"""The trainer tier (scripts/test_trainers): each file runs in its trainer's venv
(scripts/setup_trainers) with the real trainer package, against a real redis-server and a real
kjudged (the fixtures of tests/python)."""

import importlib.util
import sys
from pathlib import Path

PY_TESTS = Path(__file__).resolve().parents[1] / "python"
sys.path.insert(0, str(PY_TESTS))

_spec = importlib.util.spec_from_file_location("kjudge_python_conftest", PY_TESTS / "conftest.py")
_python_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_python_conftest)

redis_url = _python_conftest.redis_url
from test_e2e import daemon  # noqa: E402,F401  (a real kjudged, dev config, cpu backend)
