"""Contracts once kept by hand, now checked against the source.

* Every environment variable the site's code reads is in `.env.example` and has one row in
  `docs/configuration.md`, in the same group, with the code's default; neither names a variable
  no code reads.
* Every task name the site publishes (through `core.publish`, or in beat's schedule) is one a
  worker registers.

Both parse the source rather than keep a list, and refuse what they cannot read (an environment
variable whose name is not a literal, a task name that is not a constant), so a new setting or
task cannot slip past them.
"""

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from celery import Task
from django.conf import settings

from hindsight_site import env
from tests.hindsight_site.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]


def _shipped_packages() -> tuple[str, ...]:
    """The first-party packages: those the distribution ships (pyproject's list), not a list
    kept here by hand, so a new package is read as soon as it ships."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return tuple(
        p.removesuffix("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    )


SITE_PACKAGES = _shipped_packages()
READERS = {"env_str", "env_int", "env_float", "env_size", "env_bool", "env_list"}
DOCS = ROOT / "docs" / "configuration.md"
ENV_EXAMPLE = ROOT / ".env.example"
OTHERS_SECTION = "Not settings of the site"

# Read in the site's packages, but by code that is no part of the site's processes: documented
# under OTHERS_SECTION, kept out of .env.example.
NOT_SITE_SETTINGS = {
    "HINDSIGHT_URL": "manage.py mcp_server, an HTTP client of the site",
    "HINDSIGHT_API_KEY": "manage.py mcp_server, an HTTP client of the site",
    "HINDSIGHT_AGENT": "manage.py mcp_server, an HTTP client of the site",
    "HINDSIGHT_TEST_DATA_DIR": "the pytest plugin hindsight_site.pytest_env",
}
# Read elsewhere, documented under OTHERS_SECTION too: each with a file that reads it.
READ_ELSEWHERE = {
    "HINDSIGHT_SPOOL_DIR": "clients/python/hindsight_client/spool/files.py",
    "HINDSIGHT_WEB_PORTS": "docker-compose.yml",
}
# Read in the site's packages, not ours to document.
FOREIGN = {"PYTEST_XDIST_WORKER": "set by pytest-xdist in its workers"}
# hindsight_site/env.py reads `os.environ.get(name)` for every reader: the names are at the
# readers' call sites. No other read may build its name (a prefix such as HINDSIGHT_PG_ plus a
# suffix): such a name could not be found here, so the test refuses it instead.
READER_MODULE = Path("hindsight_site/env.py")


class _NotConstant:
    def __repr__(self) -> str:
        return "<not a constant>"


NOT_CONSTANT: Any = _NotConstant()


@dataclass(frozen=True)
class Read:
    name: str
    where: str
    reader: str  # env_int, ..., or os.environ
    default: Any = NOT_CONSTANT  # the reader's default when it is a constant expression
    options: dict[str, Any] = field(default_factory=dict)


def _site_files() -> list[Path]:
    return sorted(p for package in SITE_PACKAGES for p in (ROOT / package).rglob("*.py"))


@cache
def _trees() -> dict[Path, ast.Module]:
    return {p.relative_to(ROOT): ast.parse(p.read_text(), filename=str(p)) for p in _site_files()}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _constant(node: ast.expr) -> Any:
    """The value of a constant expression (`5 * 1024 * 1024`, `["localhost"]`), or NOT_CONSTANT."""
    allowed = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.List, ast.operator, ast.unaryop, ast.Load)
    if all(isinstance(n, allowed) for n in ast.walk(node)):
        return eval(compile(ast.Expression(node), "<default>", "eval"), {"__builtins__": {}})
    return NOT_CONSTANT


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_os_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


@cache
def _environment_reads() -> tuple[list[Read], list[str]]:
    """Every read of a named environment variable in the site's packages, and every use of the
    environment this cannot name (which the test refuses)."""
    reads: list[Read] = []
    unreadable: list[str] = []
    for path, tree in _trees().items():
        parents = _parents(tree)
        for node in ast.walk(tree):
            where = f"{path}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                if {a.name for a in node.names} & {"environ", "getenv"}:
                    unreadable.append(f"{where}: from os import environ/getenv")
            elif isinstance(node, ast.Call) and _callee(node) in READERS:
                name = _literal(node.args[0] if node.args else None)
                if name is None:
                    if path != READER_MODULE:
                        unreadable.append(f"{where}: {ast.unparse(node)}")
                    continue
                default = _constant(node.args[1]) if len(node.args) > 1 else NOT_CONSTANT
                options = {k.arg: _constant(k.value) for k in node.keywords if k.arg}
                reads.append(Read(name, where, str(_callee(node)), default, options))
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.getenv":
                name = _literal(node.args[0] if node.args else None)
                if name is None:
                    unreadable.append(f"{where}: {ast.unparse(node)}")
                else:
                    reads.append(Read(name, where, "os.getenv"))
            elif _is_os_environ(node):
                use = _environ_use(node, parents)
                if isinstance(use, Read):
                    reads.append(Read(use.name, where, use.reader))
                elif use is None and path != READER_MODULE:
                    unreadable.append(f"{where}: {ast.unparse(parents[node])}")
    return reads, unreadable


def _environ_use(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Read | bool | None:
    """What `os.environ` does here: a Read of a literal name; True for a write or for the whole
    environment handed to a child process (no variable read); None when it cannot be told."""
    parent = parents[node]
    if isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call):
        call = parents[parent]
        name = _literal(call.args[0]) if isinstance(call, ast.Call) and call.args else None
        if parent.attr == "get" and name is not None:
            return Read(name, "", "os.environ.get")
        return parent.attr in ("setdefault", "pop") and name is not None
    if isinstance(parent, ast.Subscript):
        name = _literal(parent.slice)
        if name is None:
            return None
        return Read(name, "", "os.environ[]") if isinstance(parent.ctx, ast.Load) else True
    if isinstance(parent, ast.Compare) and _literal(parent.left) is not None:
        return Read(str(_literal(parent.left)), "", "in os.environ")
    if isinstance(parent, ast.Dict) or (  # {**os.environ, ...}
        isinstance(parent, ast.Call) and ast.unparse(parent.func) == "dict"
    ):
        return True
    return None


def _names_read() -> set[str]:
    return {read.name for read in _environment_reads()[0]}


def _site_settings() -> set[str]:
    return _names_read() - set(NOT_SITE_SETTINGS) - set(FOREIGN)


def _group(title: str) -> str:
    return title.split(" (")[0].strip()


def _env_example() -> dict[str, tuple[str, str]]:
    """name -> (its group, its value) for every line of .env.example naming a variable, commented
    out or not; a name twice is kept twice under a changed key, so the test sees it."""
    found: dict[str, tuple[str, str]] = {}
    group = ""
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.startswith("# --- "):
            group = _group(line.removeprefix("# --- "))
            continue
        match = re.match(r"#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line)
        if match:
            name, rest = match.groups()
            # Docker Compose's env_file: an unquoted value ends at a " #" comment.
            value = re.split(r"\s+#", rest, maxsplit=1)[0].strip()
            key = name if name not in found else f"{name} (again)"
            found[key] = (group, value)
    return found


def _documented() -> dict[str, list[tuple[str, str]]]:
    """name -> [(its section, its Default cell)] for every table row of docs/configuration.md."""
    rows: dict[str, list[tuple[str, str]]] = {}
    section = ""
    for line in DOCS.read_text().splitlines():
        if line.startswith("## "):
            section = _group(line.removeprefix("## "))
        match = re.match(r"\|\s*`([A-Z][A-Z0-9_]*)`\s*\|([^|]*)\|", line)
        if match:
            rows.setdefault(match.group(1), []).append((section, match.group(2).strip()))
    return rows


# ---------------------------------------------------------------------------- the finder itself


def test_the_finder_reads_every_layer_of_the_site():
    assert sorted(SITE_PACKAGES) == sorted(LAYERS)  # accounts among them


def test_the_finder_sees_reads_of_every_kind():
    reads = {(r.name, r.reader) for r in _environment_reads()[0]}
    assert ("HINDSIGHT_PORT", "env_int") in reads  # the launcher
    assert ("HINDSIGHT_PORT", "os.environ.get") in reads  # accounts: manage.py sign_in_link
    assert ("HINDSIGHT_PG_SHARED_BUFFERS", "env_size") in reads  # embedded.py
    assert ("HINDSIGHT_RECALL_KEYWORD_ROWS", "env_int") in reads  # product_settings.py
    assert ("HINDSIGHT_HNSW_EF_SEARCH", "env_int") in reads  # inside an f-string
    assert ("DATABASE_URL", "os.environ.get") in reads
    assert ("HINDSIGHT_URL", "os.environ.get") in reads  # mcp_server
    assert len(_site_settings()) > 90


def test_every_read_of_the_environment_names_its_variable_literally():
    unreadable = _environment_reads()[1]
    assert not unreadable, (
        "read the environment through hindsight_site.env or os.environ.get with a literal name "
        f"(or teach this test the new form): {unreadable}"
    )


# ---------------------------------------------------------------------------- .env.example


def test_every_setting_is_in_env_example():
    missing = _site_settings() - set(_env_example())
    assert not missing, f"add to .env.example (and docs/configuration.md): {sorted(missing)}"


def test_env_example_names_only_settings_the_site_reads_and_each_once():
    extra = set(_env_example()) - _site_settings()
    assert not extra, f"in .env.example, but no code reads them (or twice): {sorted(extra)}"


# ---------------------------------------------------------------------------- docs/configuration.md


def test_every_setting_is_documented_once_in_its_group_of_env_example():
    rows, example = _documented(), _env_example()
    undocumented = sorted(_site_settings() - set(rows))
    assert not undocumented, f"document in docs/configuration.md: {undocumented}"
    twice = sorted(name for name, found in rows.items() if len(found) > 1)
    assert not twice, f"documented more than once: {twice}"
    elsewhere = {
        name: (rows[name][0][0], example.get(name, ("(missing)",))[0])
        for name in _site_settings()
        if rows[name][0][0] != example.get(name, ("(missing)",))[0]
    }
    assert not elsewhere, f"(docs group, .env.example group) differ: {elsewhere}"


def test_nothing_is_documented_that_no_code_reads():
    rows = _documented()
    others = set(NOT_SITE_SETTINGS) | set(READ_ELSEWHERE)
    unread = set(rows) - _site_settings() - others
    assert not unread, f"documented, but no code reads them: {sorted(unread)}"
    for name, path in READ_ELSEWHERE.items():
        assert name in (ROOT / path).read_text(), f"{path} no longer reads {name}"
    misplaced = {n for n in rows if (rows[n][0][0] == OTHERS_SECTION) != (n in others)}
    assert not misplaced, (
        f'site settings go in a group, the rest in "{OTHERS_SECTION}": {misplaced}'
    )


# ---------------------------------------------------------------------------- defaults


def _reads_as(read: Read, value: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(read.name, value)
    return getattr(env, read.reader)(read.name, read.default, **read.options)


def _constant_defaults() -> list[Read]:
    return [
        r for r in _environment_reads()[0] if r.reader in READERS and r.default is not NOT_CONSTANT
    ]


def test_a_setting_read_twice_has_one_default():
    defaults: dict[str, set[str]] = {}
    for read in _constant_defaults():
        defaults.setdefault(read.name, set()).add(repr(read.default))
    assert {name: d for name, d in defaults.items() if len(d) > 1} == {}


def test_env_example_and_the_docs_give_the_code_default(monkeypatch):
    """Docker Compose loads .env (a copy of .env.example) as it is: a value there that is not the
    default changes the deployment. The docs' Default cell is `value` or (empty)."""
    example, rows = _env_example(), _documented()
    wrong = []
    for read in _constant_defaults():
        if read.name not in example or read.name not in rows:
            continue  # missing altogether: the tests above say so
        value = example[read.name][1]
        if _reads_as(read, value, monkeypatch) != read.default:
            wrong.append(f".env.example {read.name}={value} ({read.where}: {read.default!r})")
        cell = rows[read.name][0][1]
        documented = "" if cell == "(empty)" else cell.strip("`")
        if not re.fullmatch(r"`[^`]*`|\(empty\)", cell) or (
            _reads_as(read, documented, monkeypatch) != read.default
        ):
            wrong.append(f"docs {read.name}: {cell} ({read.where}: {read.default!r})")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------- task names

# Calls that publish a task by name (core.publish, Celery's own) and the argument holding it.
PUBLISHERS = {"tasks_publish": 0, "tasks_publish_on_commit": 0, "send_task": 0}
# Celery's calls on a task object: the object says its own name.
TASK_CALLS = {"delay", "apply_async", "s", "si", "signature"}
# core.publish hands the name it was given on to Celery: its callers are the ones checked.
PASS_THROUGH = {Path("core/publish.py")}


def _module(path: Path):
    return importlib.import_module(".".join(path.with_suffix("").parts))


def _published() -> tuple[dict[str, str], list[str]]:
    """Task name -> where it is published, for every publishing call in the site's packages
    whose name resolves in its module; and every call whose name does not."""
    published: dict[str, str] = {}
    unresolved: list[str] = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(node)
            if callee in PUBLISHERS and len(node.args) > PUBLISHERS[callee]:
                expression = node.args[PUBLISHERS[callee]]
            elif callee in TASK_CALLS and isinstance(node.func, ast.Attribute):
                expression = node.func.value
            else:
                continue
            where = f"{path}:{node.lineno}"
            if path in PASS_THROUGH:
                continue
            try:  # module-level names only: a local variable or a parameter is refused
                value = eval(ast.unparse(expression), vars(_module(path)))
            except (NameError, AttributeError):
                unresolved.append(f"{where}: {ast.unparse(node)[:80]}")
                continue
            if callee in TASK_CALLS:
                if isinstance(value, Task):
                    published[value.name] = where
                continue  # .s() / .signature() of something that is no task (inspect's)
            if isinstance(value, str):
                published[value] = where
            else:
                unresolved.append(f"{where}: {ast.unparse(node)[:80]}")
    for entry, beat in settings.CELERY_BEAT_SCHEDULE.items():
        published[beat["task"]] = f"CELERY_BEAT_SCHEDULE[{entry!r}]"
    return published, unresolved


def _declared() -> dict[str, str]:
    """Task name -> where, for every `shared_task(name=...)` / `app.task(name=...)` and every
    module-level `*_TASK = "..."` constant in the site's packages."""
    declared: dict[str, str] = {}
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            where = f"{path}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and _callee(node) in ("shared_task", "task"):
                for keyword in node.keywords:
                    if keyword.arg == "name":
                        declared[eval(ast.unparse(keyword.value), vars(_module(path)))] = where
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], _literal(statement.value)
                if isinstance(target, ast.Name) and target.id.endswith("_TASK") and value:
                    declared[value] = f"{path}:{statement.lineno}"
    return declared


@cache
def _registered() -> set[str]:
    """The tasks a worker registers: its app, with the modules a worker imports at start
    (autodiscovery of the apps' tasks modules, the app's `include`). A child process, so that
    modules this test process imported do not count; no broker, no worker."""
    script = (
        "import json\n"
        "from hindsight_site.celery import app\n"
        "app.loader.import_default_modules()\n"
        "print(json.dumps(sorted(app.tasks)))\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    return set(json.loads(child.stdout.splitlines()[-1]))


def test_every_publishing_call_names_its_task_by_a_constant():
    published, unresolved = _published()
    assert not unresolved, (
        f"publish by a module-level name constant or a task's .name: {unresolved}"
    )
    finder_works = {"hindsight.review_trace", "experiences.induce_family", "otlp.complete_traces"}
    assert finder_works <= set(published)


def test_every_published_task_name_is_registered_with_the_worker():
    published, _ = _published()
    unregistered = {name: where for name, where in published.items() if name not in _registered()}
    assert not unregistered, f"published, but no worker runs them: {unregistered}"


def test_every_declared_task_name_is_registered_with_the_worker():
    declared = _declared()
    assert len(declared) >= 16
    unregistered = {name: where for name, where in declared.items() if name not in _registered()}
    assert not unregistered, f"declared, but no worker registers them: {unregistered}"
