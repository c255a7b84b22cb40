"""Tallies for /stats/: a delta table kept by statement-level triggers, and its backfill.

Each trigger runs once per statement (not per row) over the statement's transition tables, and
appends one row per changed name with the net change; a statement that changes no counted
column (a retention job blanking raw observations) appends nothing. Names:

* `label:<source>:<label>` for each labelled step, `:accepted` appended for a human label
  accepted as is (steps; unlabelled steps are not counted);
* `status:<review status>` and `hour:<UTC hour, YYYY-MM-DDTHH>` of creation (traces).
"""

from django.db import migrations, models

STEP_NAME = """'label:' || s.label_source || ':' || s.label
    || CASE WHEN s.is_accepted_as_is AND s.label_source = 'human' THEN ':accepted' ELSE '' END"""

# The step's project comes from its trace. A step deleted with its trace is deleted first
# (Django's collector deletes children before parents), so the trace is still there.
STEP_DELTAS = """
    SELECT t.project_id, {name} AS name, {sign} AS n
    FROM {rows} s JOIN traces_trace t ON t.id = s.trace_id
    WHERE s.label <> ''"""

TRACE_DELTAS = """
    SELECT t.project_id, 'status:' || t.review_status AS name, {sign} AS n FROM {rows} t
    UNION ALL
    SELECT t.project_id, 'hour:' || to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24'),
        {sign} FROM {rows} t"""


def _function(table: str, deltas: str) -> str:
    def part(rows: str, sign: str) -> str:
        return deltas.format(rows=rows, sign=sign, name=STEP_NAME)

    return f"""
CREATE FUNCTION {table}_tally() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO traces_tally (project_id, name, n)
        SELECT project_id, name, sum(n) FROM ({part("new_rows", "1")}) d GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO traces_tally (project_id, name, n)
        SELECT project_id, name, sum(n) FROM ({part("old_rows", "-1")}) d GROUP BY 1, 2;
    ELSE
        INSERT INTO traces_tally (project_id, name, n)
        SELECT project_id, name, sum(n) FROM (
            {part("new_rows", "1")} UNION ALL {part("old_rows", "-1")}
        ) d GROUP BY 1, 2 HAVING sum(n) <> 0;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER {table}_tally_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {table}_tally();
CREATE TRIGGER {table}_tally_update AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {table}_tally();
CREATE TRIGGER {table}_tally_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {table}_tally();
"""


BACKFILL = f"""
INSERT INTO traces_tally (project_id, name, n)
SELECT project_id, name, sum(n) FROM (
    {STEP_DELTAS.format(rows="traces_step", sign="1", name=STEP_NAME)}
    UNION ALL {TRACE_DELTAS.format(rows="traces_trace", sign="1")}
) d GROUP BY 1, 2;
"""

DROP = """
DROP TRIGGER traces_step_tally_insert ON traces_step;
DROP TRIGGER traces_step_tally_update ON traces_step;
DROP TRIGGER traces_step_tally_delete ON traces_step;
DROP FUNCTION traces_step_tally();
DROP TRIGGER traces_trace_tally_insert ON traces_trace;
DROP TRIGGER traces_trace_tally_update ON traces_trace;
DROP TRIGGER traces_trace_tally_delete ON traces_trace;
DROP FUNCTION traces_trace_tally();
"""


class Migration(migrations.Migration):
    dependencies = [("traces", "0009_trace_observations_raw_dropped")]

    operations = [
        migrations.CreateModel(
            name="Tally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=120)),
                ("n", models.BigIntegerField()),
                (
                    "project",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="+",
                        to="traces.project",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["project", "name"], name="traces_tally_project_name")
                ]
            },
        ),
        migrations.RunSQL(
            _function("traces_step", STEP_DELTAS)
            + _function("traces_trace", TRACE_DELTAS)
            + BACKFILL,
            DROP,
        ),
    ]
