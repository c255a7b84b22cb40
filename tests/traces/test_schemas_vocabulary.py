"""The domain's words are defined once: the API's outcome values, the model's choices and the
CHECK constraint are the same list; 'success or partial counts as success' and 'failure or
partial went wrong' are one rule each, written nowhere else."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from pydantic import ValidationError

from traces.models import Trace
from traces.review.types import (
    SUCCEEDED_OUTCOMES,
    WENT_WRONG_OUTCOMES,
    counts_as_success,
    went_wrong,
)
from traces.schemas import OUTCOMES, TraceCompleteIn, TraceIn, TraceSummaryOut


def test_the_apis_outcomes_are_the_models_choices():
    assert OUTCOMES == ("success", "failure", "partial", "unknown") == tuple(Trace.Outcome.values)
    constraint = next(c for c in Trace._meta.constraints if c.name == "traces_trace_outcome_valid")
    assert dict(constraint.condition.children)["outcome__in"] == Trace.Outcome.values


def test_the_constraint_made_from_the_choices_is_the_migrated_one(db):
    out = StringIO()
    call_command("makemigrations", "traces", check=True, dry_run=True, stdout=out)  # exit 1: not
    assert "No changes detected" in out.getvalue()


def test_the_schemas_take_and_show_the_outcomes_as_plain_strings():
    for outcome in OUTCOMES:
        parsed = TraceCompleteIn.model_validate_json(f'{{"outcome": "{outcome}"}}')
        assert parsed.outcome == outcome
        assert parsed.model_dump(mode="json") == {
            "outcome": outcome, "ended_at": None, "feedback": "", "final_answer": ""
        }  # fmt: skip
    assert TraceIn(external_id="t", agent="a", task="x").outcome == "unknown"
    with pytest.raises(ValidationError) as refused:
        TraceCompleteIn.model_validate({"outcome": "succeeded"})
    (error,) = refused.value.errors()
    assert error["loc"] == ("outcome",)
    assert error["msg"] == "Input should be 'success', 'failure', 'partial' or 'unknown'"


@pytest.mark.parametrize("schema", [TraceIn, TraceCompleteIn, TraceSummaryOut])
def test_the_json_schema_lists_the_outcomes(schema):
    rendered = schema.model_json_schema()
    outcome = rendered["properties"]["outcome"]
    assert outcome["$ref"] == "#/$defs/Outcome"
    assert rendered["$defs"]["Outcome"] == {
        "enum": list(OUTCOMES), "title": "Outcome", "type": "string"
    }  # fmt: skip


def test_success_or_partial_counts_as_success_and_nothing_else():
    assert SUCCEEDED_OUTCOMES <= set(OUTCOMES)
    assert [o for o in OUTCOMES if counts_as_success(o)] == ["success", "partial"]
    assert not counts_as_success("unknown")


def test_failure_or_partial_went_wrong_and_nothing_else():
    assert WENT_WRONG_OUTCOMES <= set(OUTCOMES)
    assert [o for o in OUTCOMES if went_wrong(o)] == ["failure", "partial"]
    assert not went_wrong("unknown")


def test_no_module_spells_an_outcome_rule_again():
    root = Path(__file__).resolve().parents[2]
    spelled = re.compile(
        r"""in \(?["'](success|failure|partial)["'], ["'](success|failure|partial)["']"""
    )
    found = [
        f"{path.relative_to(root)}:{n}"
        for app in ("core", "traces", "experiences", "hindsight_site")
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if spelled.search(line)
    ]
    assert found == []
