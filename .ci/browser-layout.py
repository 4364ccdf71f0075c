#!/usr/bin/env python3
"""The pages' layout as a browser lays it out, measured at phone and desktop widths.

Usage: browser-layout.py ARTIFACTS URL NAME [URL NAME ...]

Starts headless Chromium with the DevTools protocol on a pipe (--remote-debugging-pipe: the
browser reads commands on fd 3 and answers on fd 4, each message JSON ended by a NUL byte), so
no port, no websocket library and no script in the page are needed. For every page and every
width (390 px, a phone, emulated as one; 1280 px, a desktop) it loads the page, then measures:

- horizontal overflow: the document's scroll width against the viewport's width, and every box
  of the page that scrolls sideways (a table too wide for its scrolling box is overflow too);
- every chart's text as drawn: the computed font size times the scale of its SVG's transform
  to the screen (getScreenCTM), which must be at least 11 CSS px;
- the elements that stick out past the right edge, named, when the page overflows.

It keeps a full-page screenshot NAME-WIDTH.png and the measures in layout.json, prints one line
per page and width, and exits 1 if any page overflows or any chart text is under 11 px.
"""

import base64
import json
import os
import subprocess
import sys

WIDTHS = [(390, 844, True), (1280, 900, False)]
MIN_TEXT_PX = 11.0

MEASURE = r"""
(() => {
  const doc = document.documentElement;
  const vw = doc.clientWidth;
  const out = { viewport: vw, scrollWidth: doc.scrollWidth, height: doc.scrollHeight,
                texts: 0, smallest: null, small: [], outside: [] };
  for (const t of document.querySelectorAll('svg text')) {
    const ctm = t.getScreenCTM();
    if (!ctm) continue;
    const size = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(ctm.a, ctm.b);
    out.texts += 1;
    if (out.smallest === null || size < out.smallest) out.smallest = size;
    if (size < %MIN%) out.small.push(`${t.textContent.trim()} ${size.toFixed(1)}px`);
  }
  const scrolls = (e) => { for (let p = e; p; p = p.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX) && p !== doc && p !== document.body) return true;
  } return false; };
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5 && !scrolls(e.parentElement)) {
      out.outside.push(`${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : ''} right=${r.right.toFixed(0)}`);
    }
  }
  out.sideways = [];
  for (const e of document.body.querySelectorAll('*')) {
    if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1) {
      out.sideways.push(`${e.tagName.toLowerCase()}.${e.className} ${e.scrollWidth}px in ${e.clientWidth}px`);
    }
  }
  out.outside = out.outside.slice(0, 12);
  out.small = out.small.slice(0, 12);
  return out;
})()
""".replace("%MIN%", str(MIN_TEXT_PX))


class Browser:
    """Chromium on a DevTools pipe: send a command, read until its answer, keep the events."""

    def __init__(self):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # the browser's fd 3 is what it reads, fd 4 what it writes: the pipe ends are moved
        # there by a shell redirection, through 7 and 8 so neither move undoes the other.
        assert not {to_browser_r, from_browser_w} & {7, 8}
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--hide-scrollbars", "--no-first-run", "--disable-extensions",
                 "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(
            ["sh", "-c", f'exec 7<&{to_browser_r} 8>&{from_browser_w}; exec chromium "$@" 3<&7 4>&8 7<&- 8>&-', "chromium", *flags],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read_message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method, session):
        for k, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                del self.events[k]
                return m
        while True:
            m = self._read_message()
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def measure(browser, url, width, height, mobile, png):
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.send("Page.enable", session)
    browser.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                 deviceScaleFactor=1, mobile=mobile)
    browser.send("Page.navigate", session, url=url)
    browser.wait_for("Page.loadEventFired", session)
    result = browser.send("Runtime.evaluate", session, expression=MEASURE, returnByValue=True)
    found = result["result"]["value"]
    # the whole page in one picture: the viewport made as tall as the document
    browser.send("Emulation.setDeviceMetricsOverride", session, width=width,
                 height=max(height, int(found["height"])), deviceScaleFactor=1, mobile=mobile)
    shot = browser.send("Page.captureScreenshot", session, format="png")
    with open(png, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    browser.send("Target.closeTarget", targetId=target)
    return found


def main():
    artifacts, pages = sys.argv[1], sys.argv[2:]
    browser = Browser()
    failures, report = [], {}
    try:
        for url, name in zip(pages[0::2], pages[1::2]):
            for width, height, mobile in WIDTHS:
                png = os.path.join(artifacts, f"{name}-{width}.png")
                m = measure(browser, url, width, height, mobile, png)
                report[f"{name}-{width}"] = m
                smallest = "none" if m["smallest"] is None else f"{m['smallest']:.1f}px"
                print(f"layout: {name} at {width}px: document {m['scrollWidth']}px wide in a "
                      f"{m['viewport']}px viewport; {m['texts']} chart texts, smallest {smallest}")
                if m["scrollWidth"] > m["viewport"]:
                    failures.append(f"{name} at {width}px overflows: {m['scrollWidth']}px > "
                                    f"{m['viewport']}px; sticking out: {', '.join(m['outside'])}")
                if m["sideways"]:
                    failures.append(f"{name} at {width}px: a box scrolls sideways: "
                                    f"{', '.join(m['sideways'])}")
                if m["small"]:
                    failures.append(f"{name} at {width}px: chart text under {MIN_TEXT_PX:g}px: "
                                    f"{', '.join(m['small'])}")
    finally:
        browser.close()
    with open(os.path.join(artifacts, "layout.json"), "w") as f:
        json.dump(report, f, indent=2)
    if failures:
        print("\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
