"""Shared fixtures: projects and keys, an API client, a real Celery worker, Redis control.

The helpers live in tests/support/ (imported by the tests that use them), and so do the fixtures
that tests of several folders use, registered here: `pytest_plugins` is allowed only in this,
the root conftest."""

import itertools
from collections.abc import Callable, Iterator

import pytest
import redis as redis_lib
from django.conf import settings

from accounts.models import Project
from accounts.services.api_keys import api_key_create

# Before anything of tests/support/ is imported: its asserts explain their failures as they did
# in the conftests (pytest rewrites conftests and plugins, not other modules).
pytest.register_assert_rewrite("tests.support")

from tests.support.api import ApiClient  # noqa: E402 - after the assert rewrite is registered
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.redis import RedisControl  # noqa: E402
from tests.support.worker import WorkerProcess  # noqa: E402

pytest_plugins = [
    "tests.support.personas",
    "tests.support.trajectories",
    "tests.support.experiences",
    "tests.support.browser_fixtures",
    "tests.support.ordering",
]

_ids = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that drives Chromium is marked `browser` (`-m "not browser"`): those that use
    pytest-playwright's `browser` (through `page`, `context` or `new_context`). They live in
    files named test_*_browser.py (tests/hindsight_site/test_tests_layout.py checks it). Every
    test on the integrations' shared site (`live_site`: `hindsight run`) is marked `launcher`."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "live_site" in fixtures:
            item.add_marker(pytest.mark.launcher)


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    """Django's default hasher is slow on purpose (0.8 s a password on this machine kind), and
    most tests make a user: they hash with a fast one, as Django advises for test suites. The
    sites the launcher tests start keep the real hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def _clean_broker() -> None:
    # Redis keeps its AOF between runs; tasks left by an earlier run must not leak into this one.
    redis_lib.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def make_project(db) -> Callable[..., Project]:
    def make(name: str | None = None) -> Project:
        return Project.objects.create(name=name or f"project-{next(_ids)}")

    return make


@pytest.fixture
def project(make_project) -> Project:
    return make_project("acme")


@pytest.fixture
def make_key(db) -> Callable[..., str]:
    def make(project: Project, scopes: tuple[str, ...] = ("ingest", "recall")) -> str:
        return api_key_create(project=project, scopes=list(scopes)).raw

    return make


@pytest.fixture
def pipeline_key(project, make_key) -> str:
    """A key that sends trajectories and reads them back (ingest + read), as most tests do."""
    return make_key(project, ("ingest", "read"))


@pytest.fixture
def api(pipeline_key) -> ApiClient:
    return ApiClient(pipeline_key)


@pytest.fixture
def api_for() -> Callable[[str | None], ApiClient]:
    return ApiClient


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[WorkerProcess]:
    worker = WorkerProcess(tmp_path / "worker.log")
    yield worker
    worker.stop()


@pytest.fixture
def redis_control() -> Iterator[RedisControl]:
    control = RedisControl()
    yield control
    control.start()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def llm_settings(settings, fake_openai):
    """Point the in-process LLM reviewer at the local OpenAI-compatible server."""
    settings.OPENAI_BASE_URL = fake_openai.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.HINDSIGHT_LLM_MODEL = "fake-reviewer"
    settings.HINDSIGHT_LLM_TIMEOUT = 1.0
    settings.HINDSIGHT_REVIEWER = "auto"
    return settings
