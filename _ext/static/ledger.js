// The claims ledger's filter bar, under the page's title: a text search over every column of each row (its
// ledger.json fields, which the page carries as #ledger-search-data), in the registry's ASCII and in the Unicode
// a reader sees typeset ("eta_y", "ηY" and "η_Y" find the same rows); filters by chapter, by verdict (in the
// legend's order) and "failed at paper scale". Nothing ticked in a group means no restriction by it. Typing is
// debounced, and a filter touches only the rows whose state changes, collapsing them rather than removing their
// boxes (under 100 ms a keystroke with the CPU slowed 4x: site_tests/test_cards_ledger.py). The bar stays below the
// header while the ledger scrolls (book.css). A section whose rows are all filtered out folds away; a link to a
// row filtered out clears the filters. Without JavaScript the ledger is the same tables, unfiltered.
(() => {
  const setUp = () => {
    const rows = Array.from(document.querySelectorAll("tr.ledger-row"));
    const dataNode = document.getElementById("ledger-filter-data");
    if (rows.length === 0 || !dataNode) return;
    const data = JSON.parse(dataNode.textContent);
    const classValue = (row, prefix) => {
      const name = Array.from(row.classList).find((item) => item.startsWith(prefix));
      return name ? name.slice(prefix.length) : "";
    };
    // A text as the search compares it: lower case, TeX's backslashes, braces, sub- and superscript marks and
    // dollars gone, Greek letters' names as the letters (eta -> η, not inside a word: "beta" stays β, "meta"
    // stays meta), spaces collapsed. The registry's ASCII ("eta_Y") and the typeset text ("ηY") fold alike.
    const greek = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
      eta: "η", theta: "θ", iota: "ι", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ",
      sigma: "σ", tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω"};
    const greekName = new RegExp(`(^|[^a-z])(${Object.keys(greek).sort((a, b) => b.length - a.length).join("|")})`
      + "(?![a-z])", "g");
    const fold = (text) => text.toLowerCase().replace(/\\(top|intercal)\b/g, "t")
      .replace(/\\([a-z]+)/g, "$1").replace(greekName, (match, before, name) => before + greek[name])
      .replace(/[{}_^$\\]/g, "").replace(/sqrt/g, "√").replace(/\s+/g, " ").trim();
    // Each row's text by its anchor; a list of files many rows share is stored once and named by its index.
    let searchData = {shared: [], rows: {}};
    const searchNode = document.getElementById("ledger-search-data");
    if (searchNode) searchData = JSON.parse(searchNode.textContent);
    const whole = (stored) => stored.replace(/\u0000(\d+)\u0000/g, (all, index) => searchData.shared[index]);
    // A row's measured values are searched both as ledger.json keeps them (4.44089e-16) and as its cell shows
    // them, set for reading (4.441 × 10⁻¹⁶).
    const measuredShown = (row) => {
      const cell = row.querySelector("td.ledger-measured");
      return cell ? " " + cell.textContent.toLowerCase() : "";
    };
    const entries = rows.map((row) => {
      const stored = searchData.rows[row.id];
      const text = stored === undefined ? row.textContent.toLowerCase() : whole(stored) + measuredShown(row);
      return {
        row,
        section: row.closest("section"),
        chapter: classValue(row, "chapter-"),
        verdict: classValue(row, "verdict-"),
        failedAtPaperScale: row.classList.contains("paper-scale-failed"),
        text: text.replace(/\s+/g, " "),
        folded: fold(text),
        shown: true,
      };
    });

    const bar = document.createElement("fieldset");
    bar.className = "ledger-filter";
    bar.setAttribute("aria-label", "Filter the ledger's rows");

    const searchLine = document.createElement("div");
    searchLine.className = "ledger-search-line";
    const search = document.createElement("input");
    search.type = "search";
    search.id = "ledger-search";
    search.placeholder = "Search every column: eta_Y, ηY, Thm. 1, inconclusive";
    search.setAttribute("aria-label", "Search every column of the ledger");
    const failedLabel = document.createElement("label");
    failedLabel.className = "paper-scale-failed-filter";
    const failedBox = document.createElement("input");
    failedBox.type = "checkbox";
    failedBox.id = "ledger-failed-at-paper-scale";
    const failedCount = entries.filter((entry) => entry.failedAtPaperScale).length;
    failedLabel.append(failedBox, ` failed at paper scale (${failedCount})`);
    const shown = document.createElement("output");
    shown.id = "ledger-shown";
    shown.setAttribute("aria-live", "polite");
    const clear = document.createElement("button");
    clear.type = "button";
    clear.textContent = "Clear";
    searchLine.append(search, failedLabel, shown, clear);
    bar.append(searchLine);

    const group = (title, items, key, classOf) => {
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      details.append(summary);
      const boxes = [];
      items.forEach(([value, text]) => {
        const count = entries.filter((entry) => entry[key] === value).length;
        if (count === 0) return;
        const label = document.createElement("label");
        if (classOf) label.className = classOf(value);
        const box = document.createElement("input");
        box.type = "checkbox";
        box.value = value;
        box.dataset.filter = key;
        label.append(box, ` ${text} (${count})`);
        details.append(label);
        boxes.push(box);
      });
      summary.textContent = `${title} (${boxes.length})`;
      bar.append(details);
      return boxes;
    };
    const slug = (verdict) => verdict.toLowerCase().replace(/ /g, "-");
    const chapterBoxes = group("Chapters", data.chapters, "chapter", null);
    const verdictBoxes = group("Verdicts", data.verdicts.map((verdict) => [slug(verdict), verdict]), "verdict",
                               (value) => `verdict-${value}`);

    // Each section's rows, to count those shown: a section with none is folded away.
    const sections = new Map();
    entries.forEach((entry) => {
      if (!entry.section) return;
      if (!sections.has(entry.section)) sections.set(entry.section, {shown: 0, empty: false});
      sections.get(entry.section).shown += 1;
    });
    // Filtering writes and never reads the page: it decides every row in JavaScript first, then toggles one class
    // on each row whose state changes and on each section that empties or fills, and sets the count once. A row
    // filtered out is collapsed (book.css: visibility: collapse in the table, content-visibility: hidden as a
    // phone's card), not display: none, so that its boxes and typeset formulas are kept rather than torn down and
    // rebuilt: showing it again costs a layout, not a restyle of its hundreds of MathJax elements.
    const apply = () => {
      const started = performance.now();
      const query = search.value.toLowerCase().trim();
      // a term matches a row's ASCII text as typed, or its folded form (Unicode letters, no TeX marks)
      const terms = query.split(/\s+/).filter(Boolean).map((term) => [term, fold(term)]);
      const chapters = new Set(chapterBoxes.filter((box) => box.checked).map((box) => box.value));
      const verdicts = new Set(verdictBoxes.filter((box) => box.checked).map((box) => box.value));
      const failedOnly = failedBox.checked;
      let visible = 0;
      const changed = [];
      for (const entry of entries) {
        const show = (chapters.size === 0 || chapters.has(entry.chapter))
          && (verdicts.size === 0 || verdicts.has(entry.verdict))
          && (!failedOnly || entry.failedAtPaperScale)
          && terms.every(([term, folded]) => entry.text.includes(term) || (folded && entry.folded.includes(folded)));
        if (show !== entry.shown) {
          entry.shown = show;
          changed.push(entry);
          if (entry.section) sections.get(entry.section).shown += show ? 1 : -1;
        }
        visible += show;
      }
      changed.forEach((entry) => entry.row.classList.toggle("ledger-out", !entry.shown));
      sections.forEach((state, section) => {
        if (state.empty !== (state.shown === 0)) {
          state.empty = state.shown === 0;
          section.classList.toggle("ledger-empty", state.empty);
        }
      });
      const count = `${visible} of ${entries.length} rows`;
      if (shown.textContent !== count) shown.textContent = count;
      document.dispatchEvent(new CustomEvent("ledger-filtered", {detail: {ms: performance.now() - started, visible}}));
    };
    // Typing waits for a pause before the rows are filtered: each keystroke costs a timer, not a table's layout.
    let pending = null;
    const applySoon = () => {
      clearTimeout(pending);
      pending = setTimeout(apply, 120);
    };
    const reset = () => {
      search.value = "";
      [...chapterBoxes, ...verdictBoxes, failedBox].forEach((box) => { box.checked = false; });
      apply();
    };
    search.addEventListener("input", applySoon);
    search.addEventListener("keydown", (event) => { if (event.key === "Enter") { clearTimeout(pending); apply(); } });
    [...chapterBoxes, ...verdictBoxes, failedBox].forEach((box) => box.addEventListener("change", apply));
    clear.addEventListener("click", reset);
    window.addEventListener("hashchange", () => {
      const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target && target.closest("tr.ledger-out, section.ledger-empty")) {
        reset();
        target.scrollIntoView();
      }
    });
    // Under the page's title, before the introduction and the folded verdict rules.
    const title = document.querySelector("article section > h1");   // not the theme's print-only copy
    if (title) title.insertAdjacentElement("afterend", bar);
    else rows[0].closest("section").before(bar);
    apply();
  };
  // On a phone a formula of the ledger wider than its cell (one with no place to break, a root or a norm over a
  // long expression) is shrunk to fit, down to 60 % of its size, as fit_equations.js does for display equations.
  const fitFormulas = () => {
    if (window.innerWidth > 640) return;
    document.querySelectorAll("table.ledger-table mjx-container").forEach((math) => {
      if ((math.getAttribute("aria-label") || math.textContent).length < 20) return;
      const cell = math.closest("td");
      const room = cell.clientWidth - 8;
      math.style.fontSize = "";
      const width = math.getBoundingClientRect().width;
      if (width > room) math.style.fontSize = `${Math.max(60, Math.floor((100 * room) / width))}%`;
    });
  };
  window.addEventListener("load", () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(fitFormulas);
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
