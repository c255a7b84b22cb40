"""The recorder across a real server outage: `hindsight run --no-beat` as a subprocess on a temp
data dir and a fixed port, stopped with SIGTERM mid-recording and started again on the same
data dir and port."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hindsight_client import HindsightClient
from tests.client.conftest import FAST_BACKOFF, free_port

pytestmark = pytest.mark.launcher

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = shutil.which("hindsight", path=str(Path(sys.executable).parent)) or "hindsight"


class SiteProcess:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log = data_dir.parent / "site.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(
            HINDSIGHT_DATA_DIR=str(data_dir),
            HINDSIGHT_PORT=str(port),
            HINDSIGHT_WEB_WORKERS="1",
            HINDSIGHT_WORKER_CONCURRENCY="1",
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1  # the log is appended to: wait for one more "ready" than before
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [HINDSIGHT, "run", "--no-beat"],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 120
        marker = b"[hindsight] ready"
        while self.log.read_bytes().count(marker) < self.starts:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("the site did not start:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def key(self) -> str:
        return (self.data_dir / "demo-api-key").read_text().strip()


@pytest.fixture
def site_process(tmp_path):
    site = SiteProcess(tmp_path / "data", free_port())
    site.start()
    yield site
    site.stop()


def test_a_server_stopped_and_restarted_mid_recording_loses_nothing(site_process):
    client = HindsightClient(site_process.url, site_process.key())
    rec = client.recorder(
        agent="ops-bot",
        task="survive an outage",
        environment=["docker"],
        backoff=FAST_BACKOFF,
        batch_size=3,
    )
    for n in range(10):
        rec.record_event(tool="shell", arguments={"n": n}, observation=f"before {n}")
    assert rec.flush(30)

    site_process.stop()
    began = time.perf_counter()
    for n in range(10, 25):
        rec.record_event(tool="shell", arguments={"n": n}, observation=f"during {n}")
    recording_while_down = time.perf_counter() - began
    rec.finish("success", final_answer="still here")
    assert not rec.flush(1.0)  # the server is down: the steps wait in memory

    site_process.start()  # same data dir, same port
    assert rec.flush(60)

    trace = client.get_trace(rec.trace_id)
    assert trace["is_complete"] and trace["outcome"] == "success"
    assert trace["final_answer"] == "still here"
    assert [s["index"] for s in trace["steps"]] == list(range(25))
    assert [s["arguments"]["n"] for s in trace["steps"]] == list(range(25))
    assert recording_while_down < 0.1, f"15 events took {recording_while_down:.3f}s while down"
