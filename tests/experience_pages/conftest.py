"""The curation page tests make personas in every test (tests/support/personas.py): with a quick
password hasher. Experiences come from tests/support/experiences.py."""

import pytest


@pytest.fixture(autouse=True)
def _fast_passwords(fast_passwords) -> None:
    pass
