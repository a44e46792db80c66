"""`pip install ./python` into a fresh virtualenv: only the kjudge client is installed (with its
declared dependencies, resolved by pip from a package index), kjudge-bench is on PATH, and the
installed package judges a candidate through a real kjudged. The index is the wheelhouse that
scripts/setup downloads (scripts/setup_python_envs): the test itself reaches no network, and
without the wheelhouse it fails rather than skip."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from python_envs import WHEELHOUSE
from test_e2e import daemon  # noqa: F401  (the real kjudged fixture)

ROOT = Path(__file__).resolve().parents[3]
RELU = ROOT / "tests" / "kernelbench" / "tasks" / "activation_relu"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    assert any(WHEELHOUSE.glob("redis-*.whl")), f"no wheelhouse at {WHEELHOUSE}: run scripts/setup"
    base = tmp_path_factory.mktemp("venv")
    # install from a copy: pip's in-tree build would leave build/ and *.egg-info in the checkout
    src = base / "python"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env_dir = base / "env"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(env_dir)], check=True)
    # only the wheelhouse: pip resolves the declared dependencies (and the build's setuptools) there
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    pip = subprocess.run([str(env_dir / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", "--no-index",
                          "--find-links", str(WHEELHOUSE), str(src)], capture_output=True, text=True, timeout=600, env=env)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return env_dir


def run_in(venv, code, *args):
    # outside the checkout and without PYTHONPATH: only the installed package can be imported
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code, *args], capture_output=True, text=True,
                          cwd=str(venv), env=env, timeout=900)


def test_only_the_client_is_installed_with_its_dependencies(venv):
    p = run_in(venv, """
import importlib.util, kjudge, redis, google.protobuf
from kjudge.v1 import job_pb2
job = kjudge.build_job("class Model: pass", completion="x", backend="cpu", mode="compat")
assert job.options.strictness == job_pb2.COMPAT_KERNELBENCH
print(kjudge.__file__)
print(importlib.util.find_spec("kjudge_harness"), importlib.util.find_spec("kjudge_worker"))
""")
    assert p.returncode == 0, p.stderr
    where, absent = p.stdout.splitlines()
    assert where.startswith(str(venv)) and absent == "None None"
    bench = subprocess.run([str(venv / "bin" / "kjudge-bench"), "--help"], capture_output=True, text=True)
    assert bench.returncode == 0 and "--generations" in bench.stdout


def test_the_installed_package_judges_through_a_real_daemon(venv, redis_url, daemon):  # noqa: F811
    p = run_in(venv, """
import sys, pathlib, kjudge
from kjudge.reward import compute_score
ref, cand, url = sys.argv[1:]
r = kjudge.judge(pathlib.Path(ref), candidate=pathlib.Path(cand), backend="cpu", redis_url=url, trials=5, timeout_s=600)
print(kjudge.v1.verdict_pb2.Verdict.Name(r.status))
out = compute_score("kb", "no code here", pathlib.Path(ref).read_text(), {"backend": "cpu"}, redis_url=url)
print(out["verdict"], out["score"])
""", str(RELU / "reference.py"), str(RELU / "cpu_ok.py"), redis_url)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["OK", "COMPILE_ERROR", "-1.0"]  # the daemon's default-v2 scale
