"""Drives the cpersona console in headless Chromium (selenium + Debian's chromium-driver).

Called by server/tests/it/console/browser.rs with a running console; exits non-zero with a
message on the first thing that is not as a user would find it. Prints one JSON line of what
it did. Screenshots of the main pages go to --screenshots.
"""

import argparse
import json
import os
import sys

from selenium import webdriver
from selenium.common.exceptions import (
    NoAlertPresentException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait


def fail(message):
    print(f"browser.py: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--edit", required=True)
    ap.add_argument("--delete", required=True)
    ap.add_argument("--missed", required=True)
    ap.add_argument("--screenshots", required=True)
    args = ap.parse_args()

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--disable-gpu"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    done = []
    try:
        base, agent = args.base, args.agent
        wait = WebDriverWait(driver, 20, ignored_exceptions=[WebDriverException])

        def shot(name):
            driver.save_screenshot(os.path.join(args.screenshots, f"{name}.png"))

        def body():
            # Retried through a page swap (a node of the page being replaced fails to read).
            return wait.until(lambda d: d.find_element(By.TAG_NAME, "body").text)

        def gone(old):
            # The old page's root is gone once asking about it fails: chromedriver says so as
            # a stale reference or, mid-swap, as "does not belong to the document".
            def check(_driver):
                try:
                    old.is_enabled()
                    return False
                except (StaleElementReferenceException, WebDriverException):
                    return True
            return check

        def submit(element):
            # Click, then wait for the next page to replace this one.
            old = driver.find_element(By.TAG_NAME, "html")
            element.click()
            wait.until(gone(old))

        def open_page(path, expect):
            driver.get(base + path)
            if expect not in body():
                fail(f"{path}: {expect!r} not on the page:\n{body()[:2000]}")

        # Refused without the token: every page is the login form, showing no row.
        for path in ("/console", f"/console/agents/{agent}/memories", "/console/health"):
            driver.get(base + path)
            if not driver.find_elements(By.NAME, "token") or "kettle" in body():
                fail(f"{path} without a session is not the login page")
        done.append("refused without the token")
        shot("login")
        # A wrong token is refused; the right one logs in.
        driver.find_element(By.NAME, "token").send_keys("not-the-token-123456")
        submit(driver.find_element(By.CSS_SELECTOR, "form.login button"))
        if "not accepted" not in body():
            fail("a wrong token was not refused:\n" + body()[:1500])
        driver.find_element(By.NAME, "token").send_keys(args.token)
        driver.find_element(By.CSS_SELECTOR, "form.login button").click()
        wait.until(expected_conditions.title_contains("Agents"))
        if agent not in body():
            fail("the agents page does not list the agent")
        shot("agents")
        done.append("logged in")

        open_page(f"/console/agents/{agent}", "Memories stored per week")
        if not driver.find_elements(By.CSS_SELECTOR, "svg.histogram rect"):
            fail("no histogram bars")
        shot("agent")
        open_page(f"/console/agents/{agent}/memories", "blue kettle")
        # Stored markup shows as text, never as an element.
        if "<b>not markup</b>" not in body() or driver.find_elements(By.CSS_SELECTOR, "main td b"):
            fail("stored markup was not escaped")
        shot("memories")
        driver.find_element(By.NAME, "channel").send_keys("ops")
        submit(driver.find_element(By.CSS_SELECTOR, "form.filters button"))
        if "number 3 " in body() or "number 4 " not in body():
            fail("the channel filter did not filter")
        open_page(f"/console/agents/{agent}/episodes", "a chat about kettles")
        open_page(f"/console/agents/{agent}/profile", "Alice likes tea.")
        open_page("/console/health", "Checks")
        shot("health")
        done.append("browsed")

        # A search with a time cue, then its trace.
        driver.get(f"{base}/console/agents/{agent}/search")
        driver.find_element(By.NAME, "q").send_keys("blue kettle")
        limit = driver.find_element(By.NAME, "limit")
        limit.clear()
        limit.send_keys("3")
        driver.find_element(By.NAME, "ago_value").send_keys("1")
        Select(driver.find_element(By.NAME, "ago_unit")).select_by_value("weeks")
        Select(driver.find_element(By.NAME, "confidence")).select_by_value("vague")
        driver.find_element(By.CSS_SELECTOR, "form.search button").click()
        wait.until(lambda d: "open the trace" in d.find_element(By.TAG_NAME, "body").text)
        if "fused #" not in body() or not driver.find_elements(By.CSS_SELECTOR, "svg.strips"):
            fail("the search rows do not say why they are there")
        shot("search")
        driver.find_element(By.LINK_TEXT, "open the trace").click()
        wait.until(lambda d: "Arms side by side" in d.find_element(By.TAG_NAME, "body").text)
        shot("trace")
        done.append("searched and opened the trace")
        # Attribute a row that did not come back.
        expect = driver.find_element(By.NAME, "expect")
        expect.clear()
        expect.send_keys(args.missed)
        expect.submit()
        wait.until(lambda d: "Failure code" in d.find_element(By.TAG_NAME, "body").text)
        shot("attribution")
        done.append("attributed " + args.missed)
        # Change one condition and replay.
        forms = driver.find_elements(By.CSS_SELECTOR, "form.filters")
        replay = forms[-1]
        Select(replay.find_element(By.NAME, "key")).select_by_value("limit")
        value = replay.find_element(By.NAME, "value")
        value.clear()
        value.send_keys("5")
        replay.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "Replayed answer" in d.find_element(By.TAG_NAME, "body").text)
        shot("replay")
        done.append("replayed limit=5")

        # Edit a memory.
        detail = f"/console/agents/{agent}/memories/{args.edit}"
        open_page(detail, "Correct it")
        shot("memory")
        text = driver.find_element(By.NAME, "content")
        text.clear()
        text.send_keys("edited in a real browser")
        text.find_element(By.XPATH, "./ancestor::form").find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "edited in a real browser" in d.find_element(By.CSS_SELECTOR, "pre.content").text)
        done.append("edited")

        # Delete one: dismissing the dialog keeps it; accepting deletes it.
        detail = f"/console/agents/{agent}/memories/{args.delete}"
        open_page(detail, "Delete")

        def press_delete():
            form = driver.find_element(By.CSS_SELECTOR, "form[data-confirm]")
            box = form.find_element(By.NAME, "confirm")
            if not box.is_selected():
                box.click()
            form.find_element(By.CSS_SELECTOR, "button.danger").click()
            WebDriverWait(driver, 10, ignored_exceptions=[WebDriverException]).until(expected_conditions.alert_is_present())
            return driver.switch_to.alert

        press_delete().dismiss()
        try:
            driver.switch_to.alert
            fail("the dialog stayed open")
        except NoAlertPresentException:
            pass
        if "Correct it" not in body():
            fail("dismissing the dialog left the page")
        press_delete().accept()
        wait.until(lambda d: "Deleted mem:" in d.find_element(By.TAG_NAME, "body").text)
        done.append("deleted")

        # Log out: the session is gone.
        driver.get(base + "/console")
        submit(driver.find_element(By.CSS_SELECTOR, "form.logout button"))
        driver.get(base + "/console")
        if not driver.find_elements(By.NAME, "token"):
            fail("logging out did not end the session")
        done.append("logged out")
    finally:
        driver.quit()
    print(json.dumps({"ok": True, "done": done}))


if __name__ == "__main__":
    main()
