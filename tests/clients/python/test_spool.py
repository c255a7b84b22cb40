"""The recorder's durable spool against the real site over HTTP: what could not be sent before
the recorder stopped is written to disk and resent, exactly once, when the server is back."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from hindsight_client import Backoff, ConnectionFailed, Limits, default_spool_dir, resend_spooled
from hindsight_client.spool import spool_write
from tests.support.client import FAST_BACKOFF
from tests.support.waiting import wait_for
from traces.models import Step, Trace

ROOT = Path(__file__).resolve().parents[3]

RESENDER = """
import json, sys
from hindsight_client import HindsightClient, resend_spooled
result = resend_spooled(HindsightClient(sys.argv[1], sys.argv[2]), spool_dir=sys.argv[3])
print(json.dumps({"sent": result.sent, "locked": len(result.locked)}))
"""

HOLDER = """
import fcntl, sys
with open(sys.argv[1]) as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
"""


def stored(external_id: str) -> tuple[Trace, list[Step]]:
    trace = Trace.objects.get(external_id=external_id)
    return trace, list(trace.steps.order_by("index"))


def spool_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def spool_by_hand(client, spool_dir: Path, external_id: str, steps: list[dict], *, age: float = 0):
    """A spool file as a recorder (maybe an older client's) would have written it, `age`
    seconds old."""
    path = spool_write(
        spool_dir,
        transport=client.transport,
        header={"external_id": external_id, "agent": "a", "task": f"task {external_id}"},
        steps=[
            {"index": n, "kind": "tool_call", "tool": "ls", **step} for n, step in enumerate(steps)
        ],
        complete={"outcome": "success", "final_answer": "done"},
    )
    if age:
        when = path.stat().st_mtime - age
        os.utime(path, (when, when))
    return path


def spool_at_exit(site, relay, spool_dir: Path, *external_ids: str, events: int = 3) -> None:
    """Record each trajectory in a process that exits while the server is unreachable (so no
    request of it can still be on its way when the test goes on)."""
    relay.down()
    script = textwrap.dedent(
        f"""
        import sys
        from hindsight_client import HindsightClient
        client = HindsightClient({relay.url!r}, {site.key!r})
        for external_id in sys.argv[1:]:
            rec = client.recorder(
                agent="a", task="task " + external_id, external_id=external_id, exit_timeout=0.5)
            for n in range({events}):
                rec.record_event(tool="ls", arguments={{"n": n}})
            rec.finish("success")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *external_ids],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len(spool_files(spool_dir)) == len(external_ids), done.stderr


def test_steps_unsent_at_exit_are_spooled_and_resent_once_the_server_is_back(
    site, relay, spool_dir
):
    relay.down()
    script = textwrap.dedent(
        f"""
        from hindsight_client import HindsightClient
        rec = HindsightClient({relay.url!r}, {site.key!r}).recorder(
            agent="ops-bot", task="outlive the server", external_id="outage-1",
            exit_timeout=1, batch_size=10)
        for n in range(25):
            rec.record_event(tool="shell", arguments={{"n": n}}, observation=f"line {{n}}")
        rec.finish("success", final_answer="done")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    assert "25 events not sent before exit (server unreachable); spooled to" in done.stderr
    [path] = spool_files(spool_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spool_dir.stat().st_mode) == 0o700
    spooled = json.loads(path.read_text())
    assert spooled["open"]["external_id"] == "outage-1"
    assert [s["index"] for s in spooled["steps"]] == list(range(25))
    assert [s["arguments"]["n"] for s in spooled["steps"]] == list(range(25))
    assert spooled["complete"]["outcome"] == "success"

    client = site.client(relay.url)
    still_down = resend_spooled(client, spool_dir=spool_dir, attempts=1)
    assert still_down.pending == [path] and isinstance(still_down.error, ConnectionFailed)
    assert path.exists()

    relay.up()  # same port
    result = resend_spooled(client, spool_dir=spool_dir)

    assert result.sent == ["outage-1"] and result.done
    trace, steps = stored("outage-1")
    assert trace.is_complete and trace.outcome == "success" and trace.final_answer == "done"
    assert [s.index for s in steps] == list(range(25))
    assert [s.arguments["n"] for s in steps] == list(range(25))
    assert list(spool_dir.iterdir()) == []

    requests = len(relay.seen)
    again = resend_spooled(client, spool_dir=spool_dir)
    assert again.sent == [] and again.done and len(relay.seen) == requests


def test_stop_spools_only_what_the_server_has_not_acknowledged(site, relay, spool_dir):
    client = site.client(relay.url)
    rec = client.recorder(agent="a", task="t", backoff=FAST_BACKOFF, batch_size=4)
    for n in range(8):
        rec.record_event(tool="ls", arguments={"n": n})
    assert rec.flush(15)
    relay.down()
    for n in range(8, 20):
        rec.record_event(tool="ls", arguments={"n": n})
    rec.finish("partial", final_answer="half")
    assert not rec.flush(0.3)

    path = rec.stop()

    assert path is not None and path == rec.spool_path and spool_files(spool_dir) == [path]
    spooled = json.loads(path.read_text())
    assert [s["index"] for s in spooled["steps"]] == list(range(8, 20))
    assert spooled["complete"]["outcome"] == "partial"
    assert rec.stop() == path  # spooled once

    relay.up()
    result = client.resend_spooled()  # HINDSIGHT_SPOOL_DIR, set by the fixture

    assert result.sent == [rec.external_id]
    trace, steps = stored(rec.external_id)
    assert (trace.outcome, trace.final_answer) == ("partial", "half")
    assert [s.arguments["n"] for s in steps] == list(range(20))
    assert spool_files(spool_dir) == []


def test_a_batch_stored_but_not_acknowledged_is_spooled_and_resent_without_duplicates(
    site, relay, spool_dir
):
    # A long first backoff holds the sender after the lost answer, so stop() finds the batch
    # the server already stored still in flight.
    client = site.client(relay.url)
    rec = client.recorder(agent="a", task="t", backoff=Backoff(base=20, cap=20))
    wait_for(lambda: rec.trace_id is not None)
    relay.lose_answers = 1
    for n in range(5):
        rec.record_event(tool="ls", arguments={"n": n})
    rec.finish("success")
    wait_for(lambda: any(p.endswith("/steps") for p in relay.paths("POST")))

    path = rec.stop()

    assert path is not None
    assert [s["index"] for s in json.loads(path.read_text())["steps"]] == list(range(5))
    assert len(stored(rec.external_id)[1]) == 5  # the server has them already

    result = resend_spooled(client, spool_dir=spool_dir)

    assert result.sent == [rec.external_id] and not result.rejected
    trace, steps = stored(rec.external_id)
    assert trace.is_complete and [s.arguments["n"] for s in steps] == list(range(5))


def test_a_replay_after_everything_was_stored_neither_duplicates_nor_conflicts(
    site, relay, spool_dir
):
    spool_at_exit(site, relay, spool_dir, "replayed", events=4)
    [path] = spool_files(spool_dir)
    content = path.read_bytes()
    relay.up()
    client = site.client(relay.url)
    assert resend_spooled(client, spool_dir=spool_dir).sent == ["replayed"]

    path.write_bytes(content)  # as if the resender died between the answers and the deletion
    result = resend_spooled(client, spool_dir=spool_dir)

    assert result.sent == ["replayed"] and not result.rejected and not path.exists()
    trace, steps = stored("replayed")
    assert trace.is_complete and [s.arguments["n"] for s in steps] == [0, 1, 2, 3]


def test_a_corrupt_spool_file_is_set_aside_with_a_warning_and_the_others_are_sent(
    site, relay, spool_dir, caplog
):
    spool_at_exit(site, relay, spool_dir, "good")
    [path] = spool_files(spool_dir)
    broken = path.with_name(path.name.split("-", 1)[0] + "-broken.json")
    broken.write_text('{"version": 1, "open": {"external_id": "x"}, "steps": [')
    relay.up()

    with caplog.at_level(logging.WARNING, logger="hindsight_client"):
        result = resend_spooled(site.client(relay.url), spool_dir=spool_dir)

    aside = broken.with_name(broken.name + ".bad")
    assert result.sent == ["good"] and result.corrupt == [aside]
    assert aside.exists() and spool_files(spool_dir) == []
    assert f"{broken} cannot be read (not JSON" in caplog.text


def test_a_trajectory_the_server_refuses_for_good_is_set_aside_not_retried_forever(
    site, relay, spool_dir, caplog
):
    client = site.client(relay.url)
    rec = client.recorder(agent="a", task="t", backoff=FAST_BACKOFF)
    rec.record_event(tool="ls")
    assert rec.flush(15)
    relay.down()
    rec.finish("success")
    path = rec.stop()
    assert path is not None
    # Meanwhile the trace was completed with another outcome: replaying cannot succeed.
    site.client().transport.request(
        "POST", f"traces/{rec.trace_id}/complete", {"outcome": "failure"}
    )
    relay.up()

    with caplog.at_level(logging.WARNING, logger="hindsight_client"):
        result = client.resend_spooled()

    aside = path.with_name(path.name + ".rejected")
    assert result.sent == [] and result.rejected == [aside] and aside.exists()
    assert "refused trajectory" in caplog.text and "HTTP 409" in caplog.text
    assert "HTTP 409" in json.loads(aside.read_text())["rejected"]["reason"]
    assert Trace.objects.get(external_id=rec.external_id).outcome == "failure"
    assert client.resend_spooled().rejected == []


def test_a_spool_file_another_process_is_sending_is_skipped(site, relay, spool_dir):
    spool_at_exit(site, relay, spool_dir, "held")
    [path] = spool_files(spool_dir)
    relay.up()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = resend_spooled(site.client(relay.url), spool_dir=spool_dir)
        assert result.locked == [path] and result.sent == [] and not result.done
        assert relay.seen == [] and path.exists()
    finally:
        holder.communicate("", timeout=10)

    assert resend_spooled(site.client(relay.url), spool_dir=spool_dir).sent == ["held"]


def test_two_resenders_at_once_send_every_file_exactly_once(site, relay, spool_dir):
    ids = [f"parallel-{n}" for n in range(6)]
    spool_at_exit(site, relay, spool_dir, *ids)
    relay.up()
    relay.delay = 0.05  # keeps both resenders busy at the same time

    resenders = [
        subprocess.Popen(
            [sys.executable, "-c", RESENDER, relay.url, site.key, str(spool_dir)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    answers = []
    for resender in resenders:
        out, err = resender.communicate(timeout=60)
        assert resender.returncode == 0, err
        answers.append(json.loads(out))

    sent = answers[0]["sent"] + answers[1]["sent"]
    assert sorted(sent) == ids  # each one by exactly one of the two
    assert relay.paths("POST").count("/api/v1/traces/open") == len(ids)
    assert spool_files(spool_dir) == []
    for external_id in ids:
        trace, steps = stored(external_id)
        assert trace.is_complete and [s.arguments["n"] for s in steps] == [0, 1, 2]


def test_a_new_recorder_resends_spooled_trajectories_in_the_background(site, relay, spool_dir):
    spool_at_exit(site, relay, spool_dir, "earlier-run", events=5)
    [path] = spool_files(spool_dir)
    broken = path.with_name(path.name.split("-", 1)[0] + "-broken.json")
    broken.write_bytes(b"\x00not json")
    relay.up()

    rec = site.client(relay.url).recorder(agent="a", task="the next run")
    rec.record_event(tool="ls")
    assert rec.finish("success", wait=15)  # the agent's own trace is not held up

    wait_for(lambda: not spool_files(spool_dir))
    trace, steps = stored("earlier-run")
    assert trace.is_complete and [s.arguments["n"] for s in steps] == list(range(5))
    assert broken.with_name(broken.name + ".bad").exists()


def test_spooling_can_be_turned_off(site, relay, spool_dir):
    relay.down()
    rec = site.client(relay.url, spool_dir=False).recorder(agent="a", task="t")
    rec.record_event(tool="ls")

    assert rec.stop() is None
    assert not spool_dir.exists()
    assert not rec.record_event(tool="ls")  # stopped: later events are dropped
    assert rec.dropped == 1


def test_the_spool_dir_is_hindsight_spool_dir_else_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HINDSIGHT_SPOOL_DIR", str(tmp_path / "mine"))
    assert default_spool_dir() == tmp_path / "mine"

    monkeypatch.delenv("HINDSIGHT_SPOOL_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_spool_dir() == tmp_path / "xdg" / "hindsight" / "spool"

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_spool_dir() == tmp_path / ".cache" / "hindsight" / "spool"


def test_a_spooled_step_too_large_for_a_request_is_cut_and_the_trajectory_sent(
    site, relay, spool_dir
):
    client = site.client(relay.url, limits=Limits(max_body_bytes=64 * 1024))
    spool_by_hand(client, spool_dir, "old-and-big", [{}, {"observation": "x" * 200_000}, {}])

    result = resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF)

    assert result.sent == ["old-and-big"] and result.rejected_steps == []
    assert max(relay.sizes) <= 64 * 1024 and 413 not in relay.statuses()
    trace, steps = stored("old-and-big")
    assert trace.is_complete and len(steps) == 3
    assert "cut by the client at" in steps[1].observation_raw


def test_a_spooled_step_the_server_refuses_fails_alone_and_holds_up_nothing(site, relay, spool_dir):
    client = site.client(relay.url)
    spool_by_hand(client, spool_dir, "has-a-nul", [{}, {"observation": "\x00"}, {}], age=60)
    spool_by_hand(client, spool_dir, "fine", [{}, {}])

    result = resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF)

    assert result.sent == ["has-a-nul", "fine"] and result.done
    [rejected] = result.rejected_steps
    assert rejected.index == 1 and rejected.status in (422, 500)
    trace, steps = stored("has-a-nul")
    assert trace.is_complete and [s.kind for s in steps] == ["tool_call", "system", "tool_call"]
    assert "step 1 (tool_call ls) was not stored" in steps[1].content
    assert stored("fine")[0].is_complete
    assert spool_files(spool_dir) == []


def test_a_file_kept_for_later_holds_its_stand_ins_so_the_replay_does_not_conflict(
    site, relay, spool_dir
):
    client = site.client(relay.url)
    path = spool_by_hand(client, spool_dir, "kept", [{}, {"observation": "\x00"}, {}])
    relay.answer_when(503, path="/complete")  # the server is overloaded at the very end

    first = resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF, attempts=1)

    assert first.pending == [path] and first.error is not None and first.error.status == 503
    assert json.loads(path.read_text())["steps"][1]["kind"] == "system"
    assert "failures" not in json.loads(path.read_text())  # the server's fault: not counted
    relay.clear_rules()
    again = resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF)

    assert again.sent == ["kept"] and again.rejected == []
    trace, steps = stored("kept")
    assert trace.is_complete and [s.kind for s in steps] == ["tool_call", "system", "tool_call"]


def test_a_file_the_server_keeps_failing_on_is_set_aside_after_max_failures(
    site, relay, spool_dir, caplog
):
    client = site.client(relay.url)
    poisoned = spool_by_hand(client, spool_dir, "poison-open", [{}], age=60)
    relay.answer_when(500, path="/traces/open", body=b"poison-open")
    spool_by_hand(client, spool_dir, "behind-it", [{}])

    def resend():
        return resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF, max_failures=3)

    first = resend()
    assert first.sent == ["behind-it"]  # not held up by the older, failing file
    assert first.pending == [poisoned] and first.rejected == []
    assert json.loads(poisoned.read_text())["failures"] == 1
    assert resend().pending == [poisoned]
    with caplog.at_level(logging.WARNING, logger="hindsight_client"):
        third = resend()

    aside = poisoned.with_name(poisoned.name + ".rejected")
    assert third.rejected == [aside] and third.pending == [] and not poisoned.exists()
    reason = json.loads(aside.read_text())["rejected"]["reason"]
    assert reason.startswith("failed 3 passes; the last with HTTP 500")
    assert "failed 3 passes" in caplog.text
    assert resend().rejected == []  # never tried again


def test_a_file_is_kept_uncounted_while_the_server_answers_nothing_else(site, relay, spool_dir):
    client = site.client(relay.url)
    path = spool_by_hand(client, spool_dir, "waits", [{}])
    relay.fail_next(500, times=6)  # the open's three tries, then the probe's

    down = resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF)

    assert down.pending == [path] and down.error is not None and down.error.status == 500
    assert "failures" not in json.loads(path.read_text())
    assert resend_spooled(client, spool_dir=spool_dir, backoff=FAST_BACKOFF).sent == ["waits"]
