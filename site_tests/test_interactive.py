"""The chapters' figures with a slider (issue 39, icllib.plotting_interactive), in a real browser: every chapter
page (each part of a chapter read in parts) has one; each is driven by the keyboard at a phone's and a desktop's
width, in the light and the dark scheme; its figure changes and its value is announced; nothing errs in the
console; axe-core finds nothing serious in it; printed or with scripts off, it shows its default frame; and the
downloaded notebook carries that frame as an image."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_site import LAYOUT_PAIRS, SCHEMES, chapter_pages, parsed  # noqa: E402

WIDTHS = (400, 1400)
SLIDER = "div.icl-slider"

# Before any script of the page: every uncaught error, rejected promise and console.error, kept for the test.
RECORD_ERRORS = r"""
window.__iclErrors = [];
window.addEventListener("error", (event) => window.__iclErrors.push(String(event.message || event)));
window.addEventListener("unhandledrejection", (event) => window.__iclErrors.push(String(event.reason)));
const consoleError = console.error.bind(console);
console.error = (...args) => { window.__iclErrors.push(args.map(String).join(" ")); consoleError(...args); };
"""

# One figure's state as a reader meets it: the control's value and what it says, the figure's changing parts,
# whether the control shows, and the contrast of the figure's text against the page behind it.
STATE = r"""
((index) => {
  const root = document.querySelectorAll("div.icl-slider")[index];
  const input = root.querySelector("input[type=range]"), output = root.querySelector("output");
  // the frames as the figure's script holds them (the default one taken from the page)
  const data = root.iclSlider;
  const parts = data.gids.map((gid) => { const node = document.getElementById(root.id + "-" + gid);
                                         return node ? node.outerHTML : null; });
  // whether the figure shows frame k: each changing part as the browser parses that frame's markup
  const shows = (k) => data.gids.every((gid, i) => {
    const scratch = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    scratch.innerHTML = data.parts[k][i];
    const node = document.getElementById(root.id + "-" + gid);
    return node !== null && scratch.firstElementChild.outerHTML === node.outerHTML; });
  const label = document.querySelector(`label[for="${input.id}"]`);
  const svg = root.querySelector("svg"), box = svg.getBoundingClientRect();
  const rgb = (value) => (value.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
  const luminance = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  let background = [255, 255, 255];
  for (let node = root; node; node = node.parentElement) {
    const colour = getComputedStyle(node).backgroundColor;
    if (colour && !/rgba\(0, 0, 0, 0\)|transparent/.test(colour)) { background = rgb(colour); break; }
  }
  const text = rgb(getComputedStyle(svg.querySelector("text")).fill);
  const [light, dark] = [luminance(text), luminance(background)].sort((a, b) => b - a);
  return JSON.stringify({value: input.value, max: input.max, valuetext: input.getAttribute("aria-valuetext"),
    output: output.textContent, texts: data.texts, parts, label: label && label.textContent,
    showsValue: shows(Number(input.value)), showsOther: data.texts.map((_, k) => k)
      .filter((k) => k !== Number(input.value)).some(shows),
    focused: document.activeElement === input, inputShown: input.getClientRects().length > 0,
    svgWidth: box.width, svgHeight: box.height, pageWidth: document.documentElement.clientWidth,
    contrast: (light + 0.05) / (dark + 0.05), theme: document.documentElement.dataset.theme});
})
"""

# axe-core on the figures alone (the whole page is the layout test's): serious and critical findings.
AXE_FIGURES = r"""
axe.run(Array.from(document.querySelectorAll("div.icl-slider")), {resultTypes: ["violations"]}).then((results) =>
  JSON.stringify(results.violations.filter((v) => ["serious", "critical"].includes(v.impact))
    .map((v) => `${v.id} (${v.impact}): ${v.nodes[0].target.join(" ")}`)))
"""

KEYS = {"ArrowRight": 39, "End": 35, "Home": 36}
# What the theme itself writes to the console, not an error of a figure: pydata-sphinx-theme reports a colour mode
# missing from a fresh browser profile's storage and falls back to "auto" (the reader's scheme).
THEME_NOTICES = ("Got invalid theme mode",)


def figure_pages(site) -> dict[str, int]:
    """``{page: number of slider figures}`` over the chapter pages."""
    return {f"{chapter}.html": len(parsed(site / f"{chapter}.html").select(SLIDER)) for chapter in chapter_pages()}


def chapters_of_pages() -> dict[str, str]:
    """``{page: chapter}``: a long chapter read in parts (its registry's ``part_of``) counts as one chapter."""
    import yaml

    found = {}
    for path in sorted((ROOT / "src" / "icllib" / "registry").glob("*.yaml")):
        header = yaml.safe_load(path.read_text(encoding="utf-8"))
        found[f"{header['page']}.html"] = header.get("part_of") or header["chapter"]
    return found


def test_every_chapter_page_has_a_figure_with_a_slider(site):
    """Each chapter page, every part of a chapter read in parts included, has at least one figure with a slider."""
    counts, chapters = figure_pages(site), chapters_of_pages()
    assert set(counts) <= set(chapters), f"chapter pages without a registry: {set(counts) - set(chapters)}"
    assert counts and all(counts.values()), \
        f"chapter pages without a figure with a slider: {[page for page, count in counts.items() if not count]}"


def test_each_slider_is_labelled_and_says_its_value_before_any_script_runs(site):
    problems = []
    for page in figure_pages(site):
        for root in parsed(site / page).select(SLIDER):
            control = root.select_one("input[type=range]")
            label = root.find("label", attrs={"for": control.get("id")})
            output = root.select_one("output")
            if label is None or not label.get_text(strip=True):
                problems.append(f"{page}: slider {control.get('id')} has no label")
            if not control.get("aria-valuetext") or output is None or \
                    output.get_text() != control.get("aria-valuetext"):
                problems.append(f"{page}: slider {control.get('id')} does not say its value")
            if root.select("script[src], link[href], img[src^=http]"):
                problems.append(f"{page}: a figure loads something from elsewhere")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def browser():
    from browser import open_chromium

    chromium = open_chromium()
    chromium.send("Page.enable", chromium.session)
    chromium.send("Page.addScriptToEvaluateOnNewDocument", chromium.session, source=RECORD_ERRORS)
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def axe(site):
    from browser import axe_or_skip

    return axe_or_skip(ROOT / "_build" / "vendor")


def state(browser, index: int) -> dict:
    return json.loads(browser.evaluate(f"({STATE})({index})"))


def press(browser, key: str) -> None:
    for kind in ("keyDown", "keyUp"):
        browser.send("Input.dispatchKeyEvent", browser.session, type=kind, key=key, code=key,
                     windowsVirtualKeyCode=KEYS[key])


def drive(browser, index: int, where: str) -> list[str]:
    """Focus figure ``index``'s slider, press ArrowRight then End: the problems found."""
    browser.evaluate(f"(() => {{ const input = document.querySelectorAll('{SLIDER} input[type=range]')[{index}];"
                     "input.scrollIntoView({block: 'center'}); input.focus(); })()")
    start, problems = state(browser, index), []
    if not start["focused"]:
        problems.append(f"{where}: the slider cannot take the keyboard's focus")
    if start["parts"] != [part for part in start["parts"] if part] or not start["parts"]:
        problems.append(f"{where}: the figure's changing parts are missing from its SVG")
    for key, expected in (("Home", 0), ("ArrowRight", 1), ("End", int(start["max"]))):
        before = state(browser, index)
        press(browser, key)
        after = state(browser, index)
        said = after["texts"][expected] if expected < len(after["texts"]) else None
        if int(after["value"]) != expected:
            problems.append(f"{where}: {key} moved the slider to {after['value']}, not {expected}")
        if after["valuetext"] != said or after["output"] != said:
            problems.append(f"{where}: after {key} the control says {after['valuetext']!r} / {after['output']!r}, "
                            f"not {said!r}")
        if expected != int(before["value"]) and after["parts"] == before["parts"]:
            problems.append(f"{where}: {key} did not change the figure")
        if not after["showsValue"]:
            problems.append(f"{where}: after {key} the figure does not show the frame of {said!r}")
    return problems


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_in_a_real_browser_each_slider_works_by_keyboard_reads_and_errs_nowhere(site, browser, axe, width,
                                                                                scheme, pytestconfig):
    """Each figure's slider at ``width`` in ``scheme``: it takes the focus, ArrowRight moves it one frame and End
    to the last, the figure changes and the control says the new value (output and aria-valuetext); the figure
    fits the window, its text keeps a contrast of 4.5:1 against the page, nothing erred in the console, and
    axe-core finds nothing serious or critical in it."""
    if pytestconfig.getoption("--layouts") == "pairs" and (width, scheme) not in LAYOUT_PAIRS:
        pytest.skip("--layouts=pairs: this width is laid out in the other colour scheme (CI lays out all four)")
    browser.color_scheme(scheme)
    problems, driven = [], 0
    for page, count in figure_pages(site).items():
        if not count:
            continue   # a page without a figure with a slider fails the test that asks for one
        browser.load((site / page).as_uri(), width)
        for index in range(count):
            where = f"{page} figure {index + 1} @ {width}px {scheme}"
            first = state(browser, index)
            if first["theme"] != scheme:
                problems.append(f"{where}: the page is in its {first['theme']} theme")
            if not 0 < first["svgWidth"] <= first["pageWidth"] or first["svgHeight"] <= 0:
                problems.append(f"{where}: the figure is {first['svgWidth']:.0f} px wide in a "
                                f"{first['pageWidth']} px window")
            if first["contrast"] < 4.5:
                problems.append(f"{where}: the figure's text has a contrast of {first['contrast']:.2f}:1")
            problems += drive(browser, index, where)
            driven += 1
        errors = json.loads(browser.evaluate("JSON.stringify(window.__iclErrors || [])"))
        problems += [f"{page} @ {width}px {scheme}: console error: {error}" for error in errors
                     if not error.startswith(THEME_NOTICES)]
        if not browser.evaluate("typeof axe !== 'undefined'"):
            browser.evaluate(axe)
        problems += [f"{page} @ {width}px {scheme}, axe: {finding}"
                     for finding in json.loads(browser.evaluate(AXE_FIGURES, await_promise=True))]
    assert driven, "no figure with a slider was driven"
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_in_a_real_browser_a_printed_page_shows_each_figures_default_frame(site, browser):
    """With print media emulated, each figure shows its default frame (the SVG as the page was built, the parts
    of the control's initial value) at a readable size, and the control itself is hidden."""
    problems = []
    browser.color_scheme("light")
    try:
        for page, count in figure_pages(site).items():
            browser.load((site / page).as_uri(), 1400)
            browser.send("Emulation.setEmulatedMedia", browser.session, media="print")
            for index in range(count):
                shown = state(browser, index)
                if shown["inputShown"]:
                    problems.append(f"{page} figure {index + 1}: the slider shows in print")
                if shown["svgWidth"] < 300:
                    problems.append(f"{page} figure {index + 1}: printed {shown['svgWidth']:.0f} px wide")
                if not shown["showsValue"] or shown["showsOther"]:
                    problems.append(f"{page} figure {index + 1}: the printed figure is not its default frame")
            browser.send("Emulation.setEmulatedMedia", browser.session, media="")
    finally:
        browser.send("Emulation.setEmulatedMedia", browser.session, media="")
    assert not problems, "\n".join(problems)


def load_without_scripts(browser, url: str) -> None:
    """Load ``url`` with scripts off (``Chromium.load`` waits for MathJax, which never runs then)."""
    import time

    browser.send("Page.navigate", browser.session, url=url)
    deadline = time.monotonic() + browser.timeout_s
    while browser.evaluate("[location.href, document.readyState].join(' ')") != f"{url} complete":
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not load in {browser.timeout_s} s")
        time.sleep(0.05)


def test_in_a_real_browser_without_scripts_each_figure_shows_its_default_frame(site, browser):
    """Where no script runs (a reader's browser with scripts off, a sanitised copy of the page), each figure is
    still its default frame in plain markup, at a readable size, and the control says its initial value."""
    problems = []
    browser.send("Emulation.setScriptExecutionDisabled", browser.session, value=True)
    try:
        for page, count in figure_pages(site).items():
            if not count:
                continue
            load_without_scripts(browser, (site / page).as_uri())
            found = json.loads(browser.evaluate(
                "JSON.stringify(Array.from(document.querySelectorAll('div.icl-slider')).map((root) => ({"
                "width: root.querySelector('svg').getBoundingClientRect().width, "
                "texts: root.querySelectorAll('svg text').length, ready: root.hasAttribute('data-ready'), "
                "output: root.querySelector('output').textContent, "
                "initial: root.querySelector('input').getAttribute('aria-valuetext')})))"))
            for number, figure in enumerate(found, start=1):
                if figure["ready"]:
                    problems.append(f"{page} figure {number}: its script ran although scripts are off")
                if figure["width"] < 300 or not figure["texts"]:
                    problems.append(f"{page} figure {number}: without scripts it is {figure['width']:.0f} px wide "
                                    f"with {figure['texts']} texts")
                if figure["output"] != figure["initial"]:
                    problems.append(f"{page} figure {number}: without scripts the control says {figure['output']!r}")
    finally:
        browser.send("Emulation.setScriptExecutionDisabled", browser.session, value=False)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", chapter_pages())
def test_the_downloaded_notebook_carries_each_figures_default_frame_as_an_image(site, chapter):
    """A downloaded notebook shows each figure with a slider as its default frame, an image/png any notebook
    renders (the frames and their script stay on the page: _ext/notebook_download.still_figures), with the
    figure's description as its text."""
    import base64
    import io

    from PIL import Image

    if not figure_pages(site)[f"{chapter}.html"]:
        pytest.skip("a page of a chapter read in parts, without a figure with a slider of its own")
    notebook = json.loads((site / "_sources" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    outputs = [output for cell in notebook["cells"] for output in cell.get("outputs", [])
               if "".join(output.get("data", {}).get("text/plain", "")).startswith("Figure with a slider")]
    assert outputs, f"{chapter}'s notebook has no figure with a slider"
    for output in outputs:
        assert "text/html" not in output["data"], "the frames and their script belong to the page"
        image = Image.open(io.BytesIO(base64.b64decode("".join(output["data"]["image/png"]))))
        assert image.width >= 400 and image.height >= 200, f"a {image.width} x {image.height} px default frame"
