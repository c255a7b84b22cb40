"""Dashboard forms: list filters parsed from the query string, relabel, settings."""

from datetime import date, datetime, time, timedelta
from typing import Any, cast

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils import timezone

from traces.models import ApiKey, Membership, Step, Trace
from traces.selectors.trace_list import TraceFilters


def _blank(choices: list[tuple[str, str]], label: str = "any") -> list[tuple[str, str]]:
    return [("", label), *choices]


def suggested_text(list_id: str, *, max_length: int) -> forms.CharField:
    """An optional free-text field suggesting the page's `<datalist id=list_id>` values."""
    return forms.CharField(
        required=False,
        max_length=max_length,
        widget=forms.TextInput(attrs={"list": list_id, "autocomplete": "off"}),
    )


class ListFilterForm(forms.Form):
    """The filters of a dashboard list, from its query string. A value that does not parse (an
    unknown choice, a malformed date, a date range upside down) is left out of the filters,
    never silently: the field carries its error and `not_applied()` names it for the page."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            # both out: either one alone would not be the range that was asked for
            self.add_error("since", "Later than Until: neither date was applied.")
            self.add_error("until", "Earlier than Since: neither date was applied.")
        return data

    def not_applied(self) -> list[tuple[str, str]]:
        """(label, error) of each filter that was asked for but not applied."""
        self.is_valid()
        return [
            (str(self[name].label), " ".join(str(e) for e in errors))
            for name, errors in self.errors.items()
            if name in self.fields
        ]

    def is_filtered(self) -> bool:
        self.is_valid()
        return any(self.cleaned_data.values())

    def active_count(self) -> int:
        """How many filters are applied (shown on the folded filters of a narrow screen)."""
        self.is_valid()
        return sum(1 for value in self.cleaned_data.values() if value)


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
    outcome = forms.ChoiceField(required=False, choices=_blank(Trace.Outcome.choices))
    review_status = forms.ChoiceField(
        required=False, choices=_blank(Trace.ReviewStatus.choices), label="Review status"
    )
    label_source = forms.ChoiceField(
        required=False,
        choices=_blank([*Step.LabelSource.choices, ("none", "no labels")]),
        label="Labels by",
    )
    environment = suggested_text("known-environments", max_length=100)
    tool = suggested_text("known-tools", max_length=200)
    task_type = forms.ChoiceField(
        required=False, choices=_blank(Trace.TaskType.choices), label="Task type"
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
            since=_day_start(data.get("since")),
            until=_day_start(data.get("until"), days_after=1),
            q=data.get("q") or None,
        )

    def selected_label_source(self) -> str | None:
        self.is_valid()
        return self.cleaned_data.get("label_source") or None

    def selected_run_id(self) -> str | None:
        self.is_valid()
        return (self.cleaned_data.get("run") or "").strip() or None


def _day_start(day: date | None, *, days_after: int = 0) -> datetime | None:
    if day is None:
        return None
    start = datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
    return start + timedelta(days=days_after)


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


class AuditFilterForm(ListFilterForm):
    # Pickers of the values the project's log holds; still plain text underneath, so an older
    # link with an action prefix ("?action=member") keeps filtering (it is added as an option).
    action = forms.CharField(required=False, max_length=64, widget=forms.Select)
    object_type = forms.CharField(
        required=False, max_length=64, label="Object type", widget=forms.Select
    )
    actor = forms.CharField(required=False, max_length=150, label="Who (username)")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), label="Until (incl.)"
    )

    def __init__(
        self,
        data: Any = None,
        *,
        actions: list[str] | None = None,
        object_types: list[str] | None = None,
    ) -> None:
        super().__init__(data)
        for name, known, label in (
            ("action", actions or [], "any action"),
            ("object_type", object_types or [], "any type"),
        ):
            chosen = (self.data.get(name) or "").strip()[:64] if self.data else ""
            values = sorted({*known, chosen} - {""})
            widget = cast(forms.Select, self.fields[name].widget)  # declared above
            widget.choices = [("", label), *((v, v) for v in values)]

    def values(self) -> dict:
        self.is_valid()
        data = self.cleaned_data
        return {
            "action": data.get("action") or None,
            "object_type": data.get("object_type") or None,
            "actor": data.get("actor") or None,
            "since": _day_start(data.get("since")),
            "until": _day_start(data.get("until"), days_after=1),
        }


class ApiKeyForm(forms.Form):
    name = forms.CharField(required=False, max_length=100)
    scopes = forms.MultipleChoiceField(
        choices=ApiKey.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[ApiKey.Scope.INGEST, ApiKey.Scope.RECALL],
    )


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.REVIEWER)


class MemberCreateForm(forms.Form):
    """A new account made by a project admin, who hands its one-time password over."""

    username = forms.CharField(
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text="Letters, digits and @ . + - _ only.",
    )
    email = forms.EmailField(required=False, max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.REVIEWER)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # its own ids: the page also has the "add an existing account" form
        kwargs.setdefault("auto_id", "new-member-%s")
        super().__init__(*args, **kwargs)


class ProjectCreateForm(forms.Form):
    name = forms.SlugField(
        max_length=64, label="Project name",
        help_text="Letters, digits, - and _ only: API keys and commands name it.",
    )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "new-project-%s")
        super().__init__(*args, **kwargs)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class _LoginThrottled:
    """Refuses a sign-in that has to wait (its username or address failed too often lately),
    before the password is even checked (traces.services.login_throttle counts the failures)."""

    locked_out_message = ""  # shown instead of "didn't match" (templates/registration)

    def clean(self):
        from traces.services.login_throttle import client_address, login_wait_seconds

        username = self.cleaned_data.get("username") or ""  # type: ignore[attr-defined]
        request = getattr(self, "request", None)  # AuthenticationForm keeps the request
        seconds = login_wait_seconds(username=username, address=client_address(request))
        if seconds:
            wait = f"{seconds} second{'s' if seconds != 1 else ''}"
            if seconds >= 90:
                wait = f"{round(seconds / 60)} minutes"
            self.locked_out_message = (
                f"Too many failed sign-ins: wait {wait} before trying again (each further "
                "wrong password doubles the wait)."
            )
            raise forms.ValidationError(self.locked_out_message, code="locked_out")
        return super().clean()  # type: ignore[misc]


class ThrottledAuthenticationForm(_LoginThrottled, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(_LoginThrottled, AdminAuthenticationForm):
    pass
