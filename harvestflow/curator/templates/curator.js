// Links to Airflow's own pages (task logs) from the curator pages.
//
// Airflow shows the curator views in an iframe sandboxed without "allow-top-navigation", so
// the browser blocks a target="_top" link there (nothing happens on click). The frame has the
// same origin as Airflow's UI, so instead we ask the UI's single-page app to route to the page:
// a new history entry in the top window and the popstate event its router listens to (Back
// returns to the curator view). Outside a frame, or when that fails, the link works as usual.
document.addEventListener("click", function (event) {
  var link = event.target.closest ? event.target.closest("a[data-airflow-page]") : null;
  if (!link || window.top === window || event.button !== 0) return;
  if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  try {
    window.top.history.pushState(null, "", link.href);
    window.top.dispatchEvent(new PopStateEvent("popstate", { state: null }));
    event.preventDefault();
  } catch (err) {
    // another origin: leave the click to the browser
  }
});

// Links that open a new tab ("view this capture": the replay of a job's captures). Airflow's
// iframe is sandboxed without "allow-popups" either, so there the browser opens nothing on
// click. The frame has Airflow's origin: the same link is followed from the top window's
// document, which may open tabs (the click's user activation reaches the frames above it).
// Outside a frame, or when that fails, the link works as usual.
document.addEventListener("click", function (event) {
  var link = event.target.closest ? event.target.closest("a[target=_blank]") : null;
  if (!link || window.top === window || event.button !== 0) return;
  if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  try {
    var top = window.top.document;
    var twin = top.createElement("a");
    twin.href = link.href;
    twin.target = "_blank";
    twin.rel = "noopener";
    twin.style.display = "none";
    top.body.appendChild(twin);
    twin.click();
    twin.remove();
    event.preventDefault();
  } catch (err) {
    // another origin: leave the click to the browser
  }
});
