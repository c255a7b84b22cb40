"""Every page of docs/integrations/ holds exactly one example, and a test runs it as written:
the Python examples by this directory's framework tests, the JavaScript ones by the
TypeScript package's tests (clients/typescript/test/)."""

from __future__ import annotations

from pathlib import Path

from tests.clients.integrations.snippets import DOCS, snippet

RUNNERS = {
    "python": sorted(Path(__file__).parent.glob("test_*.py")),
    "js": sorted((DOCS.parents[1] / "clients" / "typescript" / "test").glob("*.test.mjs")),
}


def test_each_integration_page_has_one_example_that_a_test_runs():
    pages = sorted(DOCS.glob("*.md"))
    assert len(pages) >= 5
    for page in pages:
        language, _ = snippet(page.name)
        runners = [path for path in RUNNERS[language] if f'"{page.name}"' in path.read_text()]
        assert runners, f"no test runs the example of {page.name}"
