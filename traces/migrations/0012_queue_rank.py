"""The review queue's priority ranks within its reason, and failed runs come first.

0011 kept a reason alone (0 disagreement, 1 low confidence, 2 unchecked), so every trajectory of
a reason shared one rank and fell into id order: a hundred easy successes before any failure.
And it compared a double-precision confidence with the threshold cast to `real` (0.6 became
0.6000000238), so the heuristic reviewer's fallback confidence, exactly 0.6, counted as low while
the page (Python floats) said "0 of 7 labels under 60 %".

Now the priority is `reason * 1000 + the lowest confidence of the unchecked machine labels in
thousandths` (999 when none has a confidence), reasons in the order a person's judgement is
worth most (traces/selectors/queue.py, QueueReason): 0 a failed or partial run (its lesson and
its warnings rest on the steps the machine blames), 1 a person changed a label, 2 a machine label
under the threshold, 3 unchecked. Within a reason the least confident come first. One pass over
the trajectory's steps computes it (was three EXISTS probes), and a trigger on the trajectory's
outcome moves it when a streamed run completes with another outcome.
"""

from django.db import migrations

RANK = """
CREATE FUNCTION traces_queue_rank(trace bigint, outcome text) RETURNS smallint
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN s.machine = 0 THEN NULL
        ELSE (CASE
                  WHEN outcome IN ('failure', 'partial') THEN 0
                  WHEN s.changed > 0 THEN 1
                  WHEN s.lowest < coalesce(
                      nullif(current_setting('hindsight.low_confidence', true), '')::float8,
                      0.6) THEN 2
                  ELSE 3
              END) * 1000 + coalesce(least(floor(s.lowest * 1000), 999), 999)
    END::smallint
    FROM (
        SELECT count(*) FILTER (WHERE label_source IN ('llm', 'heuristic') AND label <> '')
                   AS machine,
               count(*) FILTER (WHERE label_source = 'human' AND NOT is_accepted_as_is)
                   AS changed,
               min(label_confidence) FILTER (
                   WHERE label_source IN ('llm', 'heuristic') AND label <> '') AS lowest
        FROM traces_step WHERE trace_id = trace
    ) s
$$;

CREATE OR REPLACE FUNCTION traces_queue_priority(trace bigint) RETURNS smallint
LANGUAGE sql STABLE AS $$
    SELECT traces_queue_rank(trace, (SELECT t.outcome FROM traces_trace t WHERE t.id = trace))
$$;

CREATE FUNCTION traces_trace_queue_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.queue_priority := traces_queue_rank(NEW.id, NEW.outcome);
    RETURN NEW;
END $$;
CREATE TRIGGER traces_trace_queue_outcome BEFORE UPDATE OF outcome ON traces_trace
    FOR EACH ROW WHEN (OLD.outcome IS DISTINCT FROM NEW.outcome)
    EXECUTE FUNCTION traces_trace_queue_outcome();
"""

BACKFILL = """
UPDATE traces_trace t SET queue_priority = traces_queue_priority(t.id)
WHERE t.queue_priority IS NOT NULL;
"""

# Back to 0011's function (its body as that migration wrote it).
UNRANK = """
DROP TRIGGER traces_trace_queue_outcome ON traces_trace;
DROP FUNCTION traces_trace_queue_outcome();
CREATE OR REPLACE FUNCTION traces_queue_priority(trace bigint) RETURNS smallint
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
DROP FUNCTION traces_queue_rank(bigint, text);
"""


class Migration(migrations.Migration):
    dependencies = [("traces", "0011_queue_priority")]

    operations = [migrations.RunSQL(RANK + BACKFILL, UNRANK + BACKFILL)]
