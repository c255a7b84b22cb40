from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0006_review_worker"),
    ]

    operations = [
        migrations.AddField(
            model_name="step",
            name="is_accepted_as_is",
            field=models.BooleanField(default=False),
        ),
    ]
