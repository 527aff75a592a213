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
