// A display equation wider than its column (on a phone, mostly) is shrunk to fit, down to SMALLEST of the size
// MathJax gave it; one that still does not fit scrolls sideways inside its own box (book.css). Without
// JavaScript every equation keeps its size and scrolls.
(function () {
  const SMALLEST = 0.6;

  function fit() {
    document.querySelectorAll("mjx-container[display='true']").forEach((math) => {
      if (math.dataset.typesetSize === undefined) math.dataset.typesetSize = math.style.fontSize || "100%";
      const typeset = parseFloat(math.dataset.typesetSize);
      math.style.fontSize = math.dataset.typesetSize;
      // A numbered equation's box is as wide as the equation and its tag, so compare with the column too.
      const column = math.closest("div.math-wrapper, div.math, p, section") || math.parentElement;
      const available = Math.min(math.clientWidth, column.clientWidth);
      if (math.scrollWidth > available + 1) {
        const scale = Math.max(SMALLEST, available / math.scrollWidth);
        math.style.fontSize = `${Math.floor(typeset * scale * 10) / 10}%`;
      }
    });
  }

  window.addEventListener("load", () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(fit);
  });
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(fit, 100);
  });
})();
