"""The package's folders import one way, down the flow of ARCHITECTURE.md: no upward import
and no circle, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import bnn_posteriors

PACKAGE = Path(bnn_posteriors.__file__).parent
# the flow: util/store → data/models/site → claims/theory → inference → evaluation →
# studies → cli; a folder imports only folders of a lower layer (or itself)
LAYERS = {
    "util": 0,
    "store": 0,
    "data": 1,
    "models": 1,
    "site": 1,
    "claims": 2,
    "theory": 2,
    "inference": 3,
    "evaluation": 4,
    "studies": 5,
    "cli": 6,
    "__main__": 7,
}


def folder_imports(package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """Every (importing folder, imported folder, file) of the package across folders."""
    edges = set()
    for path in package.rglob("*.py"):
        folder = path.relative_to(package).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "bnn_posteriors" and len(parts) > 1 and parts[1] != folder:
                    edges.add((folder, parts[1], str(path.relative_to(package))))
    return edges


def test_every_folder_has_a_layer():
    folders = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if not p.name.startswith("_")}
    folders = {f for f in folders if (PACKAGE / f).is_dir()} | {"__main__"}
    assert folders <= set(LAYERS), sorted(folders - set(LAYERS))


def test_no_folder_imports_upward_or_in_a_circle():
    upward = sorted(
        f"{file}: {a} imports {b}" for a, b, file in folder_imports() if LAYERS[b] >= LAYERS[a]
    )
    assert not upward, upward


def test_the_check_sees_an_upward_import_inside_a_function(tmp_path):
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "sweep.py").write_text(
        "def run():\n    from bnn_posteriors.cli.main import run_chapter\n"
    )
    assert folder_imports(tmp_path) == {("claims", "cli", "claims/sweep.py")}
