"""The `read` scope: reading trajectories (raw observations included), experiences and the KB
export is its job (or admin's), no longer ingest's or recall's.

Keys that could read before keep what they had: every key holding `ingest` (it read traces and
experiences) or `recall` (it read experiences and exported the KB), and neither `read` nor
`admin`, is given `read`. Keys created from now on get it only when asked for.
"""

import django.contrib.postgres.fields
from django.db import migrations, models

GRANT_READ = """
UPDATE traces_apikey SET scopes = array_append(scopes, 'read')
WHERE scopes && ARRAY['ingest', 'recall']::varchar[]
  AND NOT scopes && ARRAY['read', 'admin']::varchar[]
"""
TAKE_READ_BACK = "UPDATE traces_apikey SET scopes = array_remove(scopes, 'read')"


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0015_tool_profiles"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="apikey",
            name="traces_apikey_scopes_valid",
        ),
        migrations.AlterField(
            model_name="apikey",
            name="scopes",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(
                    choices=[
                        ("ingest", "Ingest"),
                        ("recall", "Recall"),
                        ("read", "Read"),
                        ("admin", "Admin"),
                    ],
                    max_length=16,
                )
            ),
        ),
        migrations.AddConstraint(
            model_name="apikey",
            constraint=models.CheckConstraint(
                condition=models.Q(("scopes__contained_by", ["ingest", "recall", "read", "admin"])),
                name="traces_apikey_scopes_valid",
            ),
        ),
        migrations.RunSQL(GRANT_READ, TAKE_READ_BACK),
    ]
