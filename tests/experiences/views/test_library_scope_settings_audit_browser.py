"""In a real browser, with the keyboard: scope values suggested and a typo warned about in the
library (focus coming back to the row after each action), the trace filters' suggestions and
partial matches, the two-step key revoke, a member account made in the dashboard and used to
sign in, and a readable audit log. Screenshots go to test-artifacts/scopes-*.png."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from accounts.auth import api_key_lookup
from accounts.models import AuditEvent, Membership
from accounts.services.api_keys import api_key_create
from experiences.models import Experience
from experiences.services import curation
from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shot():
    """The shared `shot`, with the text caret left alone: hiding it makes Playwright put an
    empty style="" on every input, which htmx then copies onto a swapped-in input of the same
    id, and the CSP (rightly) refuses that inline style."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, name: str, *, full_page: bool = False) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page, caret="initial")
        return path

    return take


def _expected_422(errors: list[str]) -> list[str]:
    # Chromium logs every 4xx response; a scope sent back with its warning is a 422 on purpose
    return [e for e in errors if "status of 422" not in e]


def _options(page, datalist: str) -> list[str]:
    return page.eval_on_selector(
        f"datalist#{datalist}", "list => Array.from(list.options).map(o => o.value)"
    )


def test_a_scope_typo_is_warned_about_as_typed_and_on_save_and_focus_stays_on_the_row(
    page, live_server, login, admin_user, project, make_trace, make_experience,
    shot, console_errors,
):  # fmt: skip
    make_trace(project, environment=["docker", "k8s"], agent="ops-bot")
    make_trace(project, environment=["bare-metal"], agent="cert-bot")
    experience = make_experience(
        project, status="approved", advice="When a container restarts, read its logs first."
    )
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/experiences/")
    row = page.locator(f"#experience-{experience.pk}")

    # open the scope form with the keyboard: focus goes into it
    row.get_by_role("button", name=f"Set scope of experience {experience.pk}").focus()
    page.keyboard.press("Enter")
    environments = page.locator(f"#scope-{experience.pk}-environments")
    expect(environments).to_be_focused()
    assert environments.get_attribute("list") == "known-environments"

    # after "docker, " the suggestions are the other environments, after what is typed
    page.keyboard.type("docker, ")
    assert _options(page, "known-environments") == ["docker, bare-metal", "docker, k8s"]
    hint = row.locator("[data-unknown-hint]").first
    expect(hint).to_be_hidden()
    page.keyboard.type("dokcer,")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("Unknown environment: “dokcer” (did you mean “docker”?)")
    expect(hint).to_contain_text("you can still save")
    shot(page, "scopes-01-typing-a-typo")

    # saving: the server stops once, says what is unknown, keeps the text, offers to save anyway
    page.keyboard.press("Enter")
    warning = row.locator(".unknown-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Not saved yet")
    expect(warning).to_contain_text("did you mean docker?")
    expect(row.get_by_role("button", name="Save anyway")).to_be_visible()
    expect(environments).to_be_focused()  # on the field to correct
    assert Experience.objects.get(pk=experience.pk).scope_environments == []
    shot(page, "scopes-02-warned-on-save")

    # correct it and save: back to the row, focus on the Scope button that opened the form
    environments.fill("")
    page.keyboard.type("docker")
    page.keyboard.press("Enter")
    expect(row).not_to_have_class("experience-row editing")
    expect(row.locator(".tag.scope-environment")).to_have_text("environment: docker")
    scope_button = row.get_by_role("button", name=f"Set scope of experience {experience.pk}")
    expect(scope_button).to_be_focused()
    assert Experience.objects.get(pk=experience.pk).scope_environments == ["docker"]

    # promote with the keyboard: focus stays in the row, on the status buttons it now has
    row.get_by_role("button", name="Promote").focus()
    page.keyboard.press("Enter")
    expect(row.locator(".badge.st-promoted")).to_be_visible()
    demote = row.get_by_role("button", name="Demote to approved")
    expect(demote).to_be_focused()
    expect(row.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    shot(page, "scopes-03-promoted-demote-focused")

    # a vote keeps focus on the same button
    row.get_by_role("button", name="Helpful (0 up votes)").focus()
    page.keyboard.press("Space")
    up = row.get_by_role("button", name="Helpful (1 up vote)")
    expect(up).to_be_focused()

    # a new environment is saved after the warning
    scope_button.focus()
    page.keyboard.press("Enter")
    expect(environments).to_be_focused()
    environments.fill("nomad")
    page.keyboard.press("Enter")
    expect(row.get_by_role("button", name="Save anyway")).to_be_visible()
    # the hint is shown once htmx has settled the new form (a person is slower than this test)
    expect(row.locator("[data-unknown-hint]").first).to_contain_text("“nomad”")
    row.get_by_role("button", name="Save anyway").focus()
    page.keyboard.press("Enter")
    expect(row.locator(".tag.scope-environment")).to_have_text("environment: nomad")
    expect(scope_button).to_be_focused()
    assert Experience.objects.get(pk=experience.pk).scope_environments == ["nomad"]
    assert _expected_422(errors) == []


def test_focus_goes_into_the_edit_form_and_back_to_edit_on_cancel(
    page, live_server, login, admin_user, project, make_experience,
    console_errors,
):  # fmt: skip
    experience = make_experience(project)
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/experiences/")
    row = page.locator(f"#experience-{experience.pk}")
    edit = row.get_by_role("button", name=f"Edit advice and scene of experience {experience.pk}")

    edit.focus()
    page.keyboard.press("Enter")
    expect(page.locator(f"#edit-{experience.pk}-advice")).to_be_focused()
    assert page.locator(f"#edit-{experience.pk}-environment").get_attribute("list") == (
        "known-environments"
    )
    row.get_by_role("button", name="Cancel").focus()
    page.keyboard.press("Enter")
    expect(row).not_to_have_class("experience-row editing")
    expect(edit).to_be_focused()

    # an action refused by the server (another admin archived it meanwhile) keeps focus in the row
    curation.experience_set_status(experience_id=experience.pk, status="archived", user=admin_user)
    row.get_by_role("button", name="Reject").focus()
    page.keyboard.press("Enter")
    expect(row.get_by_role("alert")).to_contain_text("Not saved.")
    expect(row.get_by_role("button", name="Approve")).to_be_focused()  # the first move it has now
    assert [e for e in errors if "status of 409" not in e] == []


def test_the_bulk_scope_and_the_filters_suggest_known_values(
    page, live_server, login, admin_user, project, make_trace, make_experience,
    shot, console_errors,
):  # fmt: skip
    make_trace(project, environment=["docker", "k8s"], agent="ops-bot")
    make_experience(project)
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/experiences/")

    page.get_by_text("Set scope of selected…").click()
    bulk = page.locator("#bulk-environments")
    bulk.focus()
    page.keyboard.type("k8s, dockr")
    bulk.blur()  # leaving the field counts the last value too
    hint = page.locator("#bulk .scope-field [data-unknown-hint]").first
    expect(hint).to_contain_text("“dockr” (did you mean “docker”?)")
    shot(page, "scopes-04-bulk-warning")
    # Sent anyway: like the row editor, it is not saved until the person chooses to.
    page.locator('input[name="ids"][form="bulk"]').first.check()
    page.get_by_role("button", name="Set scope", exact=True).click()
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text("Scope not saved yet")
    expect(question).to_contain_text("did you mean docker?")
    shot(page, "scopes-04b-bulk-refused")
    assert Experience.objects.get().scope_environments == []
    question.get_by_role("button", name="Save anyway for 1 experience").click()
    expect(page.get_by_text("1 experience given the new scope.")).to_be_visible()
    assert sorted(Experience.objects.get().scope_environments) == ["dockr", "k8s"]

    agent_filter = page.locator("form.filters input[name=agent]")
    agent_filter.focus()
    assert agent_filter.get_attribute("list") == "known-agents"
    assert _options(page, "known-agents") == ["ops-bot"]
    assert [e for e in errors if "422" not in e] == []  # the refusal is a 422 page


def test_the_trace_filters_find_a_part_of_a_value(
    page, live_server, login, admin_user, project, make_trace,
    shot, console_errors,
):  # fmt: skip
    make_trace(project, task="Summarise the incident report", agent="gpt-4o-mini")
    make_trace(project, task="Rotate the TLS certificate", agent="cert-bot", environment=["k8s"])
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/traces/")

    assert _options(page, "known-agents") == ["cert-bot", "gpt-4o-mini"]
    agent = page.get_by_label("Agent")
    agent.focus()
    page.keyboard.type("GPT")
    page.keyboard.press("Enter")
    results = page.locator("#results")
    expect(results).to_contain_text("Summarise the incident report")
    expect(results).not_to_contain_text("Rotate the TLS certificate")
    expect(results).to_contain_text("1 trace matches these filters")
    shot(page, "scopes-05-trace-filter-partial", full_page=True)
    assert errors == []


def test_revoking_a_key_asks_first_with_the_keyboard(
    page, live_server, login, admin_user, project,
    shot, console_errors,
):  # fmt: skip
    new = api_key_create(project=project, scopes=["ingest"], name="nightly importer")
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/settings/")

    page.get_by_role("button", name=f"Revoke key {new.key.prefix}…").focus()
    page.keyboard.press("Enter")
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text(f"Revoke key {new.key.prefix}… (nightly importer)?")
    expect(question.get_by_role("heading")).to_be_focused()
    assert api_key_lookup(new.raw) is not None
    shot(page, "scopes-06-revoke-question")

    # cancelling keeps it
    page.keyboard.press("Tab")
    expect(question.get_by_role("button", name=f"Revoke key {new.key.prefix}…")).to_be_focused()
    page.keyboard.press("Tab")
    expect(question.get_by_role("button", name="Cancel, keep it")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    assert api_key_lookup(new.raw) is not None

    # and confirming revokes it
    page.get_by_role("button", name=f"Revoke key {new.key.prefix}…").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alertdialog").get_by_role("heading")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_text(f"Key {new.key.prefix}… revoked.")).to_be_visible()
    assert api_key_lookup(new.raw) is None
    shot(page, "scopes-07-revoked")
    assert errors == []


def test_an_admin_creates_a_member_who_signs_in_with_the_one_time_password(
    page, browser, live_server, login, admin_user, project,
    shot, console_errors,
):  # fmt: skip
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/settings/")

    form = page.locator("form.create-member")
    form.get_by_label("Username").fill("newcomer")
    form.get_by_label("Email").fill("newcomer@example.com")
    form.get_by_label("Role").select_option("reviewer")
    form.get_by_role("button", name="Create account").click()
    panel = page.locator(".new-member")
    expect(panel).to_contain_text("Account newcomer created as reviewer")
    password = page.locator("#new-member-password").inner_text().strip()
    assert len(password) >= 16
    shot(page, "scopes-08-member-created")
    assert AuditEvent.objects.filter(action="member.create").count() == 1

    other = browser.new_context()
    visitor = other.new_page()
    visitor_errors = console_errors(visitor)
    visitor.goto(live_server.url + "/accounts/login/")
    visitor.get_by_label("Username").fill("newcomer")
    visitor.get_by_label("Password").fill(password)
    visitor.get_by_label("Password").press("Enter")
    # the one-time password opens nothing but the site's own password change
    expect(visitor).to_have_url(live_server.url + "/accounts/password_change/")
    expect(visitor.get_by_role("status")).to_contain_text("You signed in with a one-time password")
    visitor.goto(live_server.url + "/queue/")
    expect(visitor).to_have_url(live_server.url + "/accounts/password_change/")
    shot(visitor, "scopes-09-password-change-due")
    visitor.get_by_label("Old password").fill(password)
    visitor.locator("#id_new_password1").fill("a-newcomers-own-passphrase")
    visitor.locator("#id_new_password2").fill("a-newcomers-own-passphrase")
    visitor.locator("#id_new_password2").press("Enter")
    expect(visitor.get_by_role("heading", name="Password changed")).to_be_visible()
    visitor.get_by_role("button", name="Go to the traces").click()
    expect(visitor).to_have_url(live_server.url + "/traces/")
    expect(visitor.get_by_role("button", name="Log out")).to_be_visible()
    expect(visitor.get_by_role("link", name="Settings")).to_have_count(0)  # a reviewer
    shot(visitor, "scopes-09b-new-member-signed-in")

    # the admin resets it (asked first): the member's session ends, a new one-time password
    page.goto(live_server.url + "/settings/")
    page.get_by_role("button", name="Reset the password of newcomer…").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Reset newcomer's password").click()
    expect(page.locator("#reset-member")).to_contain_text("New one-time password for newcomer")
    shot(page, "scopes-09c-password-reset")
    visitor.reload()
    expect(visitor).to_have_url(f"{live_server.url}/accounts/login/?next=/traces/")
    other.close()

    # a new project from the settings page becomes the current one, with the admin as its admin
    page.get_by_label("Project name").fill("billing")
    page.get_by_label("Project name").press("Enter")
    expect(page.get_by_role("heading", name="Settings of billing")).to_be_visible()
    expect(page.get_by_text("Project billing created")).to_be_visible()
    page.goto(live_server.url + "/settings/")  # back to the first project for what follows
    page.locator("#project-switch").select_option(label=project.name)
    expect(page.get_by_role("heading", name=f"Settings of {project.name}")).to_be_visible()

    # removing them asks first, names them, and cancelling keeps them
    page.goto(live_server.url + "/settings/")
    page.get_by_role("button", name="Remove newcomer…").click()
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text(f"Remove newcomer from {project.name}?")
    expect(question.get_by_role("heading")).to_be_focused()
    shot(page, "scopes-10-remove-member-question")
    question.get_by_role("button", name="Cancel, keep them").click()
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    assert Membership.objects.filter(user__username="newcomer").exists()
    page.get_by_role("button", name="Remove newcomer…").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Remove newcomer").click()
    expect(page.get_by_text("newcomer removed from the project.")).to_be_visible()
    assert not Membership.objects.filter(user__username="newcomer").exists()
    assert errors == [] and visitor_errors == []


def test_the_audit_log_reads_well_and_filters_with_pickers(
    page, live_server, login, admin_user, project, make_trace, make_experience,
    shot, console_errors,
):  # fmt: skip
    trace = make_trace(project)
    experience = make_experience(project)
    curation.experience_set_scope(
        experience_id=experience.pk, environments=["docker"], agents=["ops-bot"], users=[],
        user=admin_user,
    )  # fmt: skip
    api_key_create(project=project, scopes=["ingest"], user=admin_user)
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(live_server.url + "/audit/")

    scope_row = page.locator('tr.audit-row[data-action="experience.scope"]')
    expect(scope_row.locator("pre.audit-json").last).to_contain_text(
        '"environments": [\n    "docker"\n  ]'
    )
    expect(scope_row.get_by_role("link", name=f"experience {experience.pk}")).to_be_visible()
    shot(page, "scopes-10-audit", full_page=True)

    page.get_by_label("Action").select_option("trace.ingest")
    rows = page.locator("tr.audit-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-action", "trace.ingest")
    expect(page).to_have_url(
        f"{live_server.url}/audit/?action=trace.ingest&object_type=&actor=&since=&until="
    )
    page.get_by_label("Object type").select_option("trace")
    expect(rows).to_have_count(1)
    rows.first.get_by_role("link", name=f"trace {trace.pk}").click()
    expect(page).to_have_url(f"{live_server.url}/traces/{trace.pk}/")
    assert errors == []
