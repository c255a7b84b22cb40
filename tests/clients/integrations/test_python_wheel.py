"""The client as its own distribution: its wheel is built from clients/python/, installed into
an empty virtual environment of the oldest Python it supports that this machine has (pyenv's
3.9 when present), pulls in nothing else, and its own test suite (standard library unittest)
passes from there against the live site."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "clients" / "python"
MAX_WHEEL_BYTES = 200 * 1024


def oldest_python() -> str:
    """pyenv's oldest CPython >= 3.9, else this interpreter."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for minor in (9, 10, 11):
        for candidate in sorted((pyenv_root / "versions").glob(f"3.{minor}.*/bin/python3")):
            return str(candidate)
    return sys.executable


def build_wheel(out: Path) -> Path:
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = out / "source"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("tests", "*.egg-info", "build"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("hindsight_client-*.whl")
    return wheel


def installed(python: Path) -> set[str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {package["name"].lower() for package in json.loads(listed)}


def test_the_wheel_installs_alone_and_its_tests_pass_from_an_empty_venv(live_site, tmp_path):
    wheel = build_wheel(tmp_path)
    assert wheel.stat().st_size < MAX_WHEEL_BYTES, wheel.stat().st_size
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert {name.split("/")[0] for name in names} == {
        "hindsight_client",
        "hindsight_client-0.1.0.dist-info",
    }
    assert "hindsight_client/py.typed" in names
    # Only the framework extras name other distributions.
    requires = re.findall(rb"^Requires-Dist: (.*)$", metadata, re.MULTILINE)
    assert requires and all(b"extra ==" in line for line in requires), requires

    venv = tmp_path / "venv"
    subprocess.run([oldest_python(), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    before = installed(python)
    # --no-index: a dependency could not be fetched, so the install would fail if it had one.
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-index"]
        + ["--disable-pip-version-check", str(wheel)],
        check=True,
    )
    assert installed(python) - before == {"hindsight-client"}

    tests = tmp_path / "client-tests"
    shutil.copytree(CLIENT / "tests", tests)
    done = subprocess.run(
        [str(python), "-m", "unittest", "discover", "-v", "-s", str(tests), "-t", str(tests)],
        cwd=tmp_path,
        env={
            **os.environ,
            "HINDSIGHT_URL": live_site.url,
            # ingest, recall and read: the client's tests read their trajectories back
            "HINDSIGHT_API_KEY": live_site.reader,
            "HINDSIGHT_CLIENT_EXPECTED_PREFIX": str(venv),
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = done.stderr
    assert done.returncode == 0, report
    assert re.search(r"^Ran [1-9]\d* tests", report, re.MULTILINE), report
    assert "skipped" not in report, report
