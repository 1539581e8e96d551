// A formula wider than its column (on a phone, mostly) is shrunk to fit, down to SMALLEST of its size; one that
// still does not fit scrolls sideways inside its own box (book.css). Display equations and inline expressions
// alike: MathJax does not break an inline expression across lines, and a long one would be cut off at the edge
// of a phone's column. The formulas were typeset when the site was built (math_typesetting.py, chtml.js puts them
// in place before the load event). Without JavaScript a page shows the formulas' TeX.
(function () {
  const SMALLEST = 0.6;

  // Reads and writes of the layout in separate passes: a read after each write would lay the page out again
  // for every formula, hundreds of times on a chapter.
  function fit() {
    const formulas = Array.from(document.querySelectorAll("article mjx-container"));
    formulas.forEach((math) => {
      math.style.fontSize = "";
      if (math.classList.contains("too-wide")) { math.classList.remove("too-wide"); math.removeAttribute("tabindex"); }
    });
    const wide = formulas.map((math) => {
      // A numbered equation's box is as wide as the equation and its tag, so compare with the column too.
      const column = math.closest("div.math-wrapper, div.math, p, li, td, section") || math.parentElement;
      const display = math.getAttribute("display") === "true";
      const available = display ? Math.min(math.clientWidth, column.clientWidth) : column.clientWidth;
      const needed = display ? math.scrollWidth : math.getBoundingClientRect().width;
      return {math, display, available, needed, size: parseFloat(getComputedStyle(math).fontSize)};
    }).filter((formula) => formula.needed > formula.available + 1);
    wide.forEach(({math, available, needed, size}) => {
      math.style.fontSize = `${Math.floor(size * Math.max(SMALLEST, available / needed) * 10) / 10}px`;
    });
    // Still wider at the smallest size: an inline formula scrolls in its own box (book.css), never past the column,
    // and a keyboard reaches it to scroll it (the only formulas in the tab order).
    wide.filter(({math, display, available}) => !display && math.getBoundingClientRect().width > available + 1)
      .forEach(({math}) => { math.classList.add("too-wide"); math.setAttribute("tabindex", "0"); });
    // A display equation that scrolls in its box (the theme's stylesheet makes each a scrolling box) is reached the
    // same way.
    formulas.filter((math) => math.getAttribute("display") === "true"
                    && (math.scrollWidth > math.clientWidth || math.scrollHeight > math.clientHeight))
      .forEach((math) => { math.classList.add("too-wide"); math.setAttribute("tabindex", "0"); });
  }

  window.addEventListener("load", fit);
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(fit, 100);
  });
})();
