"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright):
log in with an admin token, see a schedule added through the CLI appear, pause and resume
it, make it run now and watch its run appear (the page brings itself up to date), open
the run's page, retry the dead letter the run's
notification became, search a user's memory, compare a note's versions and restore one,
see the week ahead, log out.

Then every page, logged in and out, is audited by axe-core (0 serious or critical
violations) and kept as a full-page screenshot, at a desktop width and a 390 px phone's.

Usage: ui_test.py BASE_URL ADMIN_TOKEN NIGHTSHIFT_BINARY CONFIG_PATH AXE_JS SCREENSHOT_DIR
"""

import json
import subprocess
import sys
import time

from playwright.sync_api import expect, sync_playwright

base, token, binary, config, axe_js, screenshots = sys.argv[1:7]


def cli(*args):
    out = subprocess.run([binary, "--config", config, "--json", *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout) if out.stdout.strip() else None


def audit(browser, state, pages):
    """Each of `pages` (name, path) with axe-core, in a context of its own that lets the
    audit's script in (the dashboard's policy refuses any other), logged in as `state`
    says; a full-page screenshot of each, desktop and phone. Fails listing every serious
    or critical violation."""
    found = []
    for width, height, suffix in [(1280, 900, ""), (390, 844, "-phone")]:
        context = browser.new_context(bypass_csp=True, storage_state=state,
                                      viewport={"width": width, "height": height})
        page = context.new_page()
        for name, path in pages:
            page.goto(f"{base}{path}")
            page.screenshot(path=f"{screenshots}/{name}{suffix}.png", full_page=True)
            if suffix:
                continue
            page.add_script_tag(path=axe_js)
            result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
            for v in result["violations"]:
                if v["impact"] in ("serious", "critical"):
                    where = [n["target"] for n in v["nodes"]][:3]
                    found.append(f"{name}: {v['id']} ({v['impact']}): {v['help']} at {where}")
        context.close()
    if found:
        raise SystemExit("ui-test: FAILED: accessibility violations:\n  " + "\n  ".join(found))


def until(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise SystemExit(f"ui-test: FAILED: {what} did not happen within {timeout}s")


with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"],
    )
    page = browser.new_page()
    # A script the page's policy refused would be reported here.
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)

    # Logging in.
    page.goto(f"{base}/ui")
    expect(page).to_have_url(f"{base}/ui/login")
    page.fill("#token", "nst_not_a_token")
    page.click("button[type=submit]")
    expect(page.locator("p.error")).to_contain_text("Unknown")
    page.fill("#token", token)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/ui")
    expect(page.locator("h1")).to_have_text("Overview")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["nightshift_ui"]["httpOnly"], "the session cookie is HttpOnly"
    assert cookies["nightshift_ui"]["sameSite"] == "Strict"

    # A schedule added through the CLI appears.
    added = cli("schedule", "add", "--user", "alice", "--goal", "Browser <b>test</b> goal",
                "--every", "1h", "--max-attempts", "1")
    sid = added["schedule_id"]
    page.reload()
    row = page.locator(f"tr[data-schedule='{sid}']")
    expect(row.locator("td.goal")).to_have_text("Browser <b>test</b> goal")

    # Pause, resume.
    row.locator("button", has_text="Pause").click()
    expect(page).to_have_url(f"{base}/ui/schedules/{sid}")
    expect(page.locator("dd.status")).to_contain_text("paused")
    assert cli("schedule", "show", sid)["status"] == "paused"
    page.locator("button", has_text="Resume").click()
    expect(page.locator("dd.status")).to_contain_text("active")

    # Run now: the worker runs it (no runtime is configured, so it fails) and the run
    # shows up on the schedule's page.
    with page.expect_navigation():
        page.locator("button", has_text="Run now").click()
    expect(page).to_have_url(f"{base}/ui/schedules/{sid}")

    # The page brings itself up to date (its script, every 10 s): no reload here.
    expect(page.locator("#runs tbody tr td.status").first).to_have_text("failed", timeout=40_000)
    expect(page.locator("#runs tbody tr").first).to_contain_text("no agent runtime is configured")

    # The run's page tells its story: it started, and how it ended.
    page.locator("#runs tbody tr").first.locator("td a").first.click()
    expect(page.locator("h1")).to_contain_text("Run ")
    expect(page.locator("#run-status")).to_have_text("failed")
    expect(page.locator("#progress tbody tr").first).to_contain_text("running (attempt 1)")
    page.go_back()

    # Rerun it: a new run of the same occurrence appears, naming the run it repeats.
    first_run = page.locator("#runs tbody tr").first.get_attribute("data-run")
    page.locator(f"tr[data-run='{first_run}'] button", has_text="Rerun").click()
    expect(page).to_have_url(f"{base}/ui/schedules/{sid}")

    def rerun_shown():
        page.reload()
        return page.locator("#runs tbody tr", has_text=f"rerun of {first_run}").count() > 0

    until("the rerun appearing", rerun_shown)

    # The run's notification could not be delivered (max_attempts = 1): a dead letter.
    def dead_letter():
        page.goto(f"{base}/ui/outbox?status=dead")
        return page.locator("#messages tbody tr").count() > 0

    until("the dead letter", dead_letter)
    message_id = page.locator("#messages tbody tr").first.get_attribute("data-message")
    before = next(m for m in cli("outbox", "list", "--limit", "100") if m["message_id"] == message_id)
    page.locator(f"tr[data-message='{message_id}'] button", has_text="Retry").click()
    expect(page).to_have_url(f"{base}/ui/outbox")
    after = next(m for m in cli("outbox", "list", "--limit", "100") if m["message_id"] == message_id)
    assert after["expires_at"] > before["expires_at"], "the retry gave it a new lifetime"

    # Search a user's memory.
    cli("memory", "save", "--user", "alice", "Alice likes jasmine tea in the evening")
    page.click("nav >> text=Search")
    expect(page).to_have_url(f"{base}/ui/search")
    page.fill("#user", "alice")
    page.fill("#q", "jasmine tea")
    page.click("#search button[type=submit]")
    expect(page.locator("#hits")).to_contain_text("Alice likes jasmine tea")

    # The memory browser: alice's notes, a note's versions compared, one restored.
    saved = cli("memory", "save", "--user", "alice", "Alice walks the dog at seven")
    note_id = saved["note_id"]
    cli("memory", "update", "--user", "alice", note_id, "Alice walks the dog at eight")
    page.click("nav >> text=Memory")
    expect(page).to_have_url(f"{base}/ui/memory")
    page.fill("#user", "alice")
    page.click("#memory-user button[type=submit]")
    expect(page).to_have_url(f"{base}/ui/memory/alice")
    page.click(f"a[href='/ui/memory/alice/notes/{note_id}']")
    expect(page.locator("#diff del")).to_have_text("seven")
    expect(page.locator("#diff ins")).to_have_text("eight")
    page.locator("#versions tr", has_text="created").locator("button", has_text="Restore").click()
    expect(page).to_have_url(f"{base}/ui/memory/alice/notes/{note_id}")
    expect(page.locator("#versions")).to_contain_text("dashboard")

    # The week ahead: the schedule's next run on its day.
    page.click("nav >> text=Upcoming")
    expect(page).to_have_url(f"{base}/ui/upcoming")
    expect(page.locator("section.day").first).to_contain_text("(today)")

    # Every run in one list: what failed, by the filter form.
    page.click("nav >> text=Runs")
    expect(page).to_have_url(f"{base}/ui/runs")
    page.select_option("#status", "failed")
    page.fill("#user", "alice")
    page.click("#run-filters button[type=submit]")
    expect(page.locator("#runs tbody tr td.status").first).to_have_text("failed")
    assert page.locator("#runs tbody tr").count() >= 2, "the run and its rerun, both failed"

    # The viewer's own zone: instants on hover read in it from then on.
    page.click("nav >> text=Settings")
    expect(page).to_have_url(f"{base}/ui/settings")
    page.select_option("#zone", "Asia/Tokyo")
    page.click("form[action='/ui/settings'] button[type=submit]")
    expect(page.locator("#zone")).to_have_value("Asia/Tokyo")
    page.click("nav >> text=Memory")
    assert "(Asia/Tokyo)" in page.locator("#users time").first.get_attribute("title")

    # Every page, audited and kept as a screenshot.
    page.goto(f"{base}/ui/schedules/{sid}")
    first_run_id = page.locator("#runs tbody tr").last.get_attribute("data-run")
    audit(browser, page.context.storage_state(), [
        ("overview", "/ui"),
        ("schedule", f"/ui/schedules/{sid}"),
        ("run", f"/ui/runs/{first_run_id}"),
        ("runs", "/ui/runs?status=failed"),
        ("approvals", "/ui/approvals"),
        ("outbox", "/ui/outbox"),
        ("search", "/ui/search?user=alice&q=jasmine+tea"),
        ("memory", "/ui/memory"),
        ("memory-user", "/ui/memory/alice"),
        ("memory-note", f"/ui/memory/alice/notes/{note_id}?from=1&to=2"),
        ("upcoming", "/ui/upcoming"),
        ("settings", "/ui/settings"),
        ("outbox-week", "/ui/outbox?range=7d"),
    ])
    audit(browser, None, [("login", "/ui/login")])

    # Log out: the dashboard asks for a token again.
    page.locator("button", has_text="Log out").click()
    expect(page).to_have_url(f"{base}/ui/login")
    page.goto(f"{base}/ui")
    expect(page).to_have_url(f"{base}/ui/login")
    assert not refused, f"the browser refused a script: {refused}"
    browser.close()

print("ui-test: logged in, schedule appeared, paused and resumed, a run appeared by "
      "itself and its page told its story, every page passed axe-core, "
      "a dead letter retried, search answered, a note's version restored, the week "
      "shown, logged out")
