// A run's page follows the run while it goes (GET /ui/runs/{id}/events, Server-Sent
// Events): each event becomes a row of the progress table, and the end sets the run's
// status and closes the stream. Text goes in as text, never as markup.
(function () {
  "use strict";
  var table = document.getElementById("progress");
  if (!table || !table.dataset.follow) {
    return;
  }
  var rows = table.tBodies[0];
  var status = document.getElementById("run-status");
  var live = document.getElementById("live");
  var source = new EventSource(table.dataset.follow);
  function add(message) {
    var event = JSON.parse(message.data);
    var row = rows.insertRow();
    row.dataset.seq = event.seq;
    [event.seq, event.kind, event.at, event.text].forEach(function (value) {
      row.insertCell().textContent = value;
    });
    if (event.kind === "status" || event.kind === "end") {
      status.textContent = event.status;
      status.className = "badge s-" + event.status;
    }
    if (event.kind === "end") {
      source.close();
      live.textContent = "The run ended.";
    }
  }
  // A stream refused (no place for it, the run gone) or closed for good: say so.
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) {
      live.textContent = "No longer following the run: reload the page to see where it stands.";
    }
  };
  ["status", "turn", "tool_call", "tool_result", "end"].forEach(function (kind) {
    source.addEventListener(kind, add);
  });
})();
