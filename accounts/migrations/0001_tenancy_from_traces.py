"""Projects, members, API keys, account settings and the audit log move from traces to
accounts with their tables: traces made them (traces_project, …), this takes them over."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MOVED = ["project", "membership", "passwordchangedue", "accountsettings", "apikey", "auditevent"]


def _content_types_to_accounts(apps, schema_editor):
    """The admin's history and any permission keep pointing at the same models."""
    content_types = apps.get_model("contenttypes", "ContentType")
    taken = set(
        content_types.objects.filter(app_label="accounts", model__in=MOVED).values_list(
            "model", flat=True
        )
    )
    content_types.objects.filter(app_label="traces", model__in=set(MOVED) - taken).update(
        app_label="accounts"
    )


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('traces', '0018_claim_finish_undo'),
        ('auth', '0012_alter_user_first_name_max_length'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables stay where they are (their names kept): only Django's idea of them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AccountSettings',
                    fields=[
                        ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='account_settings', serialize=False, to=settings.AUTH_USER_MODEL)),
                        ('time_zone', models.CharField(blank=True, max_length=64)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'db_table': 'traces_accountsettings',
                    },
                ),
                migrations.CreateModel(
                    name='Project',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.SlugField(max_length=64, unique=True)),
                        ('review_guidelines', models.TextField(blank=True, default='')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'traces_project',
                    },
                ),
                migrations.CreateModel(
                    name='ApiKey',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(blank=True, max_length=100)),
                        ('prefix', models.CharField(max_length=16)),
                        ('key_hash', models.CharField(max_length=64, unique=True)),
                        ('scopes', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(choices=[('ingest', 'Ingest'), ('recall', 'Recall'), ('read', 'Read'), ('admin', 'Admin')], max_length=16))),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('last_used_at', models.DateTimeField(blank=True, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='accounts.project')),
                    ],
                    options={
                        'db_table': 'traces_apikey',
                    },
                ),
                migrations.CreateModel(
                    name='PasswordChangeDue',
                    fields=[
                        ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='password_change_due', serialize=False, to=settings.AUTH_USER_MODEL)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('set_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'traces_passwordchangedue',
                    },
                ),
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('reviewer', 'Reviewer'), ('admin', 'Admin')], default='reviewer', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='accounts.project')),
                    ],
                    options={
                        'db_table': 'traces_membership',
                        'constraints': [models.UniqueConstraint(fields=('project', 'user'), name='traces_membership_unique_user'), models.CheckConstraint(condition=models.Q(('role__in', ['reviewer', 'admin'])), name='traces_membership_role_valid')],
                    },
                ),
                migrations.CreateModel(
                    name='AuditEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('action', models.CharField(max_length=64)),
                        ('object_type', models.CharField(max_length=64)),
                        ('object_id', models.CharField(max_length=64)),
                        ('before', models.JSONField(blank=True, null=True)),
                        ('after', models.JSONField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('actor_api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='accounts.apikey')),
                        ('actor_user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='audit_events', to='accounts.project')),
                    ],
                    options={
                        'db_table': 'traces_auditevent',
                        'indexes': [models.Index(fields=['project', '-id'], name='traces_audit_project_id'), models.Index(fields=['object_type', 'object_id', '-id'], name='traces_audit_object')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='apikey',
                    constraint=models.CheckConstraint(condition=models.Q(('scopes__contained_by', ['ingest', 'recall', 'read', 'admin'])), name='traces_apikey_scopes_valid'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_to_accounts, migrations.RunPython.noop),
    ]
