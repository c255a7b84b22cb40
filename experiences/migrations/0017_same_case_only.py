"""Experience.same_case_only: an episode served only as its own case's replay. Existing
episodes are marked from what they stored: a success whose only change was a hand-off, a
failure whose blame is the answer the checker refused or the reply the run ended on (the other
kinds, a final commit nearly every run makes and a failed read-only call, need the run's tool
effects: a relabel re-derives them)."""

from django.db import migrations, models

MARK = """
UPDATE experiences_experience SET same_case_only = true
WHERE kind = 'episode' AND (
    (polarity = 'success'
     AND calls @> '[{"effect": "hand_off", "errored": false}]'::jsonb
     AND NOT calls @> '[{"effect": "write", "errored": false}]'::jsonb)
    OR (polarity = 'failure'
        AND blame ->> 'evidence' IN ('the checker refused it', 'the run ended on it'))
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("experiences", "0016_kinds_and_families"),
    ]

    operations = [
        migrations.AddField(
            model_name="experience",
            name="same_case_only",
            field=models.BooleanField(default=False),
        ),
        migrations.RunSQL(MARK, reverse_sql=migrations.RunSQL.noop),
    ]
