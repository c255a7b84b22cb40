from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug
from django.db import transaction

from accounts.services.api_keys import api_key_create, project_get_or_create
from core.errors import InvalidInput


def checked_project_name(name: str) -> str:
    """Project names are slugs (they appear in URLs and exports); refuse others up front."""
    try:
        validate_slug(name)
    except ValidationError:
        raise CommandError(
            f"--project must be a slug (letters, digits, '-' and '_'); got {name!r}"
        ) from None
    return name


class Command(BaseCommand):
    help = "Create an API key for a project (created if needed) and print it. It is shown once."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name (a slug)")
        parser.add_argument(
            "--scopes",
            default="ingest,recall",
            help="comma-separated subset of ingest,recall,read,admin (default: ingest,recall)",
        )
        parser.add_argument("--name", default="", help="a label to recognise the key by")

    def handle(self, *args, project: str, scopes: str, name: str, **options):
        scope_list = [s.strip() for s in scopes.split(",") if s.strip()]
        try:
            # One transaction: refused scopes must not leave a new, empty project behind.
            with transaction.atomic():
                new = api_key_create(
                    project=project_get_or_create(name=checked_project_name(project)),
                    scopes=scope_list,
                    name=name,
                )
        except InvalidInput as error:
            raise CommandError(error.detail) from None
        self.stderr.write(
            f"API key for project '{project}' with scopes {','.join(new.key.scopes)} "
            "(store it now: it is not shown again):"
        )
        self.stdout.write(new.raw)
