"""The committed python/kjudge/v1/*_pb2.py are what scripts/gen_python_proto makes from proto/ now:
a .proto edited without regenerating (or a hand-edited module) fails here."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "python" / "kjudge" / "v1"


def test_committed_python_protos_match_a_fresh_generation(tmp_path):
    subprocess.run([str(ROOT / "scripts" / "gen_python_proto"), str(tmp_path)], check=True)
    fresh = sorted((tmp_path / "kjudge" / "v1").glob("*_pb2.py"))
    protos = sorted((ROOT / "proto" / "kjudge" / "v1").glob("*.proto"))
    assert [p.name for p in fresh] == [p.stem + "_pb2.py" for p in protos]
    committed = sorted(COMMITTED.glob("*_pb2.py"))
    assert [p.name for p in committed] == [p.name for p in fresh], "a generated module is missing or stale"
    version = subprocess.run(["protoc", "--version"], capture_output=True, text=True).stdout.strip()
    for f in fresh:
        assert (COMMITTED / f.name).read_bytes() == f.read_bytes(), (
            f"python/kjudge/v1/{f.name} differs from {version}'s output: run scripts/gen_python_proto")
