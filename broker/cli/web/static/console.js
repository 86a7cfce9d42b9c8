// The Odradek Console's only script: filters of what is already on the page. Pages work without it.
"use strict";

function filterRows(input, rows, counter) {
  const needle = input.value.toLowerCase();
  let shown = 0;
  for (const row of rows) {
    const match = !needle || row.textContent.toLowerCase().includes(needle);
    row.classList.toggle("hidden", !match);
    if (match) shown += 1;
  }
  if (counter) counter.textContent = needle ? `${shown} of ${rows.length} match` : "";
}

const messageFilter = document.getElementById("message-filter");
if (messageFilter) {
  const rows = Array.from(document.querySelectorAll("#messages tr.record"));
  const counter = document.getElementById("filter-count");
  messageFilter.addEventListener("input", () => filterRows(messageFilter, rows, counter));
}

const onlyOverrides = document.getElementById("only-overrides");
if (onlyOverrides) {
  const defaults = Array.from(document.querySelectorAll("#configs tr.default"));
  const apply = () => defaults.forEach((row) => row.classList.toggle("hidden", onlyOverrides.checked));
  onlyOverrides.addEventListener("change", apply);
  apply();
}
