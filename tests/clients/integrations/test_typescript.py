"""The TypeScript client (clients/typescript/): it builds with tsc, packs with npm (the files
an install would get), and its tests, Node's test runner against the live site, pass: the
client's own (traces, batches, limits, errors, retries, a recorded run reviewed, recalled and
warning) and the Vercel AI SDK and @openai/agents examples of docs/integrations/, run as
written twice each with the local OpenAI-compatible server as their model."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "clients" / "typescript"


def test_the_package_builds_packs_and_its_tests_pass_against_the_site(
    live_site, agent_llm, tmp_path
):
    npm, node = shutil.which("npm"), shutil.which("node")
    assert npm and node, "Node.js and npm are needed (the README's requirements)"
    subprocess.run([npm, "run", "--silent", "build"], cwd=PACKAGE, check=True)
    packed = subprocess.run(
        [npm, "pack", "--ignore-scripts", "--json", "--pack-destination", str(tmp_path)],
        cwd=PACKAGE,
        check=True,
        capture_output=True,
        text=True,
    )
    (tarball,) = tmp_path.glob("hindsight-client-*.tgz")
    with tarfile.open(tarball) as archive:
        files = {name.removeprefix("package/") for name in archive.getnames()}
    for module in ("index", "ai-sdk", "openai-agents"):
        assert {f"dist/{module}.js", f"dist/{module}.d.ts"} <= files, files
    assert "package.json" in files and not any(f.startswith(("src/", "test/")) for f in files)
    assert json.loads(packed.stdout)[0]["size"] < 100_000

    tests = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.glob("test/*.test.mjs"))
    done = subprocess.run(
        [node, "--test", "--test-reporter=tap", *tests],
        cwd=PACKAGE,
        env={
            **os.environ,
            "HINDSIGHT_URL": live_site.url,
            # ingest, recall and read: the client's tests read their trajectories back
            "HINDSIGHT_API_KEY": live_site.reader,
            "OPENAI_BASE_URL": agent_llm.base_url,
            "OPENAI_API_KEY": "test-key",
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    passed = re.search(r"^# pass (\d+)$", report, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 6, report
    assert re.search(r"^# fail 0$", report, re.MULTILINE), report
