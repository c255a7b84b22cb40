"""What the tests share, importable like any module: plain helpers (an API client, payloads,
processes, waits) that test modules of two or more folders import, and the fixture modules that
tests/conftest.py registers with `pytest_plugins` (personas, trajectories, experiences,
browser_fixtures). A folder's conftest.py keeps only the fixtures of its own folder."""
