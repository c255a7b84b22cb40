"""last_recalled_at moves to its own narrow table (ExperienceRecall): recall no longer rewrites the
experience row that carries the vector. The times already recorded are copied over."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('experiences', '0009_source_labels'),
    ]

    operations = [
        migrations.CreateModel(
            name='ExperienceRecall',
            fields=[
                ('experience', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='recall_stats', serialize=False, to='experiences.experience')),
                ('last_recalled_at', models.DateTimeField()),
            ],
        ),
        migrations.RunSQL(
            "INSERT INTO experiences_experiencerecall (experience_id, last_recalled_at) "
            "SELECT id, last_recalled_at FROM experiences_experience "
            "WHERE last_recalled_at IS NOT NULL",
            reverse_sql="UPDATE experiences_experience e SET last_recalled_at = r.last_recalled_at "
            "FROM experiences_experiencerecall r WHERE r.experience_id = e.id",
        ),
        migrations.RemoveField(
            model_name='experience',
            name='last_recalled_at',
        ),
    ]
