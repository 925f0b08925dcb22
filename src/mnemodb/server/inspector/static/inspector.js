// The inspector's small behaviours: confirmations, select-all, and the change log's live
// rows. No inline script anywhere (the Content-Security-Policy forbids it).
(function () {
  "use strict";

  // A button with data-confirm asks before its form is sent; cancelling sends nothing.
  // Taken in the capture phase, before htmx (boosted forms) sees the submit.
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // A checkbox with data-select-all="NAME" ticks every checkbox named NAME in its form.
  document.addEventListener("change", function (event) {
    var box = event.target;
    var name = box && box.getAttribute && box.getAttribute("data-select-all");
    if (!name || !box.form) return;
    box.form.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (other) {
      other.checked = box.checked;
    });
  });

  // The change log: entries made since the page was drawn are added at the top, every 2 s.
  var timer = null;
  function poll() {
    var rows = document.getElementById("change-rows");
    if (!rows || !rows.getAttribute("data-live")) return;
    var url = rows.getAttribute("data-live");
    url += (url.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(rows.getAttribute("data-after"));
    fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        if (!html.trim()) return;
        var holder = document.createElement("tbody");
        holder.innerHTML = html;
        var fresh = holder.querySelectorAll("tr[data-seq]");
        if (!fresh.length) return;
        var newest = Number(fresh[0].getAttribute("data-seq"));
        if (newest > Number(rows.getAttribute("data-after"))) rows.setAttribute("data-after", String(newest));
        for (var i = fresh.length - 1; i >= 0; i--) {
          if (!rows.querySelector('tr[data-seq="' + fresh[i].getAttribute("data-seq") + '"]')) {
            fresh[i].classList.add("fresh");
            rows.insertBefore(fresh[i], rows.firstChild);
          }
        }
      })
      .catch(function () { /* the next poll tries again */ });
  }
  function startPolling() {
    if (timer === null && document.getElementById("change-rows")) timer = window.setInterval(poll, 2000);
    if (timer !== null && !document.getElementById("change-rows")) { window.clearInterval(timer); timer = null; }
  }
  document.addEventListener("DOMContentLoaded", startPolling);
  document.addEventListener("htmx:afterSettle", startPolling);
})();
