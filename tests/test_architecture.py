"""The import rules of the flow (STYLE.md section 5), checked on the source with ``ast``.

Data moves forward only: a step imports the shared layers and the steps before it, never the
ones after; only ``frontend`` imports onnx, only ``solve`` imports ortools / pulp / highspy,
only ``cli`` prints.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pimsolve"
FLOW = ["frontend", "lowering", "stages", "codegen", "simulate", "report"]
SHARED = {"ir": {"ir"}, "target": {"ir", "target", "errors"},
          "solve": {"ir", "solve", "options", "errors"}}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_flow(path: Path) -> None:
    part = _part(path)
    used = {name.split(".")[1] for name in _imports(path)
            if name.startswith("pimsolve.") and len(name.split(".")) > 1}
    if part in SHARED:
        assert used <= SHARED[part], f"{part} may import only {SHARED[part]}, got {used}"
    if part in FLOW:
        later = set(FLOW[FLOW.index(part) + 1:])
        assert not used & later, f"{part} imports later steps {used & later}"
    if part == "simulate":
        assert not used & {"solve", "stages"}, "the simulator must not know who mapped"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_heavy_dependencies_stay_in_their_package(path: Path) -> None:
    roots = {name.split(".")[0] for name in _imports(path)}
    part = _part(path)
    if part != "frontend":
        assert "onnx" not in roots or part == "api", "only frontend (and the api) imports onnx"
    if part != "solve":
        assert not roots & {"ortools", "pulp", "highspy"}, "only solve imports solvers"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_cli_prints(path: Path) -> None:
    if _part(path) in ("cli", "__main__"):
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    assert "print" not in calls
    attrs = [f"{n.value.id}.{n.attr}" for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]
    assert "sys.exit" not in attrs


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checker itself works: a module importing a later step is flagged."""
    bad = tmp_path / "bad.py"
    bad.write_text("from pimsolve.report.render import targets_table\nimport ortools\n")
    assert "pimsolve.report.render" in _imports(bad)
    assert "ortools" in {name.split(".")[0] for name in _imports(bad)}
