// Live updates for ferry app: when the server says the device changed
// (Server-Sent Events on /events), fetch this page again and swap in its
// fresh content. Every page works without this script (plain forms).
"use strict";
(function () {
  if (!window.EventSource || !window.DOMParser || !window.fetch) return;
  var root = document.documentElement;
  var busy = false, again = false, pending = false;

  // editing reports whether the user is typing in a field a swap would
  // reset: the swap waits until they leave it.
  function editing() {
    var a = document.activeElement;
    if (!a) return false;
    if (a.tagName === "TEXTAREA" && !a.readOnly) return true;
    return a.tagName === "INPUT" && !a.readOnly && a.type !== "hidden" && a.type !== "checkbox" && a.value !== "";
  }

  function refresh() {
    if (busy) { again = true; return; }
    if (editing()) { pending = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live"), cur = document.getElementById("live");
        if (fresh && cur && !editing()) {
          var focus = document.activeElement && document.activeElement.id;
          cur.replaceWith(document.adoptNode(fresh));
          document.title = doc.title;
          if (focus && document.getElementById(focus)) document.getElementById(focus).focus();
          root.dataset.updates = String(Number(root.dataset.updates || "0") + 1);
        } else if (fresh) {
          pending = true;
        }
      })
      .catch(function () { pending = true; })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  document.addEventListener("focusout", function () {
    setTimeout(function () { if (pending && !editing()) { pending = false; refresh(); } }, 0);
  });

  var es = new EventSource("/events");
  es.addEventListener("open", function () { root.dataset.live = "on"; });
  es.addEventListener("error", function () { root.dataset.live = "off"; });
  es.addEventListener("change", refresh);
})();
