"""results/index.html rendered by headless Chromium (Debian's `chromium`) at 1400, 800 and 390 px: no claim cell is
cut (no ellipsis, no text hidden by overflow: every first-screen cell shows all of its text, wrapped), the forest
plot is loaded and visible, every image loaded, and the page never scrolls sideways. Checked on the synthetic tree
(with claim specs judged by shared.claims) and on the committed results/index.html.

``python -m tests.test_report_chromium [page] [folder]`` takes the first-screen screenshots at the three widths
(default: the committed page, into results/screenshots/).
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
from tests.report_synthetic import claims_hook, with_claims, write_synthetic

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
SCREEN_HEIGHT = 900  # "the first screen" (the window; the page below it is measured too)
SHOTS = RESULTS / "screenshots"

# Appended to a copy of the page (the page itself has no script): after load, write what the browser
# measured into the DOM, where --dump-dom shows it.
PROBE = """<script>window.addEventListener("load", () => {
  const widths = [...document.images].map(i => i.complete ? i.naturalWidth : -1);
  const html = document.documentElement;
  const cut = [];
  for (const td of document.querySelectorAll("table.verdicts td")) {
    const text = td.textContent;
    if (text.includes("\u2026") || td.scrollWidth > td.clientWidth + 1 || td.scrollHeight > td.clientHeight + 1
        || td.getBoundingClientRect().right > html.clientWidth + 1) cut.push(text);
  }
  const claims = [...document.querySelectorAll("table.verdicts td.claim")].map(td => td.textContent);
  const img = document.querySelector("figure.forest img");
  let forest = null;
  if (img) {
    const r = img.getBoundingClientRect(), style = getComputedStyle(img);
    forest = {loaded: img.complete && img.naturalWidth > 0, width: r.width, height: r.height, right: r.right,
              visible: style.visibility !== "hidden" && style.display !== "none"};
  }
  const out = window.parent !== window ? parent.document : document;  // inside a phone-width frame: its parent
  out.body.insertAdjacentHTML("beforeend", `<pre id="probe">images=${widths.join(",")};` +
    `overflow=${html.scrollWidth - html.clientWidth};probe=` + JSON.stringify(
      {cut, claims, forest, width: html.clientWidth}) + `</pre>`);
});</script></body>"""
WIDTHS = (390, 800, 1400)  # a phone, a small laptop window, a laptop
MIN_WINDOW = 500  # headless Chromium's narrowest window: a phone's width is a frame of that width inside it


def _framed(page: Path, width: int, frame: Path) -> Path:
    """``page`` itself where the window can be ``width`` wide; else a page holding it in a ``width``-px frame (the
    frame is the viewport its media queries and layout see)."""
    if width >= MIN_WINDOW:
        return page
    frame.write_text(f'<!doctype html><body style="margin:0"><iframe src="{page.name}" '
                     f'style="width:{width}px;height:{SCREEN_HEIGHT}px;border:0;display:block"></iframe></body>')
    return frame


def _chromium(page: Path, width: int, *args: str) -> str:
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--allow-file-access-from-files",
         f"--window-size={max(width, MIN_WINDOW)},{SCREEN_HEIGHT}", "--virtual-time-budget=10000", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _measure(page: Path, probe: Path, width: int) -> tuple[str, list[int], int, dict]:
    """(DOM, image widths (-1: not loaded), sideways overflow, the first screen's geometry) of ``page``."""
    # the copy may sit elsewhere (a test never writes into results/): its relative links resolve against the page's folder
    base = f'<head><base href="{page.parent.resolve().as_uri()}/">'
    probe.write_text(page.read_text().replace("<head>", base, 1).replace("</body>", PROBE))
    dom = _chromium(_framed(probe, width, probe.with_name(f"frame_{probe.name}")), width, "--dump-dom")
    measured = re.search(r'<pre id="probe">images=([-\d,]*);overflow=(-?\d+);probe=(.*?)</pre>', dom)
    assert measured, "the probe script did not run"
    widths = [int(w) for w in measured.group(1).split(",") if w]
    return dom, widths, int(measured.group(2)), json.loads(measured.group(3).replace("&quot;", '"'))


def assert_readable(geometry: dict, widths: list[int], overflow: int, claims: list[str]) -> None:
    """No cut claim cell, the forest plot loaded and on the page, every image loaded, no sideways scroll."""
    assert not geometry["cut"], f"first-screen cells cut or off-screen at {geometry['width']} px: {geometry['cut']}"
    assert geometry["claims"] and set(claims) <= set(geometry["claims"]), "every claim's words, whole, in its cell"
    forest = geometry["forest"]
    assert forest and forest["loaded"] and forest["visible"] and forest["width"] > 100 and forest["height"] > 50
    assert forest["right"] <= geometry["width"] + 1, "the forest plot is off-screen"
    assert widths and all(w > 0 for w in widths), f"images not loaded: {widths}"
    assert overflow <= 0, "the page scrolls sideways; wide tables must scroll in their own box"


@pytest.mark.parametrize("width", WIDTHS)
def test_chromium_shows_every_claim_whole_and_the_forest_plot(tmp_path, width):
    root = write_synthetic(tmp_path)
    with_claims(tmp_path)
    write_report(root, tmp_path / "replications", hooks={"toy": claims_hook})  # with the plots: real PNGs
    _, widths, overflow, geometry = _measure(root / "index.html", root / "probe.html", width)
    claims = [c["short"] for c in json.loads((root / "index.json").read_text())["claims"]]
    assert_readable(geometry, widths, overflow, ["toy beats base in test accuracy (d1)", "toy scales to 64 GPUs"])
    assert set(claims) <= set(geometry["claims"])
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", (root / "index.html").read_text())
    first = [r for r in rows if "test_acc of toy" in r]
    assert len(first) == 2, "one first-screen line per referenced headline number"
    assert 'status good">reproduced<' in first[0] and "80.20 vs 80.00 (paper)" in first[0]
    assert 'status bad">not reproduced<' in first[1] and "(secondary)" in first[1]
    assert any('status scaled"' in r and "at 0.81M params (claim: 1.5B)" in r for r in rows)
    details = _measure(root / "details.html", root / "probe_details.html", width)
    assert details[2] <= 0 and all(w > 0 for w in details[1]), "details.html: sideways scroll or an image not loaded"


COMMITTED = RESULTS / "index.html"


@pytest.mark.skipif(not COMMITTED.exists(), reason="no results/index.html in this checkout")
@pytest.mark.parametrize("width", WIDTHS)
def test_the_committed_page_shows_every_claim_whole_and_the_forest_plot(tmp_path, width):
    check_page(COMMITTED, tmp_path / "probe.html", width)


def check_page(page: Path, probe: Path, width: int) -> None:
    """The committed page (or a copy's): every claim of its index.json whole in its cell, the plot, no sideways scroll."""
    index = json.loads((page.parent / "index.json").read_text())
    _, widths, overflow, geometry = _measure(page, probe, width)
    shown = [c.get("short") or c["text"] for c in index["claims"]]
    assert_readable(geometry, widths, overflow, [])
    for words in shown:  # a claim not testable here shares its paper's one line with the others
        assert any(words in cell for cell in geometry["claims"]), f"claim missing or cut at {width} px: {words!r}"


def screenshot(page: Path, width: int, out: Path) -> Path:
    """The first screen of ``page`` at ``width`` px, as a palette PNG small enough to commit."""
    from PIL import Image

    out.parent.mkdir(parents=True, exist_ok=True)
    raw = out.with_suffix(".raw.png")
    _chromium(_framed(page, width, page.with_name(f".frame_{width}.html")), width, f"--screenshot={raw}")
    page.with_name(f".frame_{width}.html").unlink(missing_ok=True)
    shot = Image.open(raw).convert("RGB").crop((0, 0, width, SCREEN_HEIGHT))
    shot.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    raw.unlink()
    return out


if __name__ == "__main__":
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else COMMITTED
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else SHOTS
    for w in WIDTHS:
        print(screenshot(page, w, folder / f"first_screen_{w}.png"))
    sys.exit(0)
