"""The review queue's priority kept on each trajectory by a trigger, and two partial indexes.

`Trace.queue_priority` is what traces/selectors/queue.py used to compute for every trajectory of
the project on every queue page (three EXISTS over its steps, then a sort): NULL when no step
has a machine label, else 0 (a person changed a label), 1 (a machine label under
HINDSIGHT_LOW_CONFIDENCE, which every connection passes as `hindsight.low_confidence`) or 2. A
statement-level trigger on steps recomputes it for the trajectories the statement touched and
writes it only when it changed. The queue then reads a page straight from an index.
`manage.py queue_reprioritise` recomputes every trajectory after the threshold changes.
"""

from django.db import migrations, models

PRIORITY_OF = """
CREATE FUNCTION traces_queue_priority(trace bigint) RETURNS smallint
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN NOT EXISTS (SELECT 1 FROM traces_step s WHERE s.trace_id = trace
                         AND s.label_source IN ('llm', 'heuristic') AND s.label <> '') THEN NULL
        WHEN EXISTS (SELECT 1 FROM traces_step s WHERE s.trace_id = trace
                     AND s.label_source = 'human' AND NOT s.is_accepted_as_is) THEN 0
        WHEN EXISTS (SELECT 1 FROM traces_step s WHERE s.trace_id = trace
                     AND s.label_source IN ('llm', 'heuristic') AND s.label <> ''
                     AND s.label_confidence < coalesce(
                         nullif(current_setting('hindsight.low_confidence', true), '')::real,
                         0.6)) THEN 1
        ELSE 2
    END::smallint
$$;
"""


def _trigger(op: str, tables: str, ids: str) -> str:
    return f"""
CREATE FUNCTION traces_step_queue_{op.lower()}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE traces_trace t SET queue_priority = p.priority
    FROM (SELECT id, traces_queue_priority(id) AS priority FROM ({ids}) touched(id)) p
    WHERE t.id = p.id AND t.queue_priority IS DISTINCT FROM p.priority;
    RETURN NULL;
END $$;
CREATE TRIGGER traces_step_queue_{op.lower()} AFTER {op} ON traces_step
    REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION traces_step_queue_{op.lower()}();
"""


# Only the steps that can move a trajectory: an ingest of unlabelled steps, or a retention job
# blanking raw observations, touches none (ingest would otherwise pay three probes per trace).
TRIGGERS = (
    _trigger(
        "INSERT",
        "NEW TABLE AS new_rows",
        "SELECT DISTINCT trace_id FROM new_rows WHERE label <> '' OR label_source = 'human'",
    )
    + _trigger(
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "SELECT n.trace_id FROM new_rows n JOIN old_rows o ON o.id = n.id"
        " WHERE (n.label, n.label_source, n.label_confidence, n.is_accepted_as_is)"
        " IS DISTINCT FROM (o.label, o.label_source, o.label_confidence, o.is_accepted_as_is)"
        " UNION SELECT o.trace_id FROM new_rows n JOIN old_rows o ON o.id = n.id"
        " WHERE n.trace_id <> o.trace_id",
    )
    + _trigger("DELETE", "OLD TABLE AS old_rows", "SELECT DISTINCT trace_id FROM old_rows")
)

BACKFILL = """
UPDATE traces_trace t SET queue_priority = traces_queue_priority(t.id)
WHERE traces_queue_priority(t.id) IS NOT NULL;
"""

DROP = """
DROP TRIGGER traces_step_queue_insert ON traces_step;
DROP TRIGGER traces_step_queue_update ON traces_step;
DROP TRIGGER traces_step_queue_delete ON traces_step;
DROP FUNCTION traces_step_queue_insert();
DROP FUNCTION traces_step_queue_update();
DROP FUNCTION traces_step_queue_delete();
DROP FUNCTION traces_queue_priority(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("traces", "0010_tallies")]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="queue_priority",
            field=models.SmallIntegerField(editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(
                condition=models.Q(
                    ("completed_at__isnull", False), ("queue_priority__isnull", False)
                ),
                fields=["project", "queue_priority", "id"],
                name="traces_trace_queue",
            ),
        ),
        migrations.AddIndex(
            model_name="step",
            index=models.Index(
                condition=models.Q(("is_accepted_as_is", False), ("label_source", "human")),
                fields=["-id"],
                name="traces_step_judged",
            ),
        ),
        migrations.RunSQL(PRIORITY_OF + TRIGGERS + BACKFILL, DROP),
    ]
