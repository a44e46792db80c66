"""The trust boundary in Python is the package boundary: kjudge_harness runs in the candidate's
process (untrusted), kjudge_worker is the judge's trusted side, and what both use lives in
kjudge_protocol. Neither side imports the other, and the shared package imports neither; the client
(kjudge) imports neither side. scripts/check_layers checks the same table."""
import ast
from pathlib import Path

import pytest

PYTHON = Path(__file__).resolve().parents[3] / "python"
FORBIDDEN = {"kjudge_harness": {"kjudge_worker"}, "kjudge_worker": {"kjudge_harness"},
             "kjudge_protocol": {"kjudge_harness", "kjudge_worker"},
             "kjudge": {"kjudge_harness", "kjudge_worker"}}


def imported_packages(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_side_never_imports_the_other(package):
    crossings = [f"{f.relative_to(PYTHON)}:{line} imports {name}"
                 for f in sorted((PYTHON / package).rglob("*.py"))
                 for line, name in imported_packages(f) if name in FORBIDDEN[package]]
    assert not crossings, crossings
