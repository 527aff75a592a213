"""Behaviours of rendered pages (crawler/rendering/renderer.py runs them in each page's tab).

- ``consent``: consent dialogs answered by DuckDuckGo's autoconsent rules (shipped unmodified in
  ``autoconsent/``), a fallback by button wording (``wording``), the answer kept per host;
- ``run``: the page's behaviours in order, bounded, each action kept (``Action``);
- ``page.js``: our in-page steps (expanders, "load more", media autofetch and muted play);
- ``sites``: curators' site-specific JavaScript behaviours, chosen by URL pattern;
- ``report``: ``reports/behaviours-report.txt``.
"""
