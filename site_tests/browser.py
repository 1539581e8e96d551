"""A headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium's ``--remote-debugging-pipe`` reads protocol commands from file descriptor 3 and writes replies
to descriptor 4, one JSON message per NUL-terminated chunk: no WebDriver, no websocket package, no
download. Used by the site tests to lay out each page at a given width and measure it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

# What a page looks like to a reader, measured in the page: code blocks and display equations wider than
# the column they sit in (an equation that scrolls inside its own box, as on a phone, is listed apart from
# one that is cut off), images whose alt text is missing or a file path, ledger rows without an anchor,
# links to an anchor of the same page that is not there, and the page itself wider than the window.
MEASURE = r"""
(() => {
  const text = (node) => (node.textContent || "").trim().replace(/\s+/g, " ").slice(0, 80);
  const wider = (node, column) => node.scrollWidth > column.clientWidth + 1;
  const article = document.querySelector("article") || document.body || document.documentElement;
  const label = (math) => math.getAttribute("aria-label") || text(math);
  const code = Array.from(document.querySelectorAll("article div.highlight pre"))
    .filter((pre) => pre.scrollWidth > pre.clientWidth + 1).map(text);
  const wideEquations = Array.from(document.querySelectorAll("article mjx-container[display='true']"))
    .filter((math) => wider(math, math.closest("div.math-wrapper, div.math, p, section") || math.parentElement)
                      || math.getBoundingClientRect().right > article.getBoundingClientRect().right + 1
                      || math.scrollWidth > math.clientWidth + 1);
  const scrolls = (math) => ["auto", "scroll"].includes(getComputedStyle(math).overflowX);
  const equations = wideEquations.filter((math) => !scrolls(math)).map(label);
  const scrollingEquations = wideEquations.filter(scrolls).map(label);
  const images = Array.from(document.querySelectorAll("article img:not(.toggler)"))
    .filter((img) => { const alt = (img.getAttribute("alt") || "").trim();
                       return alt.length < 15 || /\.(png|svg|jpe?g)$|_images|^\S*\/\S*$/.test(alt); })
    .map((img) => img.getAttribute("src"));
  const rows = Array.from(document.querySelectorAll("table.ledger-table tbody tr"))
    .filter((row) => !row.id).map(text);
  const anchors = Array.from(document.querySelectorAll("a[href^='#']"))
    .map((a) => decodeURIComponent(a.getAttribute("href").slice(1)))
    .filter((id) => id && !document.getElementById(id));
  const pageWider = document.documentElement.scrollWidth > window.innerWidth + 1;
  const mathErrors = Array.from(document.querySelectorAll("mjx-merror"))
    .map((error) => error.getAttribute("data-mjx-error") || text(error));
  // The book's own blocks (the ledger's tables and filter bar, the summary, the errata's entries) wider than the
  // article's column, or cut off inside their own box.
  const right = article.getBoundingClientRect().right;
  const wide = Array.from(document.querySelectorAll("table.ledger-table, table.ledger-summary, table.ledger-history, "
      + "table.ledger-fields, fieldset.ledger-filter, article li, span.verdict-chip"))
    .filter((node) => node.getClientRects().length && (node.getBoundingClientRect().right > right + 1
      || (node.scrollWidth > node.clientWidth + 1 && getComputedStyle(node).overflowX === "visible"
          && node.tagName !== "SPAN")))
    .map((node) => `${node.tagName.toLowerCase()}.${Array.from(node.classList).join(".")} `
                   + `(${Math.round(node.getBoundingClientRect().width)} px): ${text(node).slice(0, 40)}`);
  // Raw LaTeX left in the prose once MathJax has run: a command (\\alpha, \\frac) in a text node outside code,
  // outputs, scripts and typeset mathematics.
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {acceptNode: (node) =>
    node.parentElement.closest("pre, code, script, style, mjx-container, div.cell_output, .highlight, "
                                + "script[type='application/json']")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const rawLatex = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const found = node.textContent.match(/\\[A-Za-z]+/g);
    if (found) rawLatex.push(...found.map((command) => `${command} in "${text(node.parentElement)}"`));
  }
  return JSON.stringify({code, equations, scrollingEquations, images, rows, anchors, pageWider, mathErrors,
                         rawLatex, wide, typeset: document.querySelectorAll("mjx-container").length});
})()
"""


# The contrast of the book's own elements (book.css: the ledger's verdicts, chips, filter bar, marks), text
# against the backgrounds behind it, as WCAG 2 computes it; those below 4.5:1, with their colours.
CONTRAST = r"""
(() => {
  const SELECTORS = "td.ledger-verdict p, td.ledger-verdict a, span.verdict-chip, fieldset.ledger-filter legend, "
    + "fieldset.ledger-filter label, fieldset.ledger-filter summary, fieldset.ledger-filter output, "
    + "fieldset.ledger-filter button, fieldset.ledger-filter input, p.paper-scale-failed-mark, "
    + "p.claim-id a, p.run-it-yourself, table.ledger-summary td p, table.ledger-history td p, "
    + "table.ledger-fields td p, table.ledger-table td p";
  const parse = (value) => {
    const match = value.match(/rgba?\(([^)]+)\)/);
    if (!match) return null;
    const parts = match[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const behind = (element) => {
    const layers = [];
    for (let node = element; node; node = node.parentElement) {
      const colour = parse(getComputedStyle(node).backgroundColor);
      if (colour && colour[3] > 0) { layers.push(colour); if (colour[3] >= 1) break; }
    }
    return layers.reverse().reduce((bottom, top) => over(top, bottom), [255, 255, 255, 1]);
  };
  const luminance = (colour) => {
    const channel = (value) => { value /= 255; return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * channel(colour[0]) + 0.7152 * channel(colour[1]) + 0.0722 * channel(colour[2]);
  };
  const low = [];
  let checked = 0;
  document.querySelectorAll(SELECTORS).forEach((element) => {
    const ownText = Array.from(element.childNodes).some((node) => node.nodeType === 3 && node.textContent.trim())
      || (element.tagName === "INPUT" && element.type !== "checkbox");
    if (!ownText || element.getClientRects().length === 0) return;
    const style = getComputedStyle(element);
    if (style.visibility === "hidden" || style.display === "none") return;
    const background = behind(element);
    const foreground = over(parse(style.color), background);
    const [light, dark] = [luminance(foreground), luminance(background)].sort((a, b) => b - a);
    const ratio = (light + 0.05) / (dark + 0.05);
    checked += 1;
    if (ratio < 4.5) {
      low.push(`${element.tagName.toLowerCase()}.${Array.from(element.classList).join(".")} `
               + `"${(element.textContent || element.placeholder || "").trim().slice(0, 40)}": ${ratio.toFixed(2)}:1 `
               + `(${style.color} on rgb(${background.slice(0, 3).map(Math.round).join(", ")}))`);
    }
  });
  return JSON.stringify({checked, low: Array.from(new Set(low))});
})()
"""

# Transitions and animations ended at once (their final styles applied), then two animation frames.
SETTLE = r"""
(() => {
  const style = document.createElement("style");
  style.textContent = "*, *::before, *::after { transition: none !important; animation: none !important; }";
  document.head.appendChild(style);
  return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))));
})()
"""

# How much of a chapter page a reader scrolls through as code: the height of the code cells' inputs that show
# (a hide-input cell's input folded in its <details> has no box and counts nothing; outputs, figures and claim
# cards are not inputs), against the height of the article, the chapter's own column from its title to its
# last line (the theme's header, sidebars and footer left out).
CODE_SHARE = r"""
(() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("article");
  const inputs = Array.from(article.querySelectorAll("div.cell_input")).filter((node) => node.getClientRects().length && !node.closest("details:not([open])"));
  const height = (nodes) => nodes.reduce((sum, node) => sum + node.getBoundingClientRect().height, 0);
  const outputs = Array.from(article.querySelectorAll("div.cell_output")).filter((node) => node.getClientRects().length);
  return JSON.stringify({article: article.getBoundingClientRect().height, code: height(inputs), output: height(outputs),
                         inputs: inputs.length, folded: article.querySelectorAll("details div.cell_input").length});
})()
"""

# The theme's icons as a reader sees them: each icon element that shows (Font Awesome's classes) with the glyph
# its ::before draws and its width, and whether the icon font the stylesheet names has loaded.
ICONS = r"""
document.fonts.ready.then(() => JSON.stringify({
  fontLoaded: document.fonts.check('900 16px "Font Awesome 6 Free"'),
  scriptLoaded: Array.from(document.scripts).some((script) => /fontawesome/i.test(script.src)),
  icons: Array.from(document.querySelectorAll("i[class*='fa-'], span[class*='fa-']"))
    .filter((icon) => icon.getClientRects().length && getComputedStyle(icon).visibility !== "hidden")
    .map((icon) => ({classes: icon.className, glyph: getComputedStyle(icon, "::before").content,
                     width: icon.getBoundingClientRect().width,
                     font: getComputedStyle(icon).fontFamily}))}))
"""

# axe-core's findings on the page, serious and critical only: rule, impact, how many nodes, the first of them.
AXE = r"""
axe.run(document, {resultTypes: ["violations"]}).then((results) => JSON.stringify(
  results.violations.filter((violation) => ["serious", "critical"].includes(violation.impact))
    .map((violation) => ({rule: violation.id, impact: violation.impact, nodes: violation.nodes.length,
                          first: violation.nodes[0].target.join(" "),
                          summary: (violation.nodes[0].failureSummary || "").slice(0, 300)}))))
"""


def find_chromium() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


def open_chromium(timeout_s: float = 60) -> "Chromium":
    """A headless browser for a test module's fixture: the test is skipped on a machine without Chromium, and fails
    there where ``ICLLIB_REQUIRE_BROWSER`` is set (CI installs Chromium and sets it)."""
    import pytest

    binary = find_chromium()
    if binary is None:
        if os.environ.get("ICLLIB_REQUIRE_BROWSER"):
            pytest.fail("ICLLIB_REQUIRE_BROWSER is set but no chromium is installed")
        pytest.skip("no chromium on this machine (CI installs it and sets ICLLIB_REQUIRE_BROWSER)")
    return Chromium(binary, timeout_s=timeout_s)


class Chromium:
    """One headless browser; ``measure(url, width)`` lays a page out at ``width`` px and measures it."""

    def __init__(self, binary: str, timeout_s: float = 60):
        self.timeout_s = timeout_s
        # Chromium's helper processes can outlive the killed browser for a moment and still write to the
        # profile; a leftover temporary folder is harmless, a teardown error is not.
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True)
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def on_descriptors_3_and_4():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", f"--user-data-dir={self.profile.name}", "about:blank"],
            preexec_fn=on_descriptors_3_and_4, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def send(self, method: str, session: str | None = None, **params) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(f"{method}: no reply in {self.timeout_s} s")

    def evaluate(self, expression: str, await_promise: bool = False):
        result = self.send("Runtime.evaluate", self.session, expression=expression, returnByValue=True,
                           awaitPromise=await_promise)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(f"in the page: {details.get('exception', {}).get('description') or details.get('text')}")
        return result["result"].get("value")

    def _loaded(self, previous: str) -> bool:
        """A new page has loaded (the one before it also reads "complete" until it is replaced; a page that
        redirects, like the site's index.html, counts once its target has loaded)."""
        try:
            href, state = self.evaluate("[location.href, document.readyState]")
        except RuntimeError:    # asked while the previous page was being torn down
            return False
        return href != previous and state == "complete"

    def color_scheme(self, scheme: str) -> None:
        """The reader's system setting, ``light`` or ``dark``, which the theme follows."""
        self.send("Emulation.setEmulatedMedia", self.session,
                  features=[{"name": "prefers-color-scheme", "value": scheme}])

    def load(self, url: str, width: int) -> None:
        """Lay ``url`` out at ``width`` px and wait until it has loaded and MathJax has typeset it."""
        self.send("Emulation.setDeviceMetricsOverride", self.session, width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)
        previous = self.evaluate("location.href")
        if previous == url:
            self.send("Page.navigate", self.session, url="about:blank")
            deadline = time.monotonic() + self.timeout_s
            while self.evaluate("location.href") != "about:blank":
                if time.monotonic() > deadline:
                    raise TimeoutError("about:blank did not load")
                time.sleep(0.05)
            previous = "about:blank"
        self.send("Page.navigate", self.session, url=url)
        deadline = time.monotonic() + self.timeout_s
        while not self._loaded(previous):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load in {self.timeout_s} s")
            time.sleep(0.05)
        # MathJax typesets after the load event; wait for it where the page loads it.
        typeset = self.evaluate("window.MathJax && MathJax.startup && MathJax.startup.promise "
                                "? MathJax.startup.promise.then(() => true, (error) => String(error)) : true",
                                await_promise=True)
        # The promise can resolve before the first typesetting pass has begun: wait until every expression of
        # the page (Sphinx's span.math and div.math) holds MathJax's output.
        while not self.evaluate("Array.from(document.querySelectorAll('span.math, div.math'))"
                                ".every((node) => node.querySelector('mjx-container'))"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: MathJax did not typeset every expression in {self.timeout_s} s")
            time.sleep(0.05)
        if typeset is not True:
            raise RuntimeError(f"{url}: MathJax failed: {typeset}")
        # The theme animates its colours (a search button fading in); measured mid-transition, a colour is neither
        # the one before nor the one after, and contrast checks flake. Every transition ends at once, then two frames.
        self.evaluate(SETTLE, await_promise=True)

    def measure(self, url: str, width: int) -> dict:
        self.load(url, width)
        return json.loads(self.evaluate(MEASURE))

    def code_share(self) -> dict:
        """The loaded page's heights in px: its article, the code inputs that show, the outputs (:data:`CODE_SHARE`)."""
        return json.loads(self.evaluate(CODE_SHARE))

    def icons(self) -> dict:
        """The loaded page's icons once its fonts have loaded (:data:`ICONS`)."""
        return json.loads(self.evaluate(ICONS, await_promise=True))

    def contrast(self) -> dict:
        return json.loads(self.evaluate(CONTRAST))

    def axe(self, source: str) -> list[dict]:
        """Inject axe-core (its source text) into the loaded page and run it."""
        if not self.evaluate("typeof axe !== 'undefined'"):
            self.evaluate(source)
        return json.loads(self.evaluate(AXE, await_promise=True))

    def screenshot(self, path: str, full_page: bool = False) -> None:
        import base64

        params = {"format": "png", "captureBeyondViewport": full_page}
        data = self.send("Page.captureScreenshot", self.session, **params)["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self):
        self.process.kill()
        self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        self.profile.cleanup()


# axe-core, the accessibility engine the browser test injects into each page: fetched once from the npm
# registry (npm pack, or the registry's tarball where npm is absent), kept as that tarball under _build/vendor/,
# and checked against the registry's integrity hash on every use, the cached copy included. It never ships with
# the site.
AXE_VERSION = "4.10.3"
AXE_INTEGRITY = "sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg=="
AXE_TARBALL = f"https://registry.npmjs.org/axe-core/-/axe-core-{AXE_VERSION}.tgz"


def axe_or_skip(vendor: "os.PathLike[str] | str") -> str:
    """:func:`axe_source` for a test module's fixture: the test is skipped where axe-core cannot be had, and fails
    there where ``ICLLIB_REQUIRE_BROWSER`` is set."""
    import pytest

    try:
        return axe_source(vendor)
    except RuntimeError as error:
        if os.environ.get("ICLLIB_REQUIRE_BROWSER"):
            pytest.fail(f"axe-core is required with ICLLIB_REQUIRE_BROWSER: {error}")
        pytest.skip(f"axe-core unavailable: {error}")


def axe_source(vendor: "os.PathLike[str] | str") -> str:
    """The text of axe.min.js of :data:`AXE_VERSION`; raises ``RuntimeError`` when it cannot be had."""
    import base64
    import hashlib
    import io
    import tarfile
    import urllib.request
    from pathlib import Path

    target = Path(vendor) / f"axe-core-{AXE_VERSION}.tgz"
    data = target.read_bytes() if target.is_file() else None
    with tempfile.TemporaryDirectory() as folder:
        npm = shutil.which("npm")
        if data is None and npm:
            result = subprocess.run([npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", folder,
                                     "--silent"], capture_output=True, text=True, timeout=300)
            if result.returncode != 0:
                raise RuntimeError(f"npm pack axe-core@{AXE_VERSION} failed: {result.stderr[-500:]}")
            data = (Path(folder) / f"axe-core-{AXE_VERSION}.tgz").read_bytes()
        elif data is None:
            try:
                with urllib.request.urlopen(AXE_TARBALL, timeout=120) as response:
                    data = response.read()
            except OSError as error:
                raise RuntimeError(f"cannot download {AXE_TARBALL}: {error}") from error
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != AXE_INTEGRITY:
        raise RuntimeError(f"axe-core {AXE_VERSION}{' (' + str(target) + ')' if target.is_file() else ''}: "
                           f"integrity {digest} is not the registry's {AXE_INTEGRITY}")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        source = archive.extractfile("package/axe.min.js").read().decode("utf-8")
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return source
