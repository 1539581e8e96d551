// The claims ledger's filter bar: a text search over the rows' ids, statements and evidence; filters by
// chapter, by verdict (in the legend's order) and "failed at paper scale". Nothing ticked in a group means
// no restriction by it. The bar stays below the header while the ledger scrolls (book.css). A section whose
// rows are all filtered out is hidden; a link to a hidden row clears the filters. Without JavaScript the
// ledger is the same tables, unfiltered.
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
    // The searchable text of a row, read before MathJax typesets it: the TeX of its symbols turned back into
    // the registry's ASCII (\(W_{K}^{i}\) -> W_K^i, \eta_{Y} -> eta_Y, ^\top -> ^T).
    const ascii = (text) => text.replace(/\\\(|\\\)/g, "").replace(/\^\\top/g, "^T")
      .replace(/\\(mathrm|operatorname)\{([^}]*)\}/g, "$2").replace(/\\([A-Za-z]+)/g, "$1")
      .replace(/[{}]/g, "").replace(/\s+/g, " ").toLowerCase();
    const entries = rows.map((row) => ({
      row,
      section: row.closest("section"),
      chapter: classValue(row, "chapter-"),
      verdict: classValue(row, "verdict-"),
      failedAtPaperScale: row.classList.contains("paper-scale-failed"),
      text: ascii(["td.ledger-claim", "td.ledger-statement"]
        .map((selector) => (row.querySelector(selector) || {}).textContent || "").join(" ")),
    }));

    const bar = document.createElement("fieldset");
    bar.className = "ledger-filter";
    bar.setAttribute("aria-label", "Filter the ledger's rows");

    const searchLine = document.createElement("div");
    searchLine.className = "ledger-search-line";
    const search = document.createElement("input");
    search.type = "search";
    search.id = "ledger-search";
    search.placeholder = "Search ids, statements, evidence";
    search.setAttribute("aria-label", "Search the ledger's ids, statements and evidence");
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

    const apply = () => {
      const terms = ascii(search.value).split(" ").filter(Boolean);
      const chapters = chapterBoxes.filter((box) => box.checked).map((box) => box.value);
      const verdicts = verdictBoxes.filter((box) => box.checked).map((box) => box.value);
      let visible = 0;
      entries.forEach((entry) => {
        const show = terms.every((term) => entry.text.includes(term))
          && (chapters.length === 0 || chapters.includes(entry.chapter))
          && (verdicts.length === 0 || verdicts.includes(entry.verdict))
          && (!failedBox.checked || entry.failedAtPaperScale);
        entry.row.hidden = !show;
        visible += show;
      });
      new Set(entries.map((entry) => entry.section)).forEach((section) => {
        if (section) section.hidden = !Array.from(section.querySelectorAll("tr.ledger-row")).some((row) => !row.hidden);
      });
      shown.textContent = `${visible} of ${entries.length} rows`;
    };
    const reset = () => {
      search.value = "";
      [...chapterBoxes, ...verdictBoxes, failedBox].forEach((box) => { box.checked = false; });
      apply();
    };
    search.addEventListener("input", apply);
    [...chapterBoxes, ...verdictBoxes, failedBox].forEach((box) => box.addEventListener("change", apply));
    clear.addEventListener("click", reset);
    window.addEventListener("hashchange", () => {
      const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target && target.closest("tr.ledger-row[hidden], section[hidden]")) {
        reset();
        target.scrollIntoView();
      }
    });
    const firstSection = rows[0].closest("section");
    firstSection.parentNode.insertBefore(bar, firstSection);
    apply();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
