"""Operators' commands: create_api_key and import_traces."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiKey, Project
from tests.support.api import step, trajectory
from tests.support.transcripts import Call, anthropic_transcript, chat_transcript, import_body
from traces.management.commands import import_traces
from traces.models import Trace

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------- create_api_key


def test_create_api_key_prints_a_key_that_authenticates(api_for):
    out, err = run("create_api_key", "--project", "acme", "--scopes", "ingest,read")
    key = out.strip()

    assert key.startswith("hs_") and "\n" not in key  # stdout is the key alone: scriptable
    assert "not shown again" in err
    assert api_for(key).get("traces").status_code == 200
    assert ApiKey.objects.get(project__name="acme").scopes == ["ingest", "read"]


def test_create_api_key_reuses_an_existing_project(make_project):
    make_project("acme")
    run("create_api_key", "--project", "acme", "--scopes", "ingest,recall")

    assert Project.objects.filter(name="acme").count() == 1
    assert ApiKey.objects.get().scopes == ["ingest", "recall"]


def test_create_api_key_refuses_unknown_scopes_naming_the_allowed_ones():
    with pytest.raises(CommandError, match="admin, ingest, read, recall") as refused:
        run("create_api_key", "--project", "fresh", "--scopes", "ingest,superuser")

    assert "superuser" in str(refused.value)
    assert not ApiKey.objects.exists()
    assert not Project.objects.filter(name="fresh").exists()  # nothing left behind


def test_create_api_key_refuses_a_project_name_that_is_not_a_slug():
    with pytest.raises(CommandError, match="--project must be a slug"):
        run("create_api_key", "--project", "my project!", "--scopes", "ingest")
    assert not Project.objects.exists()


# ---------------------------------------------------------------------------- import_traces


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


def bad_kind() -> dict:
    body = trajectory("bad-kind")
    body["steps"][1] = step(1, kind="telepathy")
    return body


@pytest.fixture
def jsonl(tmp_path) -> Path:
    return write_jsonl(
        tmp_path / "traces.jsonl",
        [
            trajectory("run-1"),  # line 1
            trajectory("run-2", steps=5),  # line 2
            trajectory("run-1"),  # line 3: the same trajectory again
            "",  # line 4: blank lines are skipped
            "{not json",  # line 5
            "[1, 2, 3]",  # line 6
            bad_kind(),  # line 7
            {k: v for k, v in trajectory("no-task").items() if k != "task"},  # line 8
            trajectory("run-2", task="another task"),  # line 9: same id, other content
        ],
    )


def test_import_traces_stores_valid_lines_and_summarises_the_rest(jsonl):
    out, _ = run("import_traces", str(jsonl), "--project", "imported", "--no-progress")

    assert out.splitlines()[0] == "imported 2, duplicates 1, rejected 5"
    project = Project.objects.get(name="imported")
    stored = Trace.objects.filter(project=project).order_by("external_id")
    assert [(t.external_id, t.step_count) for t in stored] == [("run-1", 3), ("run-2", 5)]


def test_import_traces_names_the_line_and_the_field_of_each_rejection(jsonl):
    out, _ = run("import_traces", str(jsonl), "--project", "imported", "--no-progress")
    reasons = [line.strip() for line in out.splitlines()[1:]]

    assert reasons[0].startswith("rejected line 5: not JSON")
    assert reasons[1] == "rejected line 6: not a JSON object"
    assert reasons[2].startswith("rejected line 7 (bad-kind): steps.1.kind: Input should be")
    assert reasons[3] == "rejected line 8 (no-task): task: Field required"
    assert reasons[4].startswith("rejected line 9 (run-2): same external_id")
    assert "other content" in reasons[4]


def test_import_traces_again_counts_everything_as_duplicates(jsonl):
    run("import_traces", str(jsonl), "--project", "imported", "--no-progress")
    out, _ = run("import_traces", str(jsonl), "--project", "imported", "--no-progress")

    assert out.splitlines()[0] == "imported 0, duplicates 3, rejected 5"
    assert Trace.objects.count() == 2


def test_import_traces_keeps_line_numbers_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(import_traces, "CHUNK", 2)
    path = write_jsonl(
        tmp_path / "chunks.jsonl",
        [trajectory(f"run-{i}") for i in range(4)] + [bad_kind(), trajectory("run-5")],
    )
    out, _ = run("import_traces", str(path), "--project", "imported", "--no-progress")

    assert out.splitlines()[0] == "imported 5, duplicates 0, rejected 1"
    assert out.splitlines()[1].strip().startswith("rejected line 5 (bad-kind): steps.1.kind")


def test_import_traces_refuses_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run("import_traces", str(tmp_path / "nope.jsonl"), "--project", "imported")


# ------------------------------------------------------------------------ import_traces --format


def transcript_line(external_id: str, **fields) -> dict:
    body = import_body("openai", external_id, messages=chat_transcript(TASK, CALLS, "done"))
    del body["format"]  # --format gives it
    body.update(fields)
    return body


TASK = "Why does the web container keep restarting?"
CALLS = [Call("docker_ps", {"all": True}, "web Restarting (137)")]


def test_import_traces_with_a_format_reads_one_transcript_per_line(tmp_path):
    orphan = transcript_line("orphan")
    orphan["messages"][3]["tool_call_id"] = "call_9"
    claude = {
        **transcript_line("claude"),
        "format": "anthropic",  # a line's own format wins
        "messages": anthropic_transcript(TASK, CALLS, "done"),
    }
    path = write_jsonl(
        tmp_path / "chats.jsonl",
        [transcript_line("chat-1"), orphan, transcript_line("chat-1"), claude],
    )
    out, _ = run(
        "import_traces", str(path), "--project", "imported", "--format", "openai", "--no-progress"
    )

    assert out.splitlines() == [
        "imported 2, duplicates 1, rejected 1",
        "  rejected line 2 (orphan): messages[3].tool_call_id: no tool call with id 'call_9' "
        "before it",
    ]
    chat = Trace.objects.get(external_id="chat-1")
    assert (chat.task, chat.final_answer, chat.step_count) == (TASK, "done", 3)
    assert Trace.objects.get(external_id="claude").metadata["transcript_format"] == "anthropic"


def test_import_traces_refuses_an_unknown_format():
    with pytest.raises(CommandError, match="invalid choice"):
        run("import_traces", "x.jsonl", "--project", "imported", "--format", "gemini")
