// The timeline page's own behaviour, on top of htmx (README, "The timeline page").
// No inline script and no eval: the page's Content-Security-Policy allows scripts from 'self' only.
(function () {
  "use strict";

  var localFormat = new Intl.DateTimeFormat(undefined, {
    hour: "2-digit", minute: "2-digit", timeZoneName: "short"
  });

  // The page's own words, in the workspace's language (the server renders them into <body>).
  function text(name, fallback) {
    var value = document.body && document.body.getAttribute("data-text-" + name);
    return value || fallback;
  }

  // Each time is printed by the server in the workspace's zone, with its offset (UTC+8); the
  // viewer's local time is added beside it, unless the viewer's offset at that moment is the
  // one shown (data-shown-offset, minutes east of UTC): it would only repeat it.
  function showLocalTimes(root) {
    root.querySelectorAll("[data-local-time]").forEach(function (el) {
      if (el.textContent) { return; }
      var moment = new Date(el.getAttribute("data-local-time"));
      if (isNaN(moment.getTime())) { return; }
      var shown = el.getAttribute("data-shown-offset");
      if (shown !== null && shown !== "" && Number(shown) === -moment.getTimezoneOffset()) { return; }
      el.textContent = text("local", "({time} local)").replace("{time}", localFormat.format(moment));
    });
  }

  // An entry's evidence is loaded the first time its <details> opens (one keyset page).
  function wireEvidence(root) {
    root.querySelectorAll("details.evidence").forEach(function (details) {
      if (details.dataset.wired) { return; }
      details.dataset.wired = "1";
      details.addEventListener("toggle", function () {
        var body = details.querySelector(".evidence-body");
        if (details.open && body && window.htmx) { window.htmx.trigger(body, "ui:open"); }
      });
      if (details.open) { details.dispatchEvent(new Event("toggle")); }
    });
  }

  function announce(text) {
    var live = document.getElementById("live");
    if (!live) { return; }
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 50);
  }

  var openEvidence = [];

  document.addEventListener("DOMContentLoaded", function () {
    showLocalTimes(document);
    wireEvidence(document);
    document.documentElement.classList.add("js");
  });

  // The poll does not replace the list while someone is editing in it or has focus in a form.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (!elt.hasAttribute || !elt.hasAttribute("data-poll")) { return; }
    var editing = elt.querySelector("form.edit-form");
    var active = document.activeElement;
    if (editing || (active && active.closest && active.closest("#entries-region form"))) {
      evt.preventDefault();
      return;
    }
    openEvidence = Array.prototype.map.call(
      elt.querySelectorAll("details.evidence[open]"), function (d) { return d.dataset.entry; });
  });

  document.addEventListener("htmx:afterSettle", function (evt) {
    var root = evt.detail.elt && evt.detail.elt.isConnected ? evt.detail.elt : document;
    openEvidence.forEach(function (id) {
      var details = document.querySelector('details.evidence[data-entry="' + id + '"]');
      if (details && !details.open) { details.open = true; }
    });
    openEvidence = [];
    wireEvidence(document);
    showLocalTimes(root.parentNode || document);
    showLocalTimes(document);
    if (evt.detail.requestConfig && evt.detail.requestConfig.elt) {
      var form = evt.detail.requestConfig.elt;
      if (form.hasAttribute && form.hasAttribute("data-reset-on-success") &&
          evt.detail.xhr && evt.detail.xhr.status < 300) {
        form.reset();
      }
    }
  });

  // Server answers name what happened (HX-Trigger: ui:announce), for screen readers.
  document.addEventListener("ui:announce", function (evt) {
    announce(typeof evt.detail === "string" ? evt.detail : (evt.detail && evt.detail.value) || "");
  });

  document.addEventListener("htmx:responseError", function () {
    announce(text("refused", "The server refused the request. Reload the page and try again."));
  });
  document.addEventListener("htmx:sendError", function () {
    announce(text("unreachable", "The server could not be reached; the page will retry."));
  });
})();
