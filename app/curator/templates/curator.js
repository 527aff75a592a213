// Links the browser refuses to follow when the curator pages are shown inside Airflow's UI.
//
// Airflow shows the curator views in an iframe sandboxed without "allow-top-navigation" and
// without "allow-popups": a target="_top" link (Airflow's own pages, e.g. task logs) or a
// target="_blank" one ("view this capture": a job's replay) does nothing on click there. The
// frame has the same origin as Airflow's UI, so each is followed from the top window instead.
// Outside a frame, on a modified click, or when that fails, the link works as usual.

// Airflow's pages: ask the UI's single-page app to route to the page, with a new history entry
// in the top window and the popstate event its router listens to (Back returns here).
function openAirflowPage(top, href) {
  top.history.pushState(null, "", href);
  top.dispatchEvent(new PopStateEvent("popstate", { state: null }));
}

// New tabs: the same link followed from the top window's document, which may open tabs (the
// click's user activation reaches the frames above it).
function openNewTab(top, href) {
  var twin = top.document.createElement("a");
  twin.href = href;
  twin.target = "_blank";
  twin.rel = "noopener";
  twin.style.display = "none";
  top.document.body.appendChild(twin);
  twin.click();
  twin.remove();
}

var FRAMED_LINKS = [
  ["a[data-airflow-page]", openAirflowPage],
  ["a[target=_blank]", openNewTab],
];

document.addEventListener("click", function (event) {
  if (window.top === window || event.button !== 0 || !event.target.closest) return;
  if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  for (var i = 0; i < FRAMED_LINKS.length; i++) {
    var link = event.target.closest(FRAMED_LINKS[i][0]);
    if (!link) continue;
    try {
      FRAMED_LINKS[i][1](window.top, link.href);
      event.preventDefault();
    } catch (err) {
      // another origin: leave the click to the browser
    }
    return;
  }
});

// Parts of a page that refresh by themselves (the overview's running crawls): an element with
// data-refresh="<url>" gets that URL's HTML every data-every seconds; a failed fetch keeps the
// figures shown and says when they were last read.
function refreshPart(part) {
  var every = Math.max(parseInt(part.getAttribute("data-every"), 10) || 10, 2) * 1000;
  function again() {
    fetch(part.getAttribute("data-refresh"), { credentials: "same-origin", cache: "no-store" })
      .then(function (resp) {
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        return resp.text();
      })
      .then(function (html) {
        part.innerHTML = html;
        part.removeAttribute("data-stale");
      })
      .catch(function () {
        part.setAttribute("data-stale", "not refreshed since " + new Date().toLocaleTimeString());
      })
      .finally(function () {
        setTimeout(again, every);
      });
  }
  setTimeout(again, every);
}

// The selection record form's budget, frequency and depth: as one is chosen, the others' values
// the save would refuse with it say so, with the reason (the server's check: /records/choices).
function showChoices(form) {
  var selects = form.querySelectorAll("select[data-choices]");
  if (!selects.length) return;
  function update() {
    var params = new URLSearchParams();
    selects.forEach(function (s) { params.set(s.name, s.value); });
    fetch(selects[0].getAttribute("data-choices") + "?" + params.toString(),
          { credentials: "same-origin", cache: "no-store" })
      .then(function (resp) {
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        return resp.json();
      })
      .then(function (found) {
        selects.forEach(function (s) {
          var why = found[s.name] || {};
          Array.prototype.forEach.call(s.options, function (o) {
            if (!(o.value in why)) return;
            var reason = why[o.value];
            o.textContent = o.value + (reason ? " — not with these: " + reason : "");
            o.title = reason || "";
            o.classList.toggle("refused", !!reason);
          });
        });
      })
      .catch(function () { /* the save still checks */ });
  }
  selects.forEach(function (s) { s.addEventListener("change", update); });
}

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("[data-refresh]").forEach(refreshPart);
  document.querySelectorAll("#record-form").forEach(showChoices);
});
