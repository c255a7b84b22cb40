"""The base of every request body and query the API parses: what it accepts, in one place.

* `null` in an optional field means absent. Plain JSON clients (and SDKs serialising `None`)
  send `"field": null` for what they do not have; the design's contract is that this is the
  same as leaving the field out. A required field given null is left alone, so pydantic still
  refuses it by name.
* Only what PostgreSQL and the rest of the pipeline can hold gets past validation: text (values
  and keys, however deep) without NUL (PostgreSQL text and jsonb refuse it) and without lone
  surrogates (not encodable as UTF-8); numbers finite (`NaN` / `Infinity`, which Python's JSON
  reader accepts, are not JSON and jsonb refuses them); JSON values nested at most
  `MAX_DEPTH` deep (deeper ones break recursive code downstream); timestamps whose offset
  PostgreSQL takes and whose UTC instant a datetime holds. Anything else is refused with a 422
  located at the offending value (`["body", "payload", "steps", 3, "arguments", "cmd"]`), never
  altered in silence: a stored trajectory is what the agent sent, or nothing.

Each model checks its own fields; a field holding nested models is left to them (their own
validator runs), so every value is looked at once and the location is the model's path plus
the value's. A new field is covered without code.
"""

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

MAX_DEPTH = 64
# What the integer columns hold (PostgreSQL integer and bigint); bigger values fail the insert.
INT_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1
# The error type of a documented size limit (steps per trajectory): answered 413, not 422.
TOO_LARGE = "too_large"
# PostgreSQL's timestamptz input takes offsets up to ±15:59 (and refuses the statement beyond).
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
Loc = tuple[int | str, ...]


def is_storable_text(text: str) -> bool:
    # Far faster than a regex over the text: both tests run in C without a per-character loop.
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only lone surrogates fail
        return False
    return True


def _shown(text: str) -> str:
    """A key for an error location: NUL and lone surrogates written as escapes, not echoed."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text_problem(text: str) -> PydanticCustomError | None:
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return PydanticCustomError("text_nul", "text may not contain NUL (\\u0000) characters")
    return PydanticCustomError(
        "text_surrogate", "text may not contain lone surrogates (\\ud800-\\udfff): not UTF-8"
    )


def _all_storable(value: dict[str, Any] | list[Any]) -> bool:
    """The quick yes/no over a parsed JSON value (no locations kept); value_problems says where.

    Iterative, so a value nested deeper than Python's recursion limit is an answer, not a crash.
    Exact type tests first: this runs over every value of every request.
    """
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        container, depth = pending.pop()
        if depth >= MAX_DEPTH:
            return False
        if isinstance(container, dict):
            for key in container:
                if type(key) is str and not is_storable_text(key):
                    return False
            items = container.values()
        else:
            items = container
        for item in items:
            kind = type(item)
            if kind is str:
                if not is_storable_text(item):
                    return False
            elif kind is dict or kind is list:
                pending.append((item, depth + 1))
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind is int or kind is bool or item is None:
                continue
            elif isinstance(item, str):
                if not is_storable_text(item):
                    return False
            elif isinstance(item, float):
                if not math.isfinite(item):
                    return False
            elif isinstance(item, dict | list):
                pending.append((item, depth + 1))
    return True


def value_problems(value: Any, loc: Loc) -> list[InitErrorDetails]:
    """What in a parsed JSON value cannot be stored, each located; [] when all is well."""
    problems: list[InitErrorDetails] = []
    pending: list[tuple[Any, Loc, int]] = [(value, loc, 0)]
    while pending:
        item, where, depth = pending.pop()
        if isinstance(item, str):
            error = _text_problem(item)
            if error is not None:
                problems.append(InitErrorDetails(type=error, loc=where, input=_shown(item[:200])))
        elif isinstance(item, float):
            if not math.isfinite(item):
                error = PydanticCustomError("finite_number", "numbers must be finite (not NaN)")
                problems.append(InitErrorDetails(type=error, loc=where, input=str(item)))
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                error = PydanticCustomError(
                    "too_deep", "nested more than {limit} levels deep", {"limit": MAX_DEPTH}
                )
                problems.append(InitErrorDetails(type=error, loc=where, input="..."))
                continue
            if isinstance(item, list):
                pending.extend((v, (*where, i), depth + 1) for i, v in enumerate(item))
                continue
            for key, v in item.items():
                if isinstance(key, str) and not is_storable_text(key):
                    error = _text_problem(key)
                    assert error is not None
                    problems.append(
                        InitErrorDetails(type=error, loc=(*where, _shown(key)), input=_shown(key))
                    )
                    continue
                pending.append((v, (*where, key), depth + 1))
    problems.reverse()  # the stack walks backwards; report in document order
    return problems


def _holds(annotation: Any, kind: type) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, kind):
        return True
    return any(_holds(arg, kind) for arg in get_args(annotation))


def _timestamp_problem(value: datetime) -> PydanticCustomError | None:
    offset = value.utcoffset()
    if offset is None:
        return None
    if abs(offset) > MAX_UTC_OFFSET:
        return PydanticCustomError(
            "timezone_offset", "the time-zone offset must be within -15:59 and +15:59"
        )
    try:
        value.astimezone(UTC)
    except OverflowError:
        return PydanticCustomError("datetime_range", "the time is out of range once in UTC")
    return None


class BodyIn(BaseModel):
    # Plain pydantic, not ninja.Schema: Schema's wrap validator (for reading ORM objects) costs
    # ~10x on nested input (every step), and it would hand this validator a DjangoGetter instead
    # of the dict; request bodies never come from ORM objects.

    # Keys (names and aliases) of the fields that have a default, and of those holding nested
    # models (which check their own values); set per subclass.
    _optional_keys: ClassVar[frozenset[str]] = frozenset()
    _nested_keys: ClassVar[frozenset[str]] = frozenset()
    _datetime_fields: ClassVar[tuple[str, ...]] = ()
    # Fields whose raw value is validated elsewhere, item by item (a batch's traces).
    _unchecked_keys: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        optional: set[str] = set()
        nested: set[str] = set()
        datetimes: list[str] = []
        for name, field in cls.model_fields.items():
            keys = {name}
            if field.alias:
                keys.add(field.alias)
            if isinstance(field.validation_alias, str):
                keys.add(field.validation_alias)
            if not field.is_required():
                optional |= keys
            if _holds(field.annotation, BaseModel):
                nested |= keys
            if _holds(field.annotation, datetime):
                datetimes.append(name)
        cls._optional_keys = frozenset(optional)
        cls._nested_keys = frozenset(nested)
        cls._datetime_fields = tuple(datetimes)

    @model_validator(mode="before")
    @classmethod
    def storable_and_null_means_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        skip = cls._nested_keys | cls._unchecked_keys
        own = {k: v for k, v in data.items() if k not in skip} if skip & data.keys() else data
        if not _all_storable(own):
            problems = value_problems(own, ())
            if problems:
                raise ValidationError.from_exception_data(cls.__name__, problems)
        if None not in data.values():
            return data
        optional = cls._optional_keys
        return {k: v for k, v in data.items() if v is not None or k not in optional}

    @model_validator(mode="after")
    def timestamps_are_storable(self) -> Any:
        problems = [
            InitErrorDetails(type=error, loc=(name,), input=value.isoformat())
            for name in self._datetime_fields
            if isinstance(value := getattr(self, name), datetime)
            and (error := _timestamp_problem(value)) is not None
        ]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self


class StrictIn(BodyIn):
    # Unknown fields are refused so a typo ("step" for "steps") is reported, not ignored.
    model_config = ConfigDict(extra="forbid")


class QueryIn(BodyIn):
    """The base of query-string parameter sets: the same checks as bodies (a `%00` in a filter
    is a 422 naming the parameter, not a database error). Unknown parameters are ignored, and
    an empty one is absent, as a form leaves it (`?outcome=` lists every outcome)."""

    @model_validator(mode="before")
    @classmethod
    def _empty_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value != ""}
        return data


class PageIn(QueryIn):
    """A list's page: the previous page's `next_cursor`, and 1 to 200 items (a value outside is a
    422 naming `limit`)."""

    cursor: str | None = None
    limit: int = Field(50, ge=1, le=200)
