"""What a project knows of each tool (ToolProfile): declarations stored at ingest, behaviour
counted after each review, read back as a ToolEffect per tool (traces.review.tool_effects)."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import connection

from traces.models import ToolProfile
from traces.review.tool_effects import Behaviour, Declaration, ToolEffect, tool_effect
from traces.schemas import ToolDeclarationIn

_DECLARE = """
    INSERT INTO traces_toolprofile (project_id, name, declared_read_only, description, calls,
        fed_calls, runs, final_in_runs, final_in_successes, final_arguments, updated_at)
    SELECT %s, d.name, d.read_only, d.description, 0, 0, 0, 0, 0, '{}', now()
    FROM unnest(%s::varchar[], %s::boolean[], %s::text[]) AS d(name, read_only, description)
    ON CONFLICT (project_id, name) DO UPDATE SET
        declared_read_only = coalesce(EXCLUDED.declared_read_only,
                                      traces_toolprofile.declared_read_only),
        description = CASE WHEN EXCLUDED.description <> '' THEN EXCLUDED.description
                           ELSE traces_toolprofile.description END,
        updated_at = now()
    WHERE traces_toolprofile.declared_read_only IS DISTINCT FROM
              coalesce(EXCLUDED.declared_read_only, traces_toolprofile.declared_read_only)
       OR (EXCLUDED.description <> '' AND EXCLUDED.description <> traces_toolprofile.description)
"""

_OBSERVE = """
    INSERT INTO traces_toolprofile (project_id, name, declared_read_only, description, calls,
        fed_calls, runs, final_in_runs, final_in_successes, final_arguments, updated_at)
    SELECT %s, u.name, NULL, '', u.calls, u.fed, 1, u.final, u.final_success,
        CASE WHEN u.final = 1 THEN jsonb_build_object(u.final_argument, 1) ELSE '{}' END, now()
    FROM unnest(%s::varchar[], %s::int[], %s::int[], %s::int[], %s::int[], %s::text[])
        AS u(name, calls, fed, final, final_success, final_argument)
    ORDER BY u.name
    ON CONFLICT (project_id, name) DO UPDATE SET
        calls = traces_toolprofile.calls + EXCLUDED.calls,
        fed_calls = traces_toolprofile.fed_calls + EXCLUDED.fed_calls,
        runs = traces_toolprofile.runs + 1,
        final_in_runs = traces_toolprofile.final_in_runs + EXCLUDED.final_in_runs,
        final_in_successes = traces_toolprofile.final_in_successes + EXCLUDED.final_in_successes,
        final_arguments = CASE
            WHEN EXCLUDED.final_in_runs = 0 THEN traces_toolprofile.final_arguments
            WHEN traces_toolprofile.final_arguments ? (SELECT k FROM jsonb_object_keys(
                EXCLUDED.final_arguments) k LIMIT 1)
              OR (SELECT count(*) FROM jsonb_object_keys(traces_toolprofile.final_arguments)) < 20
            THEN traces_toolprofile.final_arguments || (SELECT jsonb_object_agg(key,
                coalesce((traces_toolprofile.final_arguments ->> key)::int, 0) + 1)
                FROM jsonb_object_keys(EXCLUDED.final_arguments) key)
            ELSE traces_toolprofile.final_arguments END,
        updated_at = now()
"""


@dataclass(frozen=True)
class ToolUsage:
    """One reviewed run's use of one tool."""

    calls: int
    fed: int  # calls whose result fed a later step
    final: bool  # its call ended the run
    final_success: bool  # ... and the run succeeded
    final_argument: str = ""  # the ending call's arguments, summarised


def tool_profiles_declare(*, project_id: int, declarations: Iterable[ToolDeclarationIn]) -> None:
    """Store what agents declared (the latest non-empty declaration of each tool wins)."""
    latest = {d.name: d for d in declarations}
    if not latest:
        return
    names = sorted(latest)  # one lock order for every writer
    with connection.cursor() as cursor:
        cursor.execute(
            _DECLARE,
            [
                project_id,
                names,
                [latest[n].read_only for n in names],
                [latest[n].description for n in names],
            ],
        )


def tool_profiles_observe(*, project_id: int, usage: Mapping[str, ToolUsage]) -> None:
    """Add one reviewed run's behaviour to its tools' profiles (one statement, its own)."""
    if not usage:
        return
    names = sorted(usage)
    with connection.cursor() as cursor:
        cursor.execute(
            _OBSERVE,
            [
                project_id,
                names,
                [usage[n].calls for n in names],
                [usage[n].fed for n in names],
                [int(usage[n].final) for n in names],
                [int(usage[n].final_success) for n in names],
                [usage[n].final_argument for n in names],
            ],
        )


def project_tool_effects(*, project_id: int) -> dict[str, ToolEffect]:
    """Every tool the project knows (declared, or seen in a reviewed run), by what it knows of
    it: declaration, behaviour, then name. One query."""
    profiles = list(ToolProfile.objects.filter(project_id=project_id))
    project_runs = max((p.runs for p in profiles), default=0)
    return {
        p.name: tool_effect(
            p.name,
            Declaration(p.name, p.description, p.declared_read_only),
            Behaviour(
                calls=p.calls,
                fed_calls=p.fed_calls,
                runs=p.runs,
                final_in_runs=p.final_in_runs,
                final_in_successes=p.final_in_successes,
                final_arguments=p.final_arguments or {},
                project_runs=project_runs,
            ),
        )
        for p in profiles
    }


def effects_of(tools: Iterable[str], known: Mapping[str, ToolEffect]) -> dict[str, ToolEffect]:
    """Each of `tools` by what the project knows (`known`), a tool it does not know by name."""
    return {name: known.get(name) or tool_effect(name) for name in sorted(set(tools))}


def tool_effects_for(*, project_id: int, tools: Iterable[str]) -> dict[str, ToolEffect]:
    """Each tool's effect by what the project knows of it (declared, behaviour, then name)."""
    return effects_of(tools, project_tool_effects(project_id=project_id))
