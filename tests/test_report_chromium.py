"""results/index.html rendered by headless Chromium (Debian's `chromium`): the first screen (the first 900 px of
height) shows every paper's verdict at 800 and 1400 px, with the status column in view; every image actually
loaded; and at phone width the page itself does not scroll sideways. Checked on the synthetic tree and on the
committed results/index.html.

``python -m tests.test_report_chromium`` takes the two screenshots committed under results/screenshots/.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.paths import RESULTS
from shared.report import write_report
from tests.report_synthetic import write_synthetic

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
SCREEN_HEIGHT = 900  # "the first screen"
SHOTS = RESULTS / "screenshots"

# Appended to a copy of the page (the page itself has no script): after load, write what the browser
# measured into the DOM, where --dump-dom shows it.
PROBE = """<script>window.addEventListener("load", () => {
  const widths = [...document.images].map(i => i.complete ? i.naturalWidth : -1);
  const html = document.documentElement;
  const papers = {};
  for (const tr of document.querySelectorAll("table.verdicts tr[data-paper]")) {
    const p = papers[tr.dataset.paper] ||= {bottom: 0, right: 0, statuses: []};
    const status = tr.querySelector("td.verdict .status");
    p.bottom = Math.max(p.bottom, tr.getBoundingClientRect().bottom);
    p.right = Math.max(p.right, status.getBoundingClientRect().right);
    p.statuses.push(status.textContent);
  }
  const statusRight = Math.max(0, ...[...document.querySelectorAll("td .status")].map(
    s => s.getBoundingClientRect().right));
  document.body.insertAdjacentHTML("beforeend", `<pre id="probe">images=${widths.join(",")};` +
    `overflow=${html.scrollWidth - html.clientWidth};probe=` + JSON.stringify(
      {papers, statusRight, width: html.clientWidth, height: window.innerHeight}) + `</pre>`);
});</script></body>"""


def _chromium(page: Path, width: int, *args: str) -> str:
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={width},{SCREEN_HEIGHT}", "--virtual-time-budget=10000", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _measure(page: Path, probe: Path, width: int) -> tuple[str, list[int], int, dict]:
    """(DOM, image widths (-1: not loaded), sideways overflow, the first screen's geometry) of ``page``."""
    probe.write_text(page.read_text().replace("</body>", PROBE))
    dom = _chromium(probe, width, "--dump-dom")
    measured = re.search(r'<pre id="probe">images=([-\d,]*);overflow=(-?\d+);probe=(.*?)</pre>', dom)
    assert measured, "the probe script did not run"
    widths = [int(w) for w in measured.group(1).split(",") if w]
    return dom, widths, int(measured.group(2)), json.loads(measured.group(3).replace("&quot;", '"'))


def _assert_first_screen(geometry: dict, papers: set[str]) -> None:
    assert set(geometry["papers"]) == papers, "every paper with results has a verdict line"
    for paper, p in geometry["papers"].items():
        assert p["bottom"] <= SCREEN_HEIGHT, f"{paper}'s verdict ends at {p['bottom']:.0f} px, below the first screen"
        assert p["right"] <= geometry["width"], f"{paper}'s status is off-screen ({p['right']:.0f} px)"
    assert geometry["statusRight"] <= geometry["width"], "a status column is off-screen; it must be the second column"


@pytest.mark.parametrize("width", [390, 800, 1400])  # a phone, a small laptop window, a laptop
def test_chromium_shows_the_verdicts_first_and_loads_every_image(tmp_path, width):
    root = write_synthetic(tmp_path)
    write_report(root)  # with the plots, so the <img> tags point at real PNGs
    dom, widths, overflow, geometry = _measure(root / "index.html", root / "probe.html", width)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", dom)
    first = [r for r in rows if "test_acc of toy" in r]
    assert len(first) == 2, "one first-screen line per referenced headline number"
    assert 'status good">reproduced<' in first[0] and "80.20 vs 80.00 (paper)" in first[0]
    assert 'status bad">not reproduced<' in first[1] and "(secondary)" in first[1]
    numbers = [r for r in rows if ">test_acc</code> toy on" in r]
    assert len(numbers) == 2 and "80.20 ± 0.14 (n=2)" in numbers[0] and ">paper</code>" in numbers[0]
    assert len(widths) == 1 and all(w > 0 for w in widths), f"images not loaded: {widths}"
    assert overflow <= 0, "the page scrolls sideways; wide tables must scroll in their own box"
    if width >= 800:
        _assert_first_screen(geometry, {"toy"})


COMMITTED = RESULTS / "index.html"


@pytest.mark.skipif(not COMMITTED.exists(), reason="no results/index.html in this checkout")
@pytest.mark.parametrize("width", [800, 1400])
def test_the_committed_page_shows_every_papers_verdict_on_the_first_screen(tmp_path, width):
    index = json.loads((RESULTS / "index.json").read_text())
    papers = {r["paper"] for r in index["rows"]} | {c["paper"] for c in index["claims"]}
    _, _, overflow, geometry = _measure(COMMITTED, tmp_path / "probe.html", width)
    _assert_first_screen(geometry, papers)
    assert overflow <= 0


def screenshot(page: Path, width: int, out: Path) -> Path:
    """The first screen of ``page`` at ``width`` px, as a palette PNG small enough to commit."""
    from PIL import Image

    out.parent.mkdir(parents=True, exist_ok=True)
    raw = out.with_suffix(".raw.png")
    _chromium(page, width, f"--screenshot={raw}")
    Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    raw.unlink()
    return out


if __name__ == "__main__":
    for w in (800, 1400):
        print(screenshot(COMMITTED, w, SHOTS / f"first_screen_{w}.png"))
    sys.exit(0)
