"""results/index.html rendered by headless Chromium (Debian's `chromium`): the headline rows are in the
rendered DOM, every image actually loaded, and at phone width the page itself does not scroll sideways."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from shared.report import write_report
from tests.report_synthetic import write_synthetic

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")

# Appended to a copy of the page (the page itself has no script): after load, write what the browser
# measured into the DOM, where --dump-dom shows it.
PROBE = """<script>window.addEventListener("load", () => {
  const widths = [...document.images].map(i => i.complete ? i.naturalWidth : -1);
  const html = document.documentElement;
  document.body.insertAdjacentHTML("beforeend", `<pre id="probe">images=${widths.join(",")};` +
    `overflow=${html.scrollWidth - html.clientWidth}</pre>`);
});</script></body>"""


def _render(page, width: int) -> str:
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={width},900",
         "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.parametrize("width", [390, 1280])  # a phone and a laptop
def test_chromium_shows_headline_rows_and_loaded_images(tmp_path, width):
    root = write_synthetic(tmp_path)
    write_report(root)  # with the plots, so the <img> tags point at real PNGs
    probe = root / "probe.html"
    probe.write_text((root / "index.html").read_text().replace("</body>", PROBE))
    dom = _render(probe, width)
    rows = re.findall(r"<tr>(.*?)</tr>", dom)
    headline = [r for r in rows if "test_acc" in r and ">toy</a>" in r]
    assert len(headline) == 2, "one first-screen row per dataset"
    assert "80.20 ± 0.10 (n=2)" in headline[0] and "reproduced" in headline[0] and ">paper</code>" in headline[0]
    assert "not reproduced" in headline[1] and ">secondary</code>" in headline[1]
    measured = re.search(r'<pre id="probe">images=([-\d,]*);overflow=(-?\d+)</pre>', dom)
    assert measured, "the probe script did not run"
    widths = [int(w) for w in measured.group(1).split(",")]
    assert len(widths) == 1 and all(w > 0 for w in widths), f"images not loaded: {widths}"
    assert int(measured.group(2)) <= 0, "the page scrolls sideways; wide tables must scroll in their own box"
