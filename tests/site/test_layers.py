"""The house's layers, from the bottom: `core` (errors, HTTP request types, pagination, input
checks, task publishing, COPY writes), `traces` (projects, access, trajectories, review),
`experiences` (distillation, recall, curation), and `hindsight_site` on top (settings, the
pipeline that wires review to distillation, URLs, the launcher). A module may import its own
layer and the ones below it, never one above: this test reads every import (also those inside
functions)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["core", "traces", "experiences", "hindsight_site"]


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_no_module_imports_a_layer_above_its_own(layer):
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & above)
        for path in sorted((ROOT / layer).rglob("*.py"))
        if imported_packages(path) & above
    }
    assert wrong == {}, f"{layer} imports from above it: {wrong}"


def test_the_check_sees_a_violation(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from experiences.models import Experience\n")
    assert "experiences" in imported_packages(module)


def test_no_view_overwrites_the_vary_header():
    """A view's htmx answer varies on HX-Request through vary_on_htmx (patch_vary_headers):
    assigning Vary dropped the session's Cookie from it, so a cache could hand one user's page
    to another."""
    views = [p for app in ("traces", "experiences") for p in (ROOT / app / "views").glob("*.py")]
    assert views
    assigns = re.compile(r"""headers\[["']Vary["']\]\s*=""")
    offenders = [p.name for p in views if assigns.search(p.read_text())]
    assert offenders == []
