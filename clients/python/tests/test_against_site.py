"""The client against a live hindsight site, with the standard library only, so that it runs
from a virtual environment holding nothing but the client's wheel (Python >= 3.9).

    HINDSIGHT_URL=http://127.0.0.1:8000 HINDSIGHT_API_KEY=hs_... python -m unittest discover tests

The key needs the `ingest` and `recall` scopes (the demo key of `hindsight run` has both). The
site reviews with its worker: a recorded run is reviewed, distilled, and recalled.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Callable

import hindsight_client
from hindsight_client import HindsightClient, InvalidRequest, Limits, RequestTooLarge

HERE = Path(__file__).resolve().parent
URL = os.environ.get("HINDSIGHT_URL", "http://127.0.0.1:8000")
KEY = os.environ.get("HINDSIGHT_API_KEY", "")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.1)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Forwarder:
    """An HTTP server on `port` that forwards every request to `upstream`: the same base URL
    as a server that was away and is back."""

    def __init__(self, port: int, upstream: str) -> None:
        target = urllib.parse.urlsplit(upstream)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                conn.close()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def trace_body(external_id: str, agent: str, steps: int = 2) -> dict[str, Any]:
    return {
        "external_id": external_id,
        "agent": agent,
        "task": "Find out why the web container keeps restarting",
        "environment": ["docker"],
        "outcome": "success",
        "steps": [
            {"index": i, "kind": "tool_call", "tool": "docker_logs", "arguments": {"tail": i}}
            for i in range(steps)
        ],
    }


class ClientTestCase(unittest.TestCase):
    def setUp(self) -> None:
        if not KEY:
            self.skipTest("set HINDSIGHT_URL and HINDSIGHT_API_KEY to run against a site")
        spool = tempfile.TemporaryDirectory()
        self.addCleanup(spool.cleanup)
        self.spool_dir = Path(spool.name)
        self.client = HindsightClient(URL, KEY, spool_dir=self.spool_dir)

    def traces_of(self, agent: str) -> list[dict[str, Any]]:
        return self.client.transport.request("GET", f"traces?agent={agent}")["items"]


class TestInstalledAlone(unittest.TestCase):
    def test_the_client_is_imported_from_the_installed_wheel_when_asked(self) -> None:
        expected = os.environ.get("HINDSIGHT_CLIENT_EXPECTED_PREFIX")
        if not expected:
            self.skipTest("HINDSIGHT_CLIENT_EXPECTED_PREFIX not set")
        self.assertTrue(hindsight_client.__file__.startswith(expected), hindsight_client.__file__)


class TestIntegrationsCommonPart(ClientTestCase):
    def test_the_shared_part_of_the_integrations_needs_no_framework(self) -> None:
        from hindsight_client.integrations.common import RecallScope, recall_block

        block = recall_block(self.client, "Rotate the TLS certificate", RecallScope(k=1))
        self.assertIsInstance(block, str)
        with self.assertRaises(ImportError):  # the framework comes with its extra only
            import hindsight_client.integrations.langchain  # noqa: F401


class TestTraces(ClientTestCase):
    def test_a_trace_is_stored_once_and_read_back_with_its_steps(self) -> None:
        agent, external_id = unique("wheel-agent"), unique("run")
        first = self.client.send_trace(trace_body(external_id, agent))
        again = self.client.send_trace(trace_body(external_id, agent))

        self.assertEqual(first["id"], again["id"])
        stored = self.client.get_trace(first["id"])
        self.assertEqual(stored["external_id"], external_id)
        self.assertEqual([s["arguments"] for s in stored["steps"]], [{"tail": 0}, {"tail": 1}])

    def test_many_traces_go_in_as_many_batches_as_the_limits_need_in_order(self) -> None:
        client = HindsightClient(URL, KEY, limits=Limits(max_batch=2), spool_dir=False)
        agent = unique("wheel-batch")
        ids = [unique("run") for _ in range(5)]

        results = client.send_traces([trace_body(i, agent) for i in ids])

        self.assertEqual([r["external_id"] for r in results], ids)
        self.assertEqual({r["status"] for r in results}, {"created"})
        self.assertEqual(len(self.traces_of(agent)), 5)

    def test_a_body_over_the_limit_is_refused_before_it_is_sent(self) -> None:
        client = HindsightClient(URL, KEY, limits=Limits(max_body_bytes=2_000), spool_dir=False)
        body = trace_body(unique("run"), unique("wheel-big"))
        body["steps"][0]["observation"] = "x" * 5_000

        with self.assertRaises(RequestTooLarge) as raised:
            client.send_trace(body)
        self.assertTrue(raised.exception.client_side)
        self.assertEqual(self.traces_of(body["agent"]), [])

    def test_an_invalid_trace_is_a_422_naming_the_field(self) -> None:
        body = trace_body(unique("run"), unique("wheel-invalid"))
        del body["agent"]

        with self.assertRaises(InvalidRequest) as raised:
            self.client.send_trace(body)
        self.assertEqual(raised.exception.status, 422)
        self.assertIn("agent", json.dumps(raised.exception.detail))


class TestRecorderLearnsAndWarns(ClientTestCase):
    def test_a_recorded_run_is_reviewed_recalled_and_its_failures_warn(self) -> None:
        agent = unique("wheel-recorder")
        task = "Find out why the nightly backup job fails"
        with self.client.recorder(agent=agent, task=task, environment=["bare-metal"]) as rec:
            rec.user_input(task)
            for path in ("/etc/backup/backup.conf", "/etc/backup/backup.yaml"):
                with self.assertRaises(FileNotFoundError):
                    with rec.step("read_file", {"path": path}):
                        raise FileNotFoundError(f"no such file: {path}")
            with rec.step("list_dir", {"path": "/etc/backup"}) as call:
                call.observation = ["restic.env", "targets"]
            with rec.step("read_file", {"path": "/etc/backup/restic.env"}) as call:
                call.observation = "RESTIC_REPOSITORY=s3:backups.internal/nightly (expired key)"
            rec.set_outcome("success", final_answer="the repository key in restic.env expired")
        self.assertTrue(rec.flush(15))

        trace = wait_until(lambda: self._reviewed(rec.trace_id))
        self.assertEqual(trace["outcome"], "success")
        self.assertEqual([s["is_error"] for s in trace["steps"][1:3]], [True, True])

        recall = wait_until(
            lambda: (
                self.client.recall(
                    "Why does the nightly backup job fail?",
                    environment=["bare-metal"],
                    include_candidates=True,
                ).items
            )
        )
        self.assertTrue(any("restic.env" in item.advice for item in recall), recall)
        warnings = self.client.check_tool_call("read_file", {"path": "/etc/backup/backup.conf"})
        self.assertTrue(any("read_file" in w.message for w in warnings), warnings)

    def _reviewed(self, trace_id: int) -> dict[str, Any] | None:
        trace = self.client.get_trace(trace_id)
        return trace if trace["review_status"] == "reviewed" else None


class TestSpool(ClientTestCase):
    def test_a_run_the_server_never_saw_is_spooled_then_resent(self) -> None:
        port = closed_port()
        away = HindsightClient(f"http://127.0.0.1:{port}", KEY, spool_dir=self.spool_dir)
        agent = unique("wheel-spool")
        rec = away.recorder(agent=agent, task="Rotate the TLS certificate", exit_timeout=0.5)
        rec.record_event("tool_call", tool="certbot", arguments={"renew": True}, observation="ok")
        rec.finish("success")
        self.assertFalse(rec.flush(0.5))
        self.assertIsNotNone(rec.stop())

        back = Forwarder(port, URL)
        self.addCleanup(back.close)
        result = away.resend_spooled()

        self.assertEqual(result.sent, [rec.external_id])
        (trace,) = self.traces_of(agent)
        self.assertEqual(trace["outcome"], "success")
        self.assertEqual(list(self.spool_dir.rglob("*.json")), [])


class TestMcpProxy(ClientTestCase):
    def test_the_capture_proxy_records_each_tool_call_of_a_session(self) -> None:
        agent = unique("wheel-mcp")
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hello"}},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "read_config", "arguments": {"path": "/etc/app.yaml"}},
            },
        ]
        command = [sys.executable, "-m", "hindsight_client.mcp_proxy", "--agent", agent]
        command += ["--task", "Read the app's config", "--"]
        command += [sys.executable, str(HERE / "echo_mcp_server.py")]
        env = {**os.environ, "HINDSIGHT_URL": URL, "HINDSIGHT_API_KEY": KEY}
        env["HINDSIGHT_SPOOL_DIR"] = str(self.spool_dir)

        done = subprocess.run(
            command,
            input="".join(json.dumps(m) + "\n" for m in messages).encode(),
            capture_output=True,
            env=env,
            timeout=60,
        )

        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual([a["id"] for a in answers], [1, 2, 3], done.stderr.decode())
        (listed,) = wait_until(lambda: self.traces_of(agent))
        trace = self.client.get_trace(listed["id"])
        steps = [(s["tool"], s["arguments"], s["is_error"]) for s in trace["steps"]]
        self.assertEqual(
            steps,
            [("echo", {"text": "hello"}, False), ("read_config", {"path": "/etc/app.yaml"}, True)],
        )


if __name__ == "__main__":
    unittest.main()
