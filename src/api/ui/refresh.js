// Pages that change on their own (the overview, a schedule's runs) bring their content up
// to date every few seconds without reloading under the reader: the page is fetched again
// and its content replaced in place. Not while the page is hidden, the reader is typing in
// one of its fields, or has opened a run's output to read; a failed fetch waits for the
// next turn. Without this script the page shows what it showed when it loaded.
(function () {
  "use strict";
  var main = document.querySelector("main[data-refresh]");
  if (!main) {
    return;
  }
  var every = Number(main.dataset.refresh) * 1000;
  function reading() {
    var active = document.activeElement;
    return document.hidden ||
      (active && main.contains(active) && active.matches("input, textarea, select")) ||
      main.querySelector("details[open]") !== null;
  }
  function refresh() {
    if (reading()) {
      return;
    }
    fetch(window.location.href, { credentials: "same-origin", redirect: "error" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || reading()) {
          return;
        }
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        if (next) {
          main.replaceChildren.apply(main, Array.prototype.slice.call(next.childNodes));
        }
      })
      .catch(function () {});
  }
  window.setInterval(refresh, every);
})();
