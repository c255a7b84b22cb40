"""The tests mirror the source: tests/<app>/<subpackage>/test_<module>[_<aspect>].py tests
<app>/<subpackage>/<module>.py (or the package <module>/), tests/<app>/test_<module>….py a
module of the app's top level. The few files that check the whole site, or cannot sit next to
their module, are listed below with the reason. Tests that drive Chromium are in files named
test_*_browser.py (the root conftest marks them `browser` by the fixtures they use)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# tests/<folder>/ mirrors <folder>/ of the source
MIRRORED = ("core", "accounts", "traces", "experiences", "hindsight_site", "bench")
# the clients' distributions: tests/clients/python/ (hindsight_client) and
# tests/clients/integrations/ (the framework integrations, the wheel, the TypeScript package)
TOP_LEVEL = {*MIRRORED, "clients"}

EXCEPTIONS = {
    "hindsight_site/test_layers.py": "the imports between the apps: the whole site",
    "hindsight_site/test_tests_layout.py": "this file: where the tests are",
    "hindsight_site/test_readme_front_door.py": "the README's first example, end to end",
    "hindsight_site/test_error_pages.py": "templates/404.html, 500.html: no module of ours",
    "hindsight_site/test_accessibility_browser.py": "axe on every dashboard page",
    "hindsight_site/test_content_security_policy_browser.py": "every kind of page under the CSP",
    "hindsight_site/test_mobile_browser.py": "every dashboard page at a phone's width",
    "hindsight_site/test_pages_look_browser.py": "the other pages, for people to look at",
    "hindsight_site/test_untrusted_content_browser.py": "XSS payloads on every page showing them",
    # The capture proxy is hindsight_client.mcp_proxy (also `manage.py mcp_proxy`); these share
    # this folder's live site, toy MCP server and wiretap. tests/clients/python/ would give them
    # its autouse spool directory: a change of what they run, not a move.
    "experiences/mcp/test_proxy.py": "the capture proxy, next to the other MCP tests",
    "experiences/mcp/test_proxy_learns.py": "the capture proxy, next to the other MCP tests",
}

# pytest-playwright's fixtures a browser test asks for (not `context`: a parametrized argument of
# an API test has that name)
BROWSER_FIXTURES = {"page", "new_context", "browser"}


def source_names(folder: Path) -> set[str]:
    """The modules and packages of a source folder."""
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return modules | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}


def misplaced(paths: list[Path]) -> list[str]:
    """Test files (paths relative to tests/) that do not mirror the source, with why."""
    wrong = []
    for path in paths:
        where = path.as_posix()
        if path.parts[0] not in TOP_LEVEL or len(path.parts) < 2:
            wrong.append(f"{where}: tests/ holds only {sorted(TOP_LEVEL)}")
        elif path.parts[0] in MIRRORED and where not in EXCEPTIONS:
            folder = ROOT / path.parent
            if not folder.is_dir():
                wrong.append(f"{where}: no source folder {path.parent.as_posix()}/")
            elif not any(
                path.name == f"test_{name}.py" or path.name.startswith(f"test_{name}_")
                for name in source_names(folder)
            ):
                wrong.append(f"{where}: names no module of {path.parent.as_posix()}/")
    return wrong


def test_every_test_file_mirrors_the_source():
    paths = sorted(p.relative_to(TESTS) for p in TESTS.rglob("test_*.py"))
    assert paths
    assert misplaced(paths) == []


def test_the_exceptions_exist():
    assert [where for where in EXCEPTIONS if not (TESTS / where).exists()] == []


def test_the_layout_check_sees_a_violation():
    assert misplaced(
        [
            Path("pages/test_queue.py"),
            Path("test_queue.py"),
            Path("traces/pages/test_queue.py"),
            Path("traces/views/test_queues.py"),
            Path("traces/views/test_queue.py"),
            Path("traces/test_api_read.py"),
        ]
    ) == [
        "pages/test_queue.py: tests/ holds only "
        "['accounts', 'bench', 'clients', 'core', 'experiences', 'hindsight_site', 'traces']",
        "test_queue.py: tests/ holds only "
        "['accounts', 'bench', 'clients', 'core', 'experiences', 'hindsight_site', 'traces']",
        "traces/pages/test_queue.py: no source folder traces/pages/",
        "traces/views/test_queues.py: names no module of traces/views/",
    ]


def drives_chromium(path: Path) -> bool:
    """Whether a test of the file asks for one of pytest-playwright's fixtures."""
    return any(
        isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and BROWSER_FIXTURES & {arg.arg for arg in node.args.args}
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_the_browser_tests_are_the_browser_files():
    paths = sorted(TESTS.rglob("test_*.py"))
    browser_files = [p.relative_to(TESTS) for p in paths if p.name.endswith("_browser.py")]
    assert browser_files
    assert [p.relative_to(TESTS) for p in paths if drives_chromium(p)] == browser_files
