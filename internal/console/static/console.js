// oncely console: the only script. It updates a redrive's progress page
// from /jobs/{id}/progress while the job runs, and reloads it once the job
// has ended (to show the outcome and drop the cancel button). No build
// step, no dependencies; pages work without it (reload by hand).
"use strict";
(function () {
  function start() {
    var el = document.querySelector("[data-testid=job]");
    if (!el || el.getAttribute("data-status") !== "running") return;
    var url = el.getAttribute("data-progress-url");
    function set(id, v) {
      var n = el.querySelector("[data-testid=" + id + "]");
      if (n) n.textContent = String(v);
    }
    function tick() {
      fetch(url, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (s) {
          set("job-status", s.status);
          set("job-redriven", s.redriven);
          set("job-seen", s.seen);
          set("job-total", s.total);
          set("job-skipped", s.skipped);
          var p = el.querySelector("[data-testid=job-progress]");
          if (p) p.value = s.redriven;
          if (s.status !== "running") { window.location.reload(); return; }
          setTimeout(tick, 500);
        })
        .catch(function () { setTimeout(tick, 2000); });
    }
    setTimeout(tick, 500);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
