"""The tenancy pages' forms: API keys, members and their roles, new projects, the audit log's
filters, and the sign-in forms that refuse a locked-out username or address."""

from typing import Any, cast

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.validators import UnicodeUsernameValidator

from accounts.models import ApiKey, Membership
from core.list_filters import ListFilterForm, day_start


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
            "since": day_start(data.get("since")),
            "until": day_start(data.get("until"), days_after=1),
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
    before the password is even checked (accounts.services.login_throttle counts the failures)."""

    locked_out_message = ""  # shown instead of "didn't match" (templates/registration)

    def clean(self):
        from accounts.services.login_throttle import client_address, login_wait_seconds

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
