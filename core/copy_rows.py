"""Writing many rows with PostgreSQL's COPY instead of INSERT: the ingest path.

`bulk_create` compiles one INSERT of every value and psycopg parses it again (~0.2 ms of web CPU
per row of a wide table); COPY streams the values. `instances_copy` writes model instances the
way `bulk_create` does (auto_now fields set, values prepared by their fields, generated columns
left to the database), ids taken from the table's own sequence first when they are asked for.
Triggers fire for COPY as for INSERT. Rows go in the current transaction of `connection`.
"""

from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.db import connection
from django.db.models import Field, Model


def columns_of(model: type[Model], *, with_id: bool = False) -> list[Field]:
    """The fields COPY writes: every concrete column but generated ones (and the id unless
    `with_id`)."""
    return [
        f for f in model._meta.concrete_fields if not f.generated and (with_id or not f.primary_key)
    ]


def rows_copy(model: type[Model], fields: Sequence[Field], rows: Iterable[Sequence[Any]]) -> None:
    """COPY `rows` (values in the order of `fields`, ready for psycopg) into `model`'s table."""
    # a concrete field always has a column; the stubs type Field.column `str | None` for all
    columns = ", ".join(connection.ops.quote_name(cast(str, f.column)) for f in fields)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {model._meta.db_table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def ids_take(model: type[Model], count: int) -> list[int]:
    """`count` new ids from the sequence of `model`'s primary key, in order."""
    table, column = model._meta.db_table, cast(str, model._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, column, count],
        )
        return [row[0] for row in cursor.fetchall()]


def instances_copy(instances: Sequence[Model], *, with_ids: bool = False) -> None:
    """Insert unsaved instances of one model, like `bulk_create`; with `with_ids` each gets its
    id first (callers that go on to write rows pointing at them)."""
    if not instances:
        return
    model = type(instances[0])
    if with_ids:
        for instance, new_id in zip(instances, ids_take(model, len(instances)), strict=True):
            instance.pk = new_id
    fields = columns_of(model, with_id=with_ids)
    rows = (
        [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
        for instance in instances
    )
    rows_copy(model, fields, rows)
    for instance in instances:
        instance._state.adding = False
        instance._state.db = connection.alias
