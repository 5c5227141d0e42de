// Live updates for ferry app: when the server says the device changed
// (Server-Sent Events on /events), fetch this page again and swap in its
// fresh content. Every page works without this script (plain forms).
"use strict";
(function () {
  if (!window.EventSource || !window.DOMParser || !window.fetch) return;
  var root = document.documentElement;
  var busy = false, again = false, pending = false;
  // shown is the live part as the server last sent it: a fresh copy equal
  // to it changes nothing and is not swapped in.
  var live0 = document.getElementById("live");
  var shown = live0 ? live0.outerHTML : "";

  // pressed is true from a pointer's press to its release: a swap in
  // between would put the release on another node than the press, and the
  // browser would drop the click. leaving is true once a form is sent: the
  // page is on its way out.
  var pressed = false, leaving = false;

  // editing reports whether the user is typing in a field a swap would
  // reset, or clicking: the swap waits until they are done.
  function editing() {
    if (pressed || leaving) return true;
    var a = document.activeElement;
    if (!a) return false;
    if (a.tagName === "TEXTAREA" && !a.readOnly) return true;
    return a.tagName === "INPUT" && !a.readOnly && a.type !== "hidden" && a.type !== "checkbox" && a.value !== "";
  }

  // typed collects what the person typed or chose and has not sent yet,
  // by field id, to carry over into the fresh page.
  function typed(root) {
    var out = {};
    root.querySelectorAll("input[id], textarea[id], select[id]").forEach(function (e) {
      if (e.readOnly || e.type === "hidden") return;
      if (e.tagName === "SELECT") {
        if (!Array.prototype.every.call(e.options, function (o) { return o.selected === o.defaultSelected; })) out[e.id] = e.value;
      } else if (e.type === "checkbox") {
        if (e.checked !== e.defaultChecked) out[e.id] = e.checked;
      } else if (e.value !== e.defaultValue) {
        out[e.id] = e.value;
      }
    });
    return out;
  }

  function restore(kept) {
    Object.keys(kept).forEach(function (id) {
      var e = document.getElementById(id);
      if (!e) return;
      if (e.type === "checkbox") e.checked = kept[id]; else e.value = kept[id];
    });
  }

  // focusKey names the focused control so that the same control can be
  // found in a fresh copy of the page: by id, else by its label, link or
  // form (a list's "Mark done" buttons have no id). A keyboard user keeps
  // their place across a live update.
  function focusKey(e) {
    if (!e || e === document.body) return null;
    if (e.id) return { id: e.id };
    var form = e.form ? e.form.getAttribute("action") : null;
    return { tag: e.tagName, label: e.getAttribute("aria-label"), href: e.getAttribute("href"), form: form, text: e.textContent };
  }

  function refocus(key, root) {
    if (!key) return;
    if (key.id) {
      var byId = document.getElementById(key.id);
      if (byId) byId.focus();
      return;
    }
    var all = root.querySelectorAll(key.tag);
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      if (e.getAttribute("aria-label") === key.label && e.getAttribute("href") === key.href &&
          (e.form ? e.form.getAttribute("action") : null) === key.form && e.textContent === key.text) {
        e.focus();
        return;
      }
    }
  }

  function refresh() {
    if (busy) { again = true; return; }
    if (editing()) { pending = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "Accept": "text/html", "X-Ferry-Refresh": "1" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live"), cur = document.getElementById("live");
        if (fresh && fresh.outerHTML === shown) {
          // nothing new to show
        } else if (fresh && cur && !editing()) {
          shown = fresh.outerHTML;
          var focus = focusKey(document.activeElement);
          var kept = typed(cur);
          var flash = cur.querySelector(".flash");
          if (flash && !fresh.querySelector(".flash")) fresh.querySelector("header").after(flash);
          var placed = document.adoptNode(fresh);
          cur.replaceWith(placed);
          restore(kept);
          document.title = doc.title;
          refocus(focus, placed);
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

  function later() {
    setTimeout(function () { if (pending && !editing()) { pending = false; refresh(); } }, 0);
  }
  document.addEventListener("focusout", later);
  document.addEventListener("pointerdown", function () { pressed = true; }, true);
  document.addEventListener("pointerup", function () { pressed = false; later(); }, true);
  document.addEventListener("pointercancel", function () { pressed = false; later(); }, true);
  window.addEventListener("blur", function () { pressed = false; later(); });
  document.addEventListener("submit", function () { leaving = true; });
  window.addEventListener("pageshow", function () { leaving = false; });

  var es = new EventSource("/events");
  es.addEventListener("open", function () { root.dataset.live = "on"; });
  es.addEventListener("error", function () { root.dataset.live = "off"; });
  es.addEventListener("change", refresh);
})();
