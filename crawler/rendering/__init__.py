"""Rendering pages in headless Chromium: the tab driver, the recording proxy, behaviours,
screenshots and the read-back of earlier captures."""
