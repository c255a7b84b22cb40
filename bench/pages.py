"""Dashboard page timings at scale: the trace list, the inspector, the review queue and /stats/.

    .venv/bin/python bench/pages.py [--traces 100000] [--steps-per-trace 5] [--big-steps 500]

Runs in-process on a fresh data dir (its own embedded PostgreSQL and Redis): migrates, seeds the
traces and their steps with set-based SQL, then times full requests through Django's stack
(middleware, session, view, template) with the test client — server time, no network — and
counts each page's queries. Targets: inspector (500 steps) <= 200 ms, list <= 100 ms; at 10M
steps (`--traces 500000 --steps-per-trace 20`) every page <= 200 ms with the same query count
as at small scale. The setup is printed first; the LAST line is one JSON object with the
figures (`tail -n 1`).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--steps-per-trace", type=int, default=5)
    parser.add_argument("--big-steps", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    return parser.parse_args()


def setup_django(data_dir: Path) -> None:
    os.environ["HINDSIGHT_DATA_DIR"] = str(data_dir)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ["HINDSIGHT_AUDIT_INGEST"] = "false"
    from hindsight_site import bootstrap

    bootstrap.setup_django()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


SEED_TRACES = """
INSERT INTO traces_trace (
    project_id, external_id, agent, session_id, user_ref, task, task_type, intent, environment,
    tools, outcome, feedback, final_answer, started_at, ended_at, duration_ms, completed_at,
    review_status, review_status_reason, review_status_at, step_count, tool_call_count,
    error_count, metadata, content_hash, created_at, updated_at, review_worker)
SELECT %(project)s, 'bench-' || g, 'agent-' || (g %% 7), '', '',
    (ARRAY['Find out why the web container keeps restarting',
           'The nightly ETL job fails with a timeout; make it pass',
           'Rotate the TLS certificate of the public ingress',
           'Migrate the orders table to the new schema without downtime'])[1 + g %% 4] || ' #' || g,
    'operation', '', ARRAY[(ARRAY['docker','k8s','bare-metal'])[1 + g %% 3]],
    ARRAY['shell','kubectl'], (ARRAY['success','failure','partial'])[1 + g %% 3], '', '',
    now() - (g || ' seconds')::interval, now(), 1000, now(),
    'reviewed', '', now(), %(steps)s, %(steps)s, g %% 2, '{}'::jsonb, '',
    now() - ((%(n)s - g) || ' seconds')::interval, now(), ''
FROM generate_series(1, %(n)s) AS g
"""

SEED_STEPS = """
INSERT INTO traces_step (
    trace_id, index, agent, kind, tool, arguments, content, observation, observation_raw,
    is_observation_truncated, is_error, error_type, duration_ms, context, content_hash,
    label, label_source, label_reason, label_version, label_confidence, is_accepted_as_is)
SELECT t.id, s, t.agent, 'tool_call', 'shell', jsonb_build_object('cmd', 'ls -la /var/log/' || s),
    '', 'line ' || s, 'line ' || s, false, s = 1, '', 100 + s,
    '{"task_goal": "bench", "subtask": "inspect"}'::jsonb, '',
    (ARRAY['necessary','redundant','misleading','failed'])[1 + (t.id + s) %% 4],
    (ARRAY['llm','heuristic','human'])[1 + t.id %% 3], 'seeded reason', 1,
    0.3 + ((t.id * 7 + s) %% 7) / 10.0, false
FROM traces_trace t CROSS JOIN generate_series(0, %(steps)s - 1) AS s
WHERE t.project_id = %(project)s
"""


def seed(*, traces: int, steps: int, big_steps: int):
    from django.contrib.auth import get_user_model
    from django.db import connection

    from accounts.models import Membership, Project
    from traces.models import Step, Trace

    project = Project.objects.create(name="bench")
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(project=project, user=user, role="admin")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(SEED_TRACES, {"project": project.pk, "n": traces, "steps": steps})
        cursor.execute(SEED_STEPS, {"project": project.pk, "steps": steps})
        cursor.execute("ANALYZE traces_trace; ANALYZE traces_step;")
    seeded = time.perf_counter() - started
    big = Trace.objects.create(
        project=project, external_id="bench-big", agent="agent-big",
        task="A long trajectory: " + "inspect, fix, verify. " * 10, environment=["docker"],
        outcome="failure", step_count=big_steps, review_status="reviewed",
    )  # fmt: skip
    Step.objects.bulk_create(
        Step(
            trace=big,
            index=i,
            agent="agent-big",
            kind="tool_call",
            tool=f"tool-{i % 9}",
            arguments={"cmd": f"kubectl describe pod web-{i}", "namespace": "prod", "i": i},
            observation=f"Name: web-{i}\nStatus: CrashLoopBackOff\nERROR: exit code {i % 3}",
            observation_raw="x" * 2000,
            is_error=i % 10 == 0,
            duration_ms=120 + i,
            context={"task_goal": "fix the pod", "subtask": f"look at pod {i}"},
            label=["necessary", "redundant", "misleading", "failed"][i % 4],
            label_source=["llm", "heuristic"][i % 2],
            label_reason="because " * 5,
            label_confidence=0.8,
            label_version=1,
        )  # fmt: skip
        for i in range(big_steps)
    )
    return user, big, seeded


def timed(client, path: str, runs: int) -> dict[str, float]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(3):  # warm-up: connections, template cache, PostgreSQL buffers
        assert client.get(path).status_code == 200
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(path)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    with CaptureQueriesContext(connection) as captured:
        client.get(path)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(samples[int(len(samples) * 0.95) - 1], 1),
        "queries": len(captured),
        "bytes": len(response.content),
    }


def main() -> None:
    args = parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="hindsight-bench-pages-"))
    atexit.register(shutil.rmtree, data_dir, ignore_errors=True)  # runs after the servers stop
    print(f"data dir {data_dir}; seeding {args.traces} traces x {args.steps_per_trace} steps "
          f"and one trace of {args.big_steps} steps", flush=True)  # fmt: skip
    setup_django(data_dir)
    from django.test import Client

    user, big, seeded = seed(
        traces=args.traces, steps=args.steps_per_trace, big_steps=args.big_steps
    )
    print(f"seeded in {seeded:.1f} s; timing {args.runs} requests per page", flush=True)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    results = {
        "inspector_500_steps": timed(client, f"/traces/{big.pk}/", args.runs),
        "list": timed(client, "/traces/", args.runs),
        "list_filtered": timed(client, "/traces/?outcome=failure&environment=k8s", args.runs),
        "list_search": timed(client, "/traces/?q=certificate", args.runs),
        "list_label_source": timed(client, "/traces/?label_source=human", args.runs),
        "list_search_outcome": timed(client, "/traces/?q=nightly&outcome=success", args.runs),
        "queue": timed(client, "/queue/", args.runs),
        "queue_low_confidence": timed(client, "/queue/?why=low-confidence", args.runs),
        "stats": timed(client, "/stats/", args.runs),
    }
    for name, figures in results.items():
        print(f"{name:28} median {figures['median_ms']:7.1f} ms  p95 {figures['p95_ms']:7.1f} ms"
              f"  {figures['queries']} queries  {figures['bytes'] // 1024} KiB")  # fmt: skip
    summary = {
        "traces": args.traces + 1,
        "inspector_steps": args.big_steps,
        "inspector_median_ms": results["inspector_500_steps"]["median_ms"],
        "steps": args.traces * args.steps_per_trace + args.big_steps,
        "list_median_ms": results["list"]["median_ms"],
        "queue_median_ms": results["queue"]["median_ms"],
        "stats_median_ms": results["stats"]["median_ms"],
        "inspector_target_ms": 200,
        "list_target_ms": 100,
        "pages": results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
