"""Forms of the curation pages: library filters, inline edits, scope, bulk actions, merges, KB."""

from collections.abc import Mapping
from typing import Any, cast

from django import forms

from core.list_filters import ListFilterForm, blank_choices, suggested_text
from experiences.models import Experience
from experiences.selectors import LibraryFilters
from traces.models import Trace


class ListField(forms.CharField):
    """A comma-separated list in one text input ("docker, k8s"), cleaned to distinct values."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", 2000)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""  # None only with empty_value=None, not set here
        return list(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))

    def run_validators(self, value: Any) -> None:
        super().run_validators(", ".join(value))


SCOPE_CHOICES = [
    ("global", "global"),
    ("environment", "limited to environments"),
    ("agent", "limited to agents"),
    ("user", "limited to users"),
]


class ExperienceFilterForm(ListFilterForm):
    q = forms.CharField(required=False, max_length=200, label="Search the advice")
    status = forms.ChoiceField(required=False, choices=blank_choices(Experience.Status.choices))
    scope = forms.ChoiceField(required=False, choices=blank_choices(SCOPE_CHOICES))
    polarity = forms.ChoiceField(required=False, choices=blank_choices(Experience.Polarity.choices))
    source = forms.ChoiceField(required=False, choices=blank_choices(Experience.Source.choices))
    tool = suggested_text("known-tools", max_length=200)
    environment = suggested_text("known-environments", max_length=100)
    agent = suggested_text("known-agents", max_length=200)

    def filters(self) -> LibraryFilters:
        """The valid filters; an invalid field is left out (see ListFilterForm)."""
        self.is_valid()  # cleaned_data then holds the valid fields only
        data = {name: value or None for name, value in self.cleaned_data.items()}
        return LibraryFilters(**data)


# The page's <datalist>s of known values (templates/experiences/library.html#known_values).
KNOWN_LISTS = {
    "environments": "known-environments",
    "agents": "known-agents",
    "users": "known-users",
}


def _known_input(kind: str) -> forms.TextInput:
    attrs = {"list": KNOWN_LISTS[kind], "autocomplete": "off", "data-known": kind}
    return forms.TextInput(attrs=attrs)


class ExperienceEditForm(forms.Form):
    """The advice and the scene features, as a person rewrites them."""

    advice = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 4}))
    task_type = forms.ChoiceField(choices=Trace.TaskType.choices, label="Task type")
    # suggestions from the library page's <datalist>s, as in the scope fields
    tools = ListField(
        widget=forms.TextInput(
            attrs={"list": "known-tools", "autocomplete": "off", "data-known": "tools"}
        )
    )
    environment = ListField(widget=_known_input("environments"))
    intent = forms.CharField(required=False, max_length=500)
    agent = suggested_text("known-agents", max_length=200)

    def __init__(
        self, data: Mapping[str, Any] | None = None, *, experience_id: int, **kwargs: Any
    ) -> None:
        # several rows of the library can be in edit mode at once: ids must not collide
        super().__init__(data, auto_id=f"edit-{experience_id}-%s", **kwargs)

    @classmethod
    def for_experience(cls, experience: Experience) -> "ExperienceEditForm":
        names = ("advice", "task_type", "tools", "environment", "intent", "agent")
        initial = {name: getattr(experience, name) for name in names}
        return cls(initial=initial, experience_id=experience.pk)

    def changed_scene(self, experience: Experience) -> dict[str, Any]:
        """Only the scene features that differ: an unchanged form saves no new version."""
        names = ("task_type", "tools", "environment", "intent", "agent")
        return {
            k: self.cleaned_data[k] for k in names if self.cleaned_data[k] != getattr(experience, k)
        }


class ScopeForm(forms.Form):
    environments = ListField(label="Environments", widget=_known_input("environments"))
    agents = ListField(label="Agents", widget=_known_input("agents"))
    users = ListField(label="Users", widget=_known_input("users"))
    # The unknown values the person was warned about and saves anyway (see unknown_signature).
    allow_unknown = forms.CharField(required=False, max_length=5000, widget=forms.HiddenInput)

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        experience_id: int | None = None,
        **kwargs: Any,
    ) -> None:
        prefix = f"scope-{experience_id}" if experience_id else "scope"
        super().__init__(data, auto_id=f"{prefix}-%s", **kwargs)

    @classmethod
    def for_experience(cls, experience: Experience) -> "ScopeForm":
        initial = {
            "environments": experience.scope_environments,
            "agents": experience.scope_agents,
            "users": experience.scope_users,
        }
        return cls(initial=initial, experience_id=experience.pk)

    def scope(self) -> dict[str, list[str]]:
        return {name: self.cleaned_data[name] for name in ("environments", "agents", "users")}

    def is_unknown_allowed(self, signature: str) -> bool:
        """True once the form was sent back with the warning about exactly these values."""
        return _is_signed(signature, self.cleaned_data.get("allow_unknown"))


def _is_signed(signature: str, sent: str | None) -> bool:
    # a browser sends the hidden input's line breaks as CRLF (the form encoding's rule)
    return bool(signature) and (sent or "").replace("\r\n", "\n") == signature


def unknown_signature(unknown: list[Any]) -> str:
    """The warned-about values, in a stable order: a changed value is warned about again."""
    return "\n".join(sorted(f"{item.kind}:{item.value}" for item in unknown))


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=Experience.Status.choices)


class VoteForm(forms.Form):
    value = forms.TypedChoiceField(
        choices=[("1", "up"), ("-1", "down"), ("0", "withdraw")], coerce=int
    )


class BulkForm(forms.Form):
    """An action on the selected rows of the library (at most one page of them)."""

    ACTIONS = [("approve", "Approve"), ("archive", "Archive"), ("scope", "Set scope")]

    action = forms.ChoiceField(choices=ACTIONS)
    ids = forms.TypedMultipleChoiceField(coerce=int)
    environments = ListField()
    agents = ListField()
    users = ListField()
    # As on one row's scope (ScopeForm): the unknown values the person was warned about.
    allow_unknown = forms.CharField(required=False, max_length=5000)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # any integer id: which of them belong to the project is the view's question
        values = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        ids = cast(forms.TypedMultipleChoiceField, self.fields["ids"])  # declared above
        ids.choices = [(v, v) for v in values[:200] if str(v).isdigit()]

    def scope(self) -> dict[str, list[str]]:
        return {name: self.cleaned_data[name] for name in ("environments", "agents", "users")}

    def is_unknown_allowed(self, signature: str) -> bool:
        return _is_signed(signature, self.cleaned_data.get("allow_unknown"))


class ProposalDecisionForm(forms.Form):
    KEEP = [
        ("first", "the first wording"),
        ("second", "the second wording"),
        ("custom", "my wording"),
    ]

    decision = forms.ChoiceField(choices=[("merge", "Merge"), ("dismiss", "Dismiss")])
    keep = forms.ChoiceField(choices=KEEP, required=False)
    advice = forms.CharField(
        required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 3})
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("decision") == "merge" and data.get("keep") == "custom":
            if not (data.get("advice") or "").strip():
                self.add_error("advice", "Write the combined wording, or keep one of the two.")
        return data

    def decision_kwargs(self) -> dict[str, Any]:
        """Arguments of `proposal_decide` for this choice."""
        data = self.cleaned_data
        if data["decision"] == "dismiss":
            return {"merge": False}
        if data.get("keep") == "custom":
            return {"merge": True, "advice": data["advice"].strip()}
        return {"merge": True, "keep": data.get("keep") or "first"}


class KbArticleForm(forms.Form):
    title = forms.CharField(max_length=300)
    body = forms.CharField(max_length=50_000, widget=forms.Textarea(attrs={"rows": 14}))
