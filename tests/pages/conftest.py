"""The page tests make personas in every test (tests/support/personas.py): with a quick password
hasher."""

import pytest


@pytest.fixture(autouse=True)
def _fast_passwords(fast_passwords) -> None:
    pass
