"""Screenshots of the curator views (docs/curator-*.png) from a running `harvestflow up`.

Usage (from the repository root, with the demo's data in the running platform):
    .venv/bin/python scripts/curator_screenshots.py http://127.0.0.1:PORT admin PASSWORD

Uses the same headless Chromium as the browser tests (tests/support/browser.py). Its window is a
kiosk's that cannot be resized, so the browser opens on the tallest screen a shot may need and
each shot is cropped to its page's height. The PNGs are quantised to a small palette so that
each stays well under 300 KB.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from PIL import Image
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.browser import airflow_login, chromium  # noqa: E402

WIDTH, NAV_HEIGHT, MAX_HEIGHT = 1280, 1000, 2200


def _save(png: bytes, path: Path, height: int) -> None:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.crop((0, 0, image.width, min(height, image.height)))
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")


def main(base: str, user: str, password: str) -> None:
    base = base.rstrip("/")
    cur = base + "/curator"
    docs = ROOT / "docs"
    docs.mkdir(exist_ok=True)
    with chromium(width=WIDTH, height=MAX_HEIGHT) as driver:
        airflow_login(driver, base, user, password)
        driver.get(cur + "/jobs")
        job = min(  # the demo's job: the oldest
            (
                a.get_attribute("href")
                for a in driver.find_elements(By.CSS_SELECTOR, "main a")
                if re.search(r"/jobs/\d+$", a.get_attribute("href") or "")
            ),
            key=lambda url: int(url.rsplit("/", 1)[1]),
        )
        driver.get(cur + "/qa")
        day = driver.find_element(By.CSS_SELECTOR, "main a[href*='/curator/qa/']")
        pages = {
            "definitions": cur + "/definitions",
            "jobs": cur + "/jobs",
            "job": job + "?q=redirect&status=&mime=",
            "domain": cur + "/domains/example-a.test",
            "qa-day": day.get_attribute("href"),
            "preload": cur + "/preload/demo-preload",
            "preservation": cur + "/preservation",
            "airflow-nav": base + "/plugin/harvest-curator",
        }
        for name, url in pages.items():
            driver.get(url)
            driver.implicitly_wait(10)
            if name == "airflow-nav":
                driver.find_element(By.TAG_NAME, "iframe")
                driver.execute_script("return new Promise(r => setTimeout(r, 3000))")
            driver.implicitly_wait(0)
            height = NAV_HEIGHT
            if name != "airflow-nav":  # the whole page, up to a readable height
                page = driver.execute_script("return document.body.scrollHeight")
                height = min(max(int(page) + 140, 700), MAX_HEIGHT)
            _save(driver.get_screenshot_as_png(), docs / f"curator-{name}.png", height)


if __name__ == "__main__":
    main(*sys.argv[1:4])
