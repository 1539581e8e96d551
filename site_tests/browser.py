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
  const article = document.querySelector("article") || document.body;
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
  return JSON.stringify({code, equations, scrollingEquations, images, rows, anchors, pageWider, mathErrors,
                         typeset: document.querySelectorAll("mjx-container").length});
})()
"""


def find_chromium() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


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

    def measure(self, url: str, width: int) -> dict:
        self.send("Emulation.setDeviceMetricsOverride", self.session, width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)
        previous = self.evaluate("location.href")
        if previous == url:
            self.send("Page.navigate", self.session, url="about:blank")
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
        if typeset is not True:
            raise RuntimeError(f"{url}: MathJax failed: {typeset}")
        return json.loads(self.evaluate(MEASURE))

    def close(self):
        self.process.kill()
        self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        self.profile.cleanup()
