#!/usr/bin/env python
import os
import sys

# These talk to a running site over HTTP only: starting embedded services for them would cost
# seconds and use nothing (bootstrap.prepare() honours HINDSIGHT_EMBEDDED=off).
HTTP_ONLY_COMMANDS = {"mcp_proxy", "mcp_server"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")
    if len(sys.argv) > 1 and sys.argv[1] in HTTP_ONLY_COMMANDS:
        os.environ.setdefault("HINDSIGHT_EMBEDDED", "off")
    from django.core.management import execute_from_command_line

    from hindsight_site import bootstrap

    bootstrap.prepare()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
