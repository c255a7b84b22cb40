from collections.abc import Iterator

import pytest

from tests.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def llm_settings(settings, fake_openai):
    settings.OPENAI_BASE_URL = fake_openai.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.HINDSIGHT_LLM_MODEL = "fake-reviewer"
    settings.HINDSIGHT_LLM_TIMEOUT = 1.0
    settings.HINDSIGHT_REVIEWER = "auto"
    return settings
