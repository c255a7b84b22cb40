"""What every dashboard list's filters share: a form that parses them from the query string and
says which it could not apply, the suggestion fields, a blank choice, a day's start."""

from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.utils import timezone

# At most this many suggested values of each kind (agents, tools, audit actions, …) a page offers.
MAX_VALUES = 200


def blank_choices(choices: list[tuple[str, str]], label: str = "any") -> list[tuple[str, str]]:
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


def day_start(day: date | None, *, days_after: int = 0) -> datetime | None:
    """The start of `day` (plus `days_after` days) in the current time zone; None for None."""
    if day is None:
        return None
    start = datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
    return start + timedelta(days=days_after)
