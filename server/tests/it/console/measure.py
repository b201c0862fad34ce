"""Page weight and time to first byte / first render of the console's main pages, by hand.

    python measure.py --base http://127.0.0.1:8788 --token TOKEN --agent agent0 [--runs 5]

Each page is loaded --runs times in headless Chromium (after one warm-up); it reports the
median of the document's size in bytes, time to first byte (responseStart - requestStart),
time to first contentful paint (when headless Chromium reports one) and to the load event
(page, stylesheet and script in, laid out), from the browser's own Navigation and Paint
timings.
"""

import argparse
import json
import statistics

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--query", default="kettle train station")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(300)
    try:
        driver.get(args.base + "/console/login")
        driver.find_element(By.NAME, "token").send_keys(args.token)
        driver.find_element(By.CSS_SELECTOR, "form.login button").click()
        a = args.agent
        pages = ["/console", f"/console/agents/{a}", f"/console/agents/{a}/memories",
                 f"/console/agents/{a}/memories?channel=ops&source=user8",
                 f"/console/agents/{a}/search?q={args.query.replace(' ', '+')}&limit=10",
                 "/console/health"]
        # The trace page of one search.
        driver.get(args.base + pages[4])
        link = driver.find_element(By.LINK_TEXT, "open the trace").get_attribute("href")
        pages.append(link[len(args.base):])
        # One memory page.
        driver.get(args.base + pages[2])
        first = driver.find_element(By.CSS_SELECTOR, "table a").get_attribute("href")
        pages.append(first[len(args.base):])
        report = []
        for page in pages:
            sizes, ttfb, fcp, load = [], [], [], []
            for run in range(args.runs + 1):
                driver.get(args.base + page)
                nav = driver.execute_script(
                    "const n = performance.getEntriesByType('navigation')[0];"
                    "const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    "return [n.transferSize, n.decodedBodySize, n.responseStart - n.requestStart,"
                    " p ? p.startTime - n.startTime : null, n.loadEventEnd - n.startTime];")
                if run == 0:
                    continue
                sizes.append(nav[1])
                load.append(nav[4])
                ttfb.append(nav[2])
                if nav[3] is not None:
                    fcp.append(nav[3])
            report.append({"page": page, "bytes": int(statistics.median(sizes)),
                           "ttfb_ms": round(statistics.median(ttfb), 1),
                           "first_paint_ms": round(statistics.median(fcp), 1) if fcp else None,
                           "loaded_ms": round(statistics.median(load), 1)})
        for row in report:
            print(json.dumps(row))
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
