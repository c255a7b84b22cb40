from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0007_step_is_accepted_as_is"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="review_guidelines",
            field=models.TextField(blank=True, default=""),
        ),
    ]
