"""The base of every request body the API parses: `null` in an optional field means absent.

Plain JSON clients (and SDKs serialising `None`) send `"field": null` for what they do not have;
the design's contract is that this is the same as leaving the field out. One before-validator on
the base class does it for every optional field of every body, nested ones included (each
nested model runs its own), so a new field is covered without code. A required field given null
is left alone, so pydantic still refuses it by name.
"""

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator


class BodyIn(BaseModel):
    # Plain pydantic, not ninja.Schema: Schema's wrap validator (for reading ORM objects) costs
    # ~10x on nested input (every step), and it would hand this validator a DjangoGetter instead
    # of the dict; request bodies never come from ORM objects.

    # The keys (names and aliases) of the fields that have a default; set per subclass.
    _optional_keys: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        keys: set[str] = set()
        for name, field in cls.model_fields.items():
            if field.is_required():
                continue
            keys.add(name)
            if field.alias:
                keys.add(field.alias)
            if isinstance(field.validation_alias, str):
                keys.add(field.validation_alias)
        cls._optional_keys = frozenset(keys)

    @model_validator(mode="before")
    @classmethod
    def null_means_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict) or None not in data.values():
            return data
        optional = cls._optional_keys
        return {k: v for k, v in data.items() if v is not None or k not in optional}


class StrictIn(BodyIn):
    # Unknown fields are refused so a typo ("step" for "steps") is reported, not ignored.
    model_config = ConfigDict(extra="forbid")
