// harvestflow's in-page behaviours (crawler/rendering/behaviours/run.py evaluates this file as one
// expression, then calls one of its functions). Plain DOM code of our own: every action is
// bounded by its caller's arguments and returns what it did, for crawl.log and the report.
(() => {
  const VISIBLE_MIN = 2;

  function visible(el) {
    if (!el || !el.getBoundingClientRect) return false;
    const r = el.getBoundingClientRect();
    if (r.width < VISIBLE_MIN || r.height < VISIBLE_MIN) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none' && Number(s.opacity) > 0.05;
  }

  function label(el) {
    const raw = el.innerText || el.value || el.getAttribute('aria-label') || el.title || '';
    return raw.replace(/\s+/g, ' ').trim().toLowerCase().replace(/[.!…»›→>✓×]+$/u, '').trim();
  }

  // a click that never leaves the page: anchors with a real target are followed as links
  function navigates(el) {
    if (el.tagName === 'A') {
      const href = (el.getAttribute('href') || '').trim();
      return href !== '' && !href.startsWith('#') && !/^javascript:/i.test(href);
    }
    const form = el.form;
    return !!form && (el.type || '').toLowerCase() === 'submit' && !el.hasAttribute('formnovalidate');
  }

  const CLICKABLE = 'button, [role=button], a, input[type=button], input[type=submit], [onclick]';

  function words(text, table) {
    return table.some((w) => text === w);
  }

  // the consent dialog a button belongs to: an ancestor (or the frame's whole document) whose
  // text speaks of cookies or consent, and that is a dialog, a fixed or sticky overlay, or a
  // frame's document of its own
  function consentBox(el, hints) {
    const framed = window !== window.top;
    for (let n = el; n && n !== document.documentElement; n = n.parentElement) {
      const s = getComputedStyle(n);
      const overlay =
        s.position === 'fixed' ||
        s.position === 'sticky' ||
        n.getAttribute('role') === 'dialog' ||
        n.getAttribute('role') === 'alertdialog' ||
        n.getAttribute('aria-modal') === 'true' ||
        n.tagName === 'DIALOG' ||
        (framed && n === document.body);
      if (overlay) {
        const text = (n.innerText || '').toLowerCase();
        return hints.some((h) => text.includes(h)) ? n : null;
      }
    }
    return null;
  }

  return {
    // click the consent button whose whole label is one of `table` (the template's choice:
    // accept or reject words); {clicked: label} or {}
    consent(table, hints) {
      for (const el of document.querySelectorAll(CLICKABLE)) {
        if (!visible(el) || navigates(el)) continue;
        const text = label(el);
        if (!text || text.length > 60 || !words(text, table)) continue;
        if (!consentBox(el, hints)) continue;
        el.click();
        return { clicked: text };
      }
      return {};
    },

    // hide consent overlays (a dialog, or a fixed box speaking of cookies with a button in
    // it), unlock the page's scrolling; the number hidden
    hideConsent(hints) {
      let hidden = 0;
      for (const el of document.querySelectorAll(CLICKABLE)) {
        if (!visible(el)) continue;
        const box = consentBox(el, hints);
        if (box && box !== document.body) {
          box.style.setProperty('display', 'none', 'important');
          hidden++;
        }
      }
      for (const frame of document.querySelectorAll('iframe')) {
        const name = `${frame.id} ${frame.name} ${frame.title} ${frame.src}`.toLowerCase();
        if (visible(frame) && hints.some((h) => name.includes(h))) {
          frame.style.setProperty('display', 'none', 'important');
          hidden++;
        }
      }
      if (hidden) {
        for (const el of [document.documentElement, document.body]) {
          if (el) el.style.setProperty('overflow', 'auto', 'important');
        }
      }
      return hidden;
    },

    // one "load more" / "show more" / next-page button clicked (never one that navigates, nor
    // one that loaded nothing the last time): {clicked, size} or {}
    loadMore(table) {
      for (const el of document.querySelectorAll(CLICKABLE)) {
        if (el.dataset.hfExhausted || !visible(el) || navigates(el)) continue;
        const text = label(el);
        if (!text || text.length > 40 || !words(text, table)) continue;
        el.dataset.hfLast = '1';
        el.scrollIntoView({ block: 'center' });
        el.click();
        return { clicked: text };
      }
      return {};
    },

    // how much the page holds now: elements and resources (compared after a click)
    size() {
      return document.getElementsByTagName('*').length + performance.getEntriesByType('resource').length;
    },

    // the button clicked last loaded nothing: never clicked again
    exhaust() {
      for (const el of document.querySelectorAll('[data-hf-last]')) {
        el.dataset.hfExhausted = '1';
        delete el.dataset.hfLast;
      }
    },

    forget() {
      for (const el of document.querySelectorAll('[data-hf-last]')) delete el.dataset.hfLast;
    },

    // expanders opened: closed <details>, collapsed accordions (aria-expanded=false) and
    // unselected tabs, at most `max`; the number opened
    expand(max) {
      let opened = 0;
      for (const d of document.querySelectorAll('details:not([open])')) {
        if (opened >= max) return opened;
        d.open = true;
        opened++;
      }
      const toggles = document.querySelectorAll(
        '[aria-expanded=false]:not([aria-haspopup]), [role=tab][aria-selected=false]',
      );
      for (const el of toggles) {
        if (opened >= max) break;
        if (!visible(el) || navigates(el) || el.closest('nav, header, [role=navigation], [role=menubar]')) continue;
        el.click();
        opened++;
      }
      return opened;
    },

    // media sources the page has not loaded yet — srcset and <picture> candidates, lazy
    // (data-*) sources, audio/video/track sources, posters — fetched through the tab (so the
    // crawl captures them), at most `max`; the URLs fetched
    async autofetch(max, timeoutMs) {
      const have = new Set(performance.getEntriesByType('resource').map((e) => e.name));
      have.add(location.href);
      const want = new Set();
      const add = (u) => {
        if (!u || want.size >= max) return;
        try {
          const abs = new URL(u.trim(), document.baseURI).href;
          if (/^https?:/i.test(abs) && !have.has(abs)) want.add(abs);
        } catch (e) {
          /* not a URL */
        }
      };
      const srcset = (v) => {
        for (const part of (v || '').split(/,\s+/)) add(part.trim().split(/\s+/)[0]);
      };
      const LAZY = ['data-src', 'data-lazy-src', 'data-original', 'data-lazy', 'data-url', 'data-full'];
      for (const img of document.querySelectorAll('img, source, video, audio, track, input[type=image]')) {
        add(img.getAttribute('src'));
        srcset(img.getAttribute('srcset'));
        srcset(img.getAttribute('data-srcset'));
        add(img.getAttribute('poster'));
        for (const a of LAZY) add(img.getAttribute(a));
        if (img.loading === 'lazy') img.loading = 'eager';
      }
      const urls = Array.from(want);
      const stop = new Promise((resolve) => setTimeout(resolve, timeoutMs));
      const fetches = urls.map((u) =>
        fetch(u, { mode: 'no-cors', credentials: 'include' })
          .then((r) => (r.body ? r.body.cancel() : null))
          .catch(() => null),
      );
      await Promise.race([Promise.allSettled(fetches), stop]);
      return urls;
    },

    // audio and video played muted (their sources load as a reader's would); the number
    async play(max) {
      let played = 0;
      for (const m of document.querySelectorAll('audio, video')) {
        if (played >= max) break;
        m.muted = true;
        m.preload = 'auto';
        try {
          await Promise.race([m.play(), new Promise((resolve) => setTimeout(resolve, 1000))]);
          played++;
        } catch (e) {
          /* no playable source: its sources were fetched by autofetch */
        }
      }
      return played;
    },

    pauseAll() {
      for (const m of document.querySelectorAll('audio, video')) m.pause();
    },
  };
})()
