// The claims ledger: a row of checkboxes, one per verdict with its count, that show or hide the rows.
// Without JavaScript the ledger is the same table, unfiltered.
document.addEventListener("DOMContentLoaded", () => {
  const rows = Array.from(document.querySelectorAll("tr.ledger-row"));
  if (rows.length === 0) return;
  const verdictOf = (row) => Array.from(row.classList).find((name) => name.startsWith("verdict-"));
  const counts = new Map();
  rows.forEach((row) => counts.set(verdictOf(row), (counts.get(verdictOf(row)) || 0) + 1));

  const bar = document.createElement("fieldset");
  bar.className = "ledger-filter";
  bar.innerHTML = "<legend>Show the rows whose verdict is</legend>";
  counts.forEach((count, verdict) => {
    const label = document.createElement("label");
    label.className = verdict;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = true;
    box.addEventListener("change", () => {
      rows.filter((row) => verdictOf(row) === verdict).forEach((row) => { row.hidden = !box.checked; });
    });
    label.append(box, ` ${verdict.slice("verdict-".length).replace(/-/g, " ")} (${count})`);
    bar.append(label);
  });
  document.querySelector("table.ledger-table").closest("section").before(bar);
});
