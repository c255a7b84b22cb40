"""The trajectory pages' forms: the trace list's and the queue's filters, a step's relabel."""

from django import forms

from core.list_filters import ListFilterForm, blank_choices, day_start, suggested_text
from traces.models import Step, Trace
from traces.selectors.queue import QueueFilters, QueueReason
from traces.selectors.trace_list import TraceFilters


class TraceFilterForm(ListFilterForm):
    q = forms.CharField(
        required=False, max_length=200, label="Search tasks, steps and observations"
    )
    # An external id or its beginning ("deploy-web-" finds every attempt), or a session id.
    run = forms.CharField(
        required=False, max_length=200, label="Run id",
        widget=forms.TextInput(attrs={"placeholder": "external or session id"}),
    )  # fmt: skip
    # Suggestions from the page's <datalist>s (templates/traces/list.html); a part of a value
    # is enough ("gpt" finds "gpt-4o-mini"), any case.
    agent = suggested_text("known-agents", max_length=200)
    outcome = forms.ChoiceField(required=False, choices=blank_choices(Trace.Outcome.choices))
    review_status = forms.ChoiceField(
        required=False, choices=blank_choices(Trace.ReviewStatus.choices), label="Review status"
    )
    label_source = forms.ChoiceField(
        required=False,
        choices=blank_choices([*Step.LabelSource.choices, ("none", "no labels")]),
        label="Labels by",
    )
    environment = suggested_text("known-environments", max_length=100)
    tool = suggested_text("known-tools", max_length=200)
    task_type = forms.ChoiceField(
        required=False, choices=blank_choices(Trace.TaskType.choices), label="Task type"
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), label="Until (incl.)"
    )

    def filters(self) -> TraceFilters:
        """The valid filters; an invalid field is left out (see ListFilterForm)."""
        self.is_valid()  # cleaned_data then holds the valid fields only
        data = self.cleaned_data
        return TraceFilters(
            agent=data.get("agent") or None,
            outcome=data.get("outcome") or None,
            review_status=data.get("review_status") or None,
            environment=data.get("environment") or None,
            tool=data.get("tool") or None,
            task_type=data.get("task_type") or None,
            since=day_start(data.get("since")),
            until=day_start(data.get("until"), days_after=1),
            q=data.get("q") or None,
        )

    def selected_label_source(self) -> str | None:
        self.is_valid()
        return self.cleaned_data.get("label_source") or None

    def selected_run_id(self) -> str | None:
        self.is_valid()
        return (self.cleaned_data.get("run") or "").strip() or None


class QueueFilterForm(ListFilterForm):
    agent = forms.CharField(required=False, max_length=200)
    outcome = forms.ChoiceField(required=False, choices=blank_choices(Trace.Outcome.choices))
    why = forms.ChoiceField(
        required=False,
        choices=blank_choices([(s, QueueReason.TITLES[v]) for v, s in QueueReason.SLUGS.items()]),
    )

    def filters(self) -> QueueFilters:
        """The valid filters; an invalid field is left out (see ListFilterForm)."""
        self.is_valid()
        data = self.cleaned_data
        return QueueFilters(
            agent=data.get("agent") or None,
            outcome=data.get("outcome") or None,
            why=QueueReason.from_slug(data.get("why") or ""),
        )


class RelabelForm(forms.Form):
    label = forms.ChoiceField(required=False, choices=Step.Label.choices)
    reason = forms.CharField(required=False, max_length=2000)
    version = forms.IntegerField(min_value=0)
    # "back to the machine label": the undo of an override; label and reason are then ignored.
    to_machine = forms.BooleanField(required=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("to_machine") and not data.get("label"):
            raise forms.ValidationError("choose a label")
        return data
