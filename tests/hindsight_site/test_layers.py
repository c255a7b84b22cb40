"""The house's layers, from the bottom: `core` (errors, HTTP request types, pagination, input
checks, task publishing, COPY writes, page and list-filter plumbing), `accounts` (projects,
members, API keys, access, the audit log), `traces` (trajectories, review),
`experiences` (distillation, recall, curation), and `hindsight_site` on top (settings, the
review tasks that wire review to distillation, URLs, the launcher). A module may import its own
layer and the ones below it, never one above: this test reads every import (also those inside
functions)."""

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["core", "accounts", "traces", "experiences", "hindsight_site"]
VIEW_APPS = ("accounts", "traces", "experiences")


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


# What experiences may use of traces: the models, the review's public reads (what a reviewed
# run says: its scene, its step views, its calls' effects and values) and three reads. Anything
# else of traces is its own business; widening this is a decision, not a side effect.
TRACES_SURFACE = {
    "traces.models",
    "traces.review.service",
    "traces.review.types",
    "traces.review.scene",
    "traces.review.request_goal",  # what a request asked, the condition of a family's way
    "traces.review.tool_effects",
    "traces.review.heuristic",
    "traces.review.heuristic.blame",
    "traces.review.heuristic.placeholders",
    "traces.review.values",
    "traces.known_values",
    "traces.observations",
    "traces.services.tool_profiles",
    "traces.display.text",
}


def imported_modules(path: Path, package: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == package:
                found.add(node.module)
    return found


def test_experiences_uses_traces_only_through_its_surface():
    outside = {
        str(path.relative_to(ROOT)): sorted(imported_modules(path, "traces") - TRACES_SURFACE)
        for path in sorted((ROOT / "experiences").rglob("*.py"))
        if imported_modules(path, "traces") - TRACES_SURFACE
    }
    assert outside == {}, f"experiences imports traces outside its surface: {outside}"


def test_the_surface_check_sees_a_violation(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from traces.services.ingest import trace_ingest\n")
    assert imported_modules(module, "traces") - TRACES_SURFACE == {"traces.services.ingest"}


def test_the_check_sees_a_violation(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from experiences.models import Experience\n")
    assert "experiences" in imported_packages(module)


def view_modules() -> list[Path]:
    return [p for app in VIEW_APPS for p in (ROOT / app / "views").glob("*.py")]


def test_no_view_overwrites_the_vary_header():
    """A view's htmx answer varies on HX-Request through vary_on_htmx (patch_vary_headers):
    assigning Vary dropped the session's Cookie from it, so a cache could hand one user's page
    to another."""
    views = view_modules()
    assert views
    assigns = re.compile(r"""headers\[["']Vary["']\]\s*=""")
    offenders = [p.name for p in views if assigns.search(p.read_text())]
    assert offenders == []


def _views_reading_htmx(path: Path) -> list[str]:
    """Functions that read `request.htmx` themselves (`wants_partial` is the one that may)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef) or node.name == "wants_partial":
            continue
        if any(
            isinstance(n, ast.Attribute) and n.attr == "htmx" and ast.unparse(n.value) == "request"
            for n in ast.walk(node)
        ):
            found.append(f"{path.name}:{node.name}")
    return found


def test_views_ask_wants_partial_not_request_htmx():
    """Whether htmx made a request is asked one way, `wants_partial` (and render_page_or_partial,
    navigate): a bare `request.htmx` also took boosted navigations and history restores (the
    back button) for a partial, and gave them a page without its suggestions."""
    views = view_modules()
    assert [f for p in views for f in _views_reading_htmx(p)] == []


def test_the_htmx_check_sees_a_violation(tmp_path):
    view = tmp_path / "view.py"
    view.write_text("@require_POST\ndef act(request):\n    return 1 if request.htmx else 2\n")
    assert _views_reading_htmx(view) == ["view.py:act"]


RENDERERS = {"render", "render_page_or_partial"}


def _templates(nodes: list) -> set[str]:
    """What the code renders: the template (and partial) arguments of its render calls, and
    the template names it spells ("x.html", "x.html#part", f"{PAGE}#part")."""
    found = set()
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in RENDERERS:
            found.add(", ".join(ast.unparse(a) for a in node.args[1:3]))
        elif isinstance(node, ast.Constant | ast.JoinedStr):
            if re.search(r"\.html|^f(['\"])\{[A-Z_]+\}#\w+\1$", spelled := ast.unparse(node)):
                found.add(spelled)
    return found


def _asks_wants_partial(test: ast.expr, holding: set[str]) -> bool:
    """Whether a condition is `wants_partial(...)`'s answer, or reads a name holding it."""
    return "wants_partial(" in ast.unparse(test) or any(
        isinstance(n, ast.Name) and n.id in holding for n in ast.walk(test)
    )


def _branches_on_wants_partial(function: ast.FunctionDef) -> list[tuple[list, list]]:
    """The two sides of every choice made on `wants_partial` in a function: an `if`'s body and
    its `else` (or, when the body returns, what follows it), and `a if ... else b`."""
    nodes = list(ast.walk(function))
    holding = {
        t.id
        for n in nodes
        if isinstance(n, ast.Assign) and "wants_partial(" in ast.unparse(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    sides = [
        ([n.body], [n.orelse])
        for n in nodes
        if isinstance(n, ast.IfExp) and _asks_wants_partial(n.test, holding)
    ]
    blocks = [getattr(n, f) for n in nodes for f in ("body", "orelse") if hasattr(n, f)]
    for block in (b for b in blocks if isinstance(b, list)):
        for i, statement in enumerate(block):
            if isinstance(statement, ast.If) and _asks_wants_partial(statement.test, holding):
                returns = isinstance(statement.body[-1], (ast.Return, ast.Raise))
                sides.append((statement.body, statement.orelse or block[i + 1 :] * returns))
    return sides


def _views_picking_templates(path: Path) -> list[str]:
    """Functions that choose between two templates (or partials) on `wants_partial` themselves.
    A side that renders nothing (a redirect, a plain-text answer) is no such choice."""
    return [
        f"{path.name}:{function.name}"
        for function in ast.walk(ast.parse(path.read_text()))
        if isinstance(function, ast.FunctionDef)
        and any(
            _templates(one) and _templates(other) and _templates(one) != _templates(other)
            for one, other in _branches_on_wants_partial(function)
        )
    ]


def test_views_leave_page_or_partial_to_render_page_or_partial():
    """A page answers htmx with its partial and anything else with itself through one helper,
    core.pages.render_page_or_partial (with `page_context` for what only the whole page shows):
    a view does not pick between two templates on `wants_partial` by hand."""
    views = view_modules()
    assert [f for p in views for f in _views_picking_templates(p)] == []


def test_the_template_choice_check_sees_a_violation(tmp_path):
    view = tmp_path / "view.py"
    view.write_text(
        "def stats(request):\n"
        "    partial = wants_partial(request)\n"
        '    template = "stats_partial.html" if partial else "stats.html"\n'
        "    return render(request, template, {})\n"
        "def detail(request):\n"
        "    if wants_partial(request):\n"
        '        return vary_on_htmx(render(request, "detail.html#steps", {}))\n'
        '    return vary_on_htmx(render(request, "detail.html", {}))\n'
        "def article(request):\n"
        '    template = f"{KB}#article_form" if wants_partial(request) else "kb_edit.html"\n'
        "    return render(request, template, {})\n"
        "def merges(request):\n"
        "    partial = wants_partial(request)\n"
        '    if partial and request.GET.get("section") == "queue":\n'
        '        return render_page_or_partial(request, MERGES, "queue", {})\n'
        '    return render_page_or_partial(request, MERGES, "history", {})\n'
        # a POST's answers: a redirect for a form, the changed part for htmx (no choice of page)
        "def relabel(request):\n"
        "    if not wants_partial(request):\n"
        '        return redirect("/")\n'
        '    return render(request, "detail.html#step", {})\n'
    )
    assert _views_picking_templates(view) == [
        "view.py:stats", "view.py:detail", "view.py:article", "view.py:merges"
    ]  # fmt: skip


MODULE_LINES = 400  # a module longer than this is split by what its parts do


def _long_modules(root: Path) -> dict[str, int]:
    """Every Python module outside tests/ (the product, bench/, the clients, scripts) longer than
    MODULE_LINES, by path: git's list of files, so a virtualenv or node_modules never counts."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    lines = {path: len((root / path).read_text().splitlines()) for path in listed}
    return {
        path: count
        for path, count in lines.items()
        if count > MODULE_LINES and not path.startswith("tests/")
    }


def test_no_module_is_longer_than_400_lines():
    assert _long_modules(ROOT) == {}


def test_the_length_check_sees_a_long_module(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "long.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_long.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    assert _long_modules(tmp_path) == {"long.py": MODULE_LINES + 1}
