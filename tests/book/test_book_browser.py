r"""Both editions of the book in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`) driven by selenium, every page served from 127.0.0.1 with every other
host unreachable (as offline).

On every page: math typeset by the local MathJax (`mjx-container` in every math element, no
TeX error, no raw `$$`, no backslash shown as a character, as `\text{self\_attention}` did
before textmacros), no console error, no failed or off-host request, every image loaded,
every internal link and anchor resolving, nothing wider than the column cut at its edge, and
at 1366x900 no code block or display equation wider than its column (nothing to scroll
sideways); no space before punctuation in the text (the chapters' invisible tags leave none);
every image with alt text that is not a file path and a caption. In the student edition
every stub and every visible-test cell carries its label and every withheld output a note.
Every chapter figure's smallest text is at least MIN_TEXT_PX as drawn, and on a 390 px phone
no chapter scrolls sideways as a whole. The landing page is styled, has a viewport and a
favicon. Search works from the built files. With ATTNLAB_SCREENSHOTS=1, a full-page screenshot of each chapter
goes to artifacts/screenshots/<edition>/ (for a person to look at; the checks above do not read them).

Without Chromium the tests skip, except in CI (CI=true), where they fail.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

import publish
from publish import layout

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic", "--disable-dev-shm-usage",
         "--window-size=1366,900", "--hide-scrollbars",
         # offline: every host but the local server is unreachable
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
SCREENSHOTS = layout.ROOT / "artifacts" / "screenshots"
TAKE_SCREENSHOTS = os.environ.get("ATTNLAB_SCREENSHOTS", "") not in ("", "0")  # PNG-encoding pages up to 16000 px tall
MAX_SCREENSHOT_HEIGHT = 16000
# A figure drawn at less than this fraction of its pixel width has text too small to read:
# matplotlib's default 10 pt at 100 dpi is 14 px, so below one half it is under 7 px. (A chapter's figure is held
# to MIN_TEXT_PX instead: its smallest text, measured when it was drawn, scaled as the page draws it.)
MIN_IMAGE_SCALE = 0.5
MIN_TEXT_PX = 9.0
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
NETWORK_SCHEMES = {"http", "https", "ws", "wss", "ftp"}  # not data:, blob:, chrome:// (the browser's own UI)
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _require_browser() -> None:
    """Skip (locally) or fail (CI) with the reason when Chromium or selenium is missing."""
    missing = [f"{name} at {path}" for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER))
               if not (Path(path).is_file() and os.access(path, os.X_OK))]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install selenium)")
    if missing:
        reason = (f"headless Chromium tests need {', '.join(missing)}; install with "
                  "`apt-get install -y chromium chromium-driver`")
        if IN_CI:
            pytest.fail(reason + " (CI=true: not skipping)")
        pytest.skip(reason)


# ---------------------------------------------------------------- fixtures


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves _build/ and records every request's path and status."""

    log: list[tuple[str, int]]

    def log_request(self, code="-", size="-"):  # noqa: ANN001 - http.server's signature
        self.server.requests.append((urllib.parse.unquote(self.path), int(code)))  # type: ignore[attr-defined]

    def log_message(self, *args):  # noqa: ANN002 - quiet
        pass


@pytest.fixture(scope="session")
def editions() -> dict[str, Path]:
    """Both editions, built once per test session."""
    return publish.build_once()


@pytest.fixture(scope="module")
def server(editions) -> Iterator[http.server.ThreadingHTTPServer]:
    """A local web server on 127.0.0.1 whose root is _build/ (`/student/html/...`)."""
    handler = functools.partial(_Handler, directory=str(layout.BUILD))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def driver():
    """Headless Chromium through chromedriver, with a fresh profile and console/network logs; quit when this
    file's tests end (a Chromium left open on its last page kept using CPU for the rest of the lane)."""
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="book-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    drv.set_script_timeout(60)
    drv.get("about:blank")  # leave the new-tab page Chromium opens with
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


# ---------------------------------------------------------------- what one page shows

WAIT_FOR_PAGE = """
const done = arguments[arguments.length - 1];
const images = () => Promise.all([...document.images].map(img => {
  img.loading = 'eager';
  return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
}));
const math = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
  ? MathJax.startup.promise.then(() => 'typeset', e => 'mathjax error: ' + e) : Promise.resolve('no mathjax');
Promise.all([math(), images()]).then(r => done(r[0]), e => done('error: ' + e));
"""

INSPECT = r"""
const skip = el => el.closest('pre, code, script, style, textarea, mjx-container, .highlight, .output');
const texts = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  if (node.parentElement && !skip(node.parentElement)) texts.push(node.textContent);
}
const prose = texts.join(' ');
const maths = [...document.querySelectorAll('.math')];
return {
  math: maths.length,
  untypeset: maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
  containers: document.querySelectorAll('mjx-container').length,
  tex_errors: [...document.querySelectorAll('mjx-merror')].map(m => m.textContent.slice(0, 80)),
  raw_dollars: (prose.match(/\$\$[^$]{0,60}|\$[^$\s][^$\n]{0,60}\$/g) || []).slice(0, 5),
  images: [...document.images].map(img => ({src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0})),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  ids: [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.getAttribute('name')),
  height: Math.max(document.documentElement.scrollHeight, document.body.scrollHeight),
  cut: cutAtTheEdge(),
  backslashes: typesetBackslashes(),
  wide: wideBlocks(),
  spaces: straySpaces(),
  figures: unlabelledFigures(),
  labels: [...document.querySelectorAll('article div.cell[class*="tag_book-"]')]
    .filter(c => ['none', 'normal', ''].includes(getComputedStyle(c, '::before').content))
    .map(c => 'a labelled cell shows no label: ' + c.className),
  labelled: Object.fromEntries(['your-code', 'solution', 'visible-tests', 'locked'].map(
    k => [k, document.querySelectorAll('article div.cell.tag_book-' + k).length])),
  unmarked: [...document.querySelectorAll('article div.cell.tag_answer-output')]
    .filter(c => !c.querySelector('.cell_output') && !(c.nextElementSibling && c.nextElementSibling.matches('.book-withheld')))
    .map(c => (c.querySelector('pre') || c).textContent.trim().slice(0, 60)),
  stubs: [...document.querySelectorAll('article div.cell')]
    .filter(c => /raise NotImplementedError/.test(c.textContent) && !/tag_book-/.test(c.className))
    .map(c => c.textContent.trim().slice(0, 60)),
};

// Code blocks and display equations wider than their box: the reader scrolls sideways to read them.
function wideBlocks() {
  const found = [];
  for (const el of document.querySelectorAll('article pre, article mjx-container[display="true"]')) {
    if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
      const what = el.tagName === 'PRE' ? 'code' : 'equation';
      found.push(`${what} ${el.scrollWidth} px in ${el.clientWidth} px: ` + el.textContent.trim().slice(0, 50));
    }
  }
  return found.slice(0, 10);
}

// A space before . , ; : ! ? in the text as the reader sees it (code, math and images count as words).
function straySpaces() {
  const opaque = 'pre, code, kbd, samp, script, style, textarea, .highlight, mjx-container, img, svg, button';
  const block = /^(P|LI|DIV|H[1-6]|TD|TH|DT|DD|TABLE|TR|UL|OL|FIGURE|FIGCAPTION|SECTION|BLOCKQUOTE|BR|ASIDE|DETAILS|SUMMARY)$/;
  const parts = [];
  (function walk(node) {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) { parts.push(child.textContent); continue; }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;  // comments are not shown
      const style = getComputedStyle(child);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      if (child.matches(opaque)) { parts.push('\u0001'); continue; }
      const isBlock = block.test(child.tagName);
      if (isBlock) parts.push('\u0002');
      walk(child);
      if (isBlock) parts.push('\u0002');
    }
  })(document.querySelector('article') || document.body);
  const text = parts.join('');
  const found = [];
  for (const m of text.matchAll(/(\S{0,30})\s+([.,;:!?])(?=\s|[\u0001\u0002]|$)/g)) {
    found.push((m[1] + ' ' + m[2]).replace(/\u0001/g, '[x]').replace(/\u0002/g, ''));
  }
  return found.slice(0, 10);
}

// Images without a caption or whose alt text is empty or a file path.
function unlabelledFigures() {
  const found = [];
  for (const img of document.querySelectorAll('article img')) {
    const alt = (img.getAttribute('alt') || '').trim();
    const name = (img.getAttribute('src') || '').split('/').pop().slice(0, 16);
    if (!alt || /(^|\/)[^\s\/]+\.(png|jpe?g|gif|svg|webp)$/i.test(alt) || alt.includes('_images/')) {
      found.push(`image ${name} has no alt text that describes it (alt: ${JSON.stringify(alt.slice(0, 40))})`);
    }
    const figure = img.closest('figure');
    const caption = figure && figure.querySelector('figcaption');
    if (!caption || !caption.textContent.trim()) found.push(`image ${name} has no caption`);
  }
  return found.slice(0, 10);
}

// Content wider than the column that no scrolling box holds: it is cut at the column's edge.
function cutAtTheEdge() {
  const column = document.querySelector('article') || document.body;
  const edge = column.getBoundingClientRect().right + 1;
  const found = [];
  for (const el of column.querySelectorAll('mjx-container, pre, table, img, .cell_output, .math')) {
    let scrolls = false;
    for (let a = el; a && a !== column; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === 'auto' || ox === 'scroll') { scrolls = true; break; }
    }
    const box = el.getBoundingClientRect();
    if (!scrolls && box.width > 0 && box.left + el.scrollWidth > edge) {
      found.push(el.tagName.toLowerCase() + ': ' + (el.textContent || el.getAttribute('src') || '').trim().slice(0, 60));
    }
  }
  return found.slice(0, 10);
}

// A backslash that typeset math shows as a character (\text{self\_attention} without textmacros).
function typesetBackslashes() {
  const found = [];
  if (!(window.MathJax && MathJax.startup && MathJax.startup.document && MathJax.startup.toMML)) return found;
  for (const item of MathJax.startup.document.math) {
    const leaves = MathJax.startup.toMML(item.root).match(/<(mtext|mi|mo|mn|ms)\b[^>]*>[^<]*\\[^<]*<\/\1>/g);
    if (leaves) found.push(String(item.math).slice(0, 80) + ' -> ' + leaves.join(' '));
  }
  return found.slice(0, 10);
}
"""


def _network_problems(entries: list[dict], origin: str, urls: dict[str, str]) -> list[str]:
    """Failed, off-host or >= 400 requests in Chromium's performance log.

    `urls` maps each request id seen starting to its URL and outlives one page, so that a request
    that fails after its page's log was read is still named. A failure whose start was never seen
    began before the first page was opened: the browser's own start page (its new-tab page looks
    for a remote one, which the host resolver rules refuse), not the book.
    """
    problems = []
    for entry in entries:
        message = json.loads(entry["message"])["message"]
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            urls[params["requestId"]] = url
            if url.split(":", 1)[0] in NETWORK_SCHEMES and not url.startswith(origin + "/"):
                problems.append(f"off-host request {url}")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            problems.append(f"HTTP {params['response']['status']} for {params['response']['url']}")
        elif method == "Network.loadingFailed" and not params.get("canceled") and params["requestId"] in urls:
            problems.append(f"request failed ({params.get('errorText')}): {urls[params['requestId']]}")
    return problems


def _screenshot(drv, height: int, path: Path) -> None:
    """A full-page PNG: the viewport stretched to the page's height (capped at MAX_SCREENSHOT_HEIGHT)."""
    import base64

    width = drv.execute_script("return window.innerWidth")
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": min(height, MAX_SCREENSHOT_HEIGHT), "deviceScaleFactor": 1, "mobile": False})
    try:
        drv.execute_async_script(WAIT_FOR_PAGE)  # images and math below the old fold
        shot = drv.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        drv.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def _pages(html: Path) -> list[str]:
    """Every HTML page of an edition, relative to its html/ folder."""
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if not p.relative_to(html).as_posix().startswith("_static/"))


def _labels(html: Path, page: str) -> dict[str, int] | None:
    """The labels (`publish.pages`) the staged notebook of a chapter page gives, by kind; None for another page."""
    from publish import pages

    edition = html.parent.name
    if edition not in layout.EDITIONS or not page.startswith("chapters/"):
        return None
    notebook = layout.Edition(edition).stage / Path(page).with_suffix(".ipynb")
    if not notebook.is_file():
        return None
    shown = [c.metadata.get("tags", []) for c in nbformat.read(str(notebook), as_version=4).cells]
    tags = [t for cell_tags in shown if "remove-cell" not in cell_tags for t in cell_tags]
    return {tag.removeprefix("book-"): tags.count(tag) for tag in pages.LABELS}


def _resolve(url: str, base: str, root: Path) -> tuple[Path, str] | None:
    """The file a same-origin URL serves, and its fragment; None for another origin or scheme."""
    if not url.startswith(base):
        return None
    parsed = urllib.parse.urlsplit(url)
    path = root / urllib.parse.unquote(parsed.path).lstrip("/")
    if parsed.path.endswith("/"):
        path = path / "index.html"
    return path, urllib.parse.unquote(parsed.fragment)


def check_pages(driver, origin: str, html: Path, pages: list[str], shots: Path | None = None) -> dict[str, list[str]]:
    """Open each page of the edition in `html` (served under `origin`); the problems found, by page."""
    base = origin + "/" + html.relative_to(layout.BUILD).as_posix() + "/"
    problems: dict[str, list[str]] = {}
    ids: dict[Path, set[str]] = {}
    links: list[tuple[str, str]] = []
    urls: dict[str, str] = {}
    driver.get("about:blank")
    driver.get_log("browser"), driver.get_log("performance")  # drop earlier entries
    for page in pages:
        found: list[str] = []
        driver.get(base + page)
        state = driver.execute_async_script(WAIT_FOR_PAGE)
        info = driver.execute_script(INSPECT)
        if state.startswith(("error", "mathjax error")):
            found.append(state)
        if info["math"] and state != "typeset":
            found.append(f"{info['math']} math elements but MathJax did not run ({state})")
        found += [f"math not typeset: {t!r}" for t in info["untypeset"]]
        found += [f"TeX error: {t!r}" for t in info["tex_errors"]]
        found += [f"raw TeX left in the text: {t!r}" for t in info["raw_dollars"]]
        found += [f"math shows a backslash: {t!r}" for t in info["backslashes"]]
        found += [f"cut at the column's edge: {t!r}" for t in info["cut"]]
        found += [f"wider than its column at 1366 px: {t!r}" for t in info["wide"]]
        found += [f"space before punctuation: {t!r}" for t in info["spaces"]]
        found += info["figures"] + info["labels"]
        found += [f"withheld output not marked: {t!r}" for t in info["unmarked"]]
        found += [f"stub without its label: {t!r}" for t in info["stubs"]]
        expected = _labels(html, page)
        if expected is not None and expected != info["labelled"]:
            found.append(f"labelled cells {info['labelled']}, the notebook has {expected}")
        found += [f"image not loaded: {img['src']}" for img in info["images"] if not img["ok"]]
        found += [f"console {e['level']}: {e['message'][:300]}" for e in driver.get_log("browser")
                  if e["level"] == "SEVERE"]
        found += _network_problems(driver.get_log("performance"), origin, urls)
        if page.startswith("chapters/"):
            DRAWN_AND_PHONE[base + page] = _drawn_and_phone(driver)
        ids[html / page] = set(info["ids"])
        links += [(page, url) for url in info["links"]]
        if shots is not None and page.startswith("chapters/"):
            _screenshot(driver, info["height"], shots / (Path(page).stem + ".png"))
        if found:
            problems[page] = found
    for page, url in links:
        target = _resolve(url, origin + "/", layout.BUILD)
        if target is None:
            continue  # another scheme or host: a plain link, nothing is loaded
        path, fragment = target
        if not path.resolve().is_relative_to(html.resolve()):
            problems.setdefault(page, []).append(f"link leaves the edition: {url}")
        elif not path.is_file():
            problems.setdefault(page, []).append(f"broken link: {url}")
        elif fragment and path.suffix == ".html":
            if path not in ids:  # a page not in `pages`: read its anchors from the file
                ids[path] = set(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", path.read_text(errors="ignore")))
            if fragment not in ids[path]:
                problems.setdefault(page, []).append(f"missing anchor #{fragment} in {path.relative_to(html)}")
    return problems


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("edition", layout.EDITIONS)
def test_every_page_renders_offline(edition: str, driver, editions, server) -> None:
    html = editions[edition]
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    pages = _pages(html)
    assert "index.html" in pages and any(p.startswith("chapters/") for p in pages), pages
    shots = SCREENSHOTS / edition
    shutil.rmtree(shots, ignore_errors=True)
    problems = check_pages(driver, origin, html, pages, shots if TAKE_SCREENSHOTS else None)
    bad_status = [(p, s) for p, s in server.requests if p.startswith(f"/{edition}/") and s >= 400]
    assert not bad_status, f"the server answered errors: {bad_status[:10]}"
    assert not problems, "\n".join(f"{page}:\n  " + "\n  ".join(found) for page, found in problems.items())
    chapters = [p for p in pages if p.startswith("chapters/")]
    if TAKE_SCREENSHOTS:
        assert sorted(p.name for p in shots.glob("*.png")) == sorted(Path(p).stem + ".png" for p in chapters)


def _entry(method: str, **params) -> dict:
    """One performance-log entry as chromedriver returns it."""
    return {"message": json.dumps({"message": {"method": method, "params": params}})}


def test_a_failed_request_is_named_even_when_it_fails_a_page_later() -> None:
    """A request seen starting is reported when it fails, on whichever page's log the failure lands;
    a failure whose start came before the first page (the browser's start page) is not the book's."""
    origin = "http://127.0.0.1:8000"
    urls: dict[str, str] = {}
    first = _network_problems([_entry("Network.loadingFailed", requestId="startup", errorText="net::ERR_NAME_NOT_RESOLVED"),
                               _entry("Network.requestWillBeSent", requestId="7", request={"url": f"{origin}/a.png"})],
                              origin, urls)
    later = _network_problems([_entry("Network.loadingFailed", requestId="7", errorText="net::ERR_FAILED")], origin, urls)
    assert first == [] and later == [f"request failed (net::ERR_FAILED): {origin}/a.png"]


DOCTORED = """
<div class="tex2jax_ignore mathjax_ignore"><p>Left raw: $$x^2$$.</p></div>
<span class="math notranslate nohighlight">\\(x^1^2\\)</span>
<span class="math notranslate nohighlight">\\(\\text{planted \\oops}\\)</span>
<div style="overflow: hidden"><pre style="overflow: visible">planted wide line """ + "x" * 400 + """</pre></div>
<img src="../_images/PLANTED" style="width: 10px" alt="a shrunk figure">
<img src="../_images/no-such-figure.png" alt="missing">
<a href="errata.html#no-such-anchor">a missing anchor</a> <a href="no-such-page.html">a missing page</a>
<script src="https://cdn.jsdelivr.net/npm/no-such-package/index.js"></script>
<script>console.error("planted error")</script>
<div class="highlight"><pre>planted long code """ + "y" * 300 + """</pre></div>
<div class="math notranslate nohighlight">\\[ """ + " + ".join(f"x_{{{i}}}" for i in range(150)) + """ \\]</div>
<p>The planted claim allows <!-- claim: planted -->. So it does.</p>
<img src="../_images/PLANTED" alt="../_images/PLANTED">
<div class="cell tag_answer-output"><div class="cell_input"><pre>planted_training()</pre></div></div>
<div class="cell"><div class="cell_input"><pre>def planted(): raise NotImplementedError()</pre></div></div>
"""


def test_the_checks_catch_a_broken_page(driver, editions, server) -> None:
    """A copy of a math page with one planted fault of each kind: every fault is reported."""
    source = editions["student"]
    html = layout.BUILD / "browser-selftest" / "html"
    shutil.rmtree(html.parent, ignore_errors=True)
    (html / "front").mkdir(parents=True)
    for name in ("_static", "_images"):
        (html / name).symlink_to(source / name, target_is_directory=True)
    shutil.copy(source / "front" / "errata.html", html / "front" / "errata.html")
    page = (source / "front" / "notation.html").read_text()
    assert "<article" in page and '<span class="math' in page
    figure = sorted((source / "_images").glob("*.png"))[0].name  # a real figure, drawn 10 px wide
    doctored = re.sub(r"(<article\b[^>]*>)", lambda m: m.group(1) + DOCTORED.replace("PLANTED", figure), page, count=1)
    (html / "front" / "notation.html").write_text(doctored)
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        found = "\n".join(check_pages(driver, origin, html, ["front/notation.html"])["front/notation.html"])
        shrunk = small_text(driver.execute_script(DRAWN), {}, "front/notation.html")
    finally:
        shutil.rmtree(html.parent, ignore_errors=True)
    for expected in ("raw TeX left in the text: '$$x^2", "TeX error", "image not loaded", "no-such-figure.png",
                     "missing anchor #no-such-anchor", "broken link", "no-such-page.html",
                     "off-host request https://cdn.jsdelivr.net", "planted error",
                     "math shows a backslash: '\\\\text{planted \\\\oops}", "cut at the column's edge: 'pre: planted wide",
                     "wider than its column at 1366 px: 'code", "wider than its column at 1366 px: 'equation",
                     "space before punctuation: 'allows .'", "has no alt text that describes it", "has no caption",
                     "withheld output not marked: 'planted_training()'", "stub without its label: 'def planted()"):
        assert expected in found, f"{expected!r} not reported; the checks reported:\n{found}"
    assert [f for f in shrunk if figure[:12] in f], shrunk


def _figure_cells(edition: str) -> dict[str, tuple[str, float | None]]:
    """Image file name (myst-nb names a PNG by the sha256 of its bytes) -> ('chapter cell <id>', the smallest
    text drawn in it in the PNG's pixels, as the kernel measured it: publish/kernel_startup.py)."""
    found = {}
    for notebook in sorted((layout.Edition(edition).stage / "chapters").glob("*.ipynb")):
        for cell in nbformat.read(str(notebook), as_version=4).cells:
            for output in cell.get("outputs", []):
                data = output.get("data", {}).get("image/png")
                if data:
                    found[hashlib.sha256(base64.b64decode(data)).hexdigest() + ".png"] = (
                        f"{notebook.stem} cell {cell.get('id')}", output.get("metadata", {}).get("book_smallest_text_px"))
    return found


DRAWN = """
return [...document.querySelectorAll('article img')].filter(img => img.naturalWidth > 0)
  .map(img => ({src: img.currentSrc || img.src, scale: img.getBoundingClientRect().width / img.naturalWidth}));
"""


# A chapter page's figures as drawn at 1366 px and its width on a phone, by URL: read while the render test has the
# page open (a page typesets its math in seconds; opening each chapter page once per edition, not twice)
DRAWN_AND_PHONE: dict[str, tuple[list[dict], list[int]]] = {}


def _drawn_and_phone(driver) -> tuple[list[dict], list[int]]:
    """The open page's figures as drawn (DRAWN), then [scroll width, viewport width] on a PHONE."""
    drawn = driver.execute_script(DRAWN)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    try:
        width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return drawn, width


def small_text(figures: list[dict], cells: dict[str, tuple[str, float | None]], page: str) -> list[str]:
    """The figures whose smallest text is under MIN_TEXT_PX as drawn (or, not measured, drawn under MIN_IMAGE_SCALE)."""
    small = []
    for figure in figures:
        name = figure["src"].rsplit("/", 1)[-1]
        where, text_px = cells.get(name, (page, None))
        if text_px is None and figure["scale"] < MIN_IMAGE_SCALE:
            small.append(f"{where}: drawn at {figure['scale']:.0%} of its width ({name[:12]})")
        elif text_px is not None and text_px * figure["scale"] < MIN_TEXT_PX:
            small.append(f"{where}: its smallest text is {text_px * figure['scale']:.1f} px as drawn "
                         f"({text_px:.1f} px at {figure['scale']:.0%}; {name[:12]})")
    return small


def test_small_text_is_found_in_a_figure_drawn_narrower_than_its_pixels() -> None:
    """The text-size rule, on figures measured and not: 9.7 px drawn at 90% is too small, at 100% it is not."""
    cells = {"a.png": ("ch9 cell a", 9.72), "b.png": ("ch9 cell b", None)}
    figures = [{"src": "x/_images/a.png", "scale": 0.9}, {"src": "x/_images/a.png", "scale": 1.0},
               {"src": "x/_images/b.png", "scale": 0.4}, {"src": "x/_images/b.png", "scale": 0.6}]
    assert small_text(figures, cells, "p") == ["ch9 cell a: its smallest text is 8.7 px as drawn (9.7 px at 90%; a.png)",
                                                "ch9 cell b: drawn at 40% of its width (b.png)"]


@pytest.mark.parametrize("edition", layout.EDITIONS)
def test_every_figure_is_readable(edition: str, driver, editions, server) -> None:
    """No chapter's figure has text under MIN_TEXT_PX as the page draws it (a figure wider than the column is
    scaled down: draw it narrower, or with larger fonts), and on a phone no chapter scrolls sideways as a whole
    (a wide table or block scrolls in its own box)."""
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    cells = _figure_cells(edition)
    small, phone = [], []
    for page in [p for p in _pages(editions[edition]) if p.startswith("chapters/")]:
        url = f"{origin}/{edition}/html/{page}"
        if url not in DRAWN_AND_PHONE:  # not opened by this file's render test (run alone, or deselected)
            driver.get(url)
            driver.execute_async_script(WAIT_FOR_PAGE)
            DRAWN_AND_PHONE[url] = _drawn_and_phone(driver)
        drawn, width = DRAWN_AND_PHONE[url]
        small += small_text(drawn, cells, page)
        if width[0] > width[1] + 1:
            phone.append(f"{page}: {width[0]} px wide on a {width[1]} px phone")
    assert not small, "figures too small to read:\n" + "\n".join(small)
    assert not phone, "pages that scroll sideways on a phone:\n" + "\n".join(phone)


LANDING = """
const icon = document.querySelector('link[rel~="icon"]');
return {viewport: !!document.querySelector('meta[name="viewport"]'), icon: icon && icon.href,
        styled: getComputedStyle(document.body).fontFamily !== getComputedStyle(document.createElement('p')).fontFamily
                || document.styleSheets.length > 0,
        links: [...document.querySelectorAll('a[href]')].map(a => a.href)};
"""


def test_the_landing_page_is_styled_and_links_both_editions(driver, editions, server) -> None:
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    driver.get(f"{origin}/html/index.html")
    page = driver.execute_script(LANDING)
    assert page["viewport"] and page["styled"], page
    assert page["icon"] and _resolve(page["icon"], origin + "/", layout.BUILD)[0].is_file(), page
    targets = {_resolve(url, origin + "/", layout.BUILD)[0].resolve() for url in page["links"]}
    assert targets == {(editions[e] / "index.html").resolve() for e in layout.EDITIONS}, page["links"]


@pytest.mark.parametrize("edition", layout.EDITIONS)
def test_search_finds_pages_from_the_built_files(edition: str, driver, editions, server) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    origin = f"http://127.0.0.1:{server.server_address[1]}"
    driver.get(f"{origin}/{edition}/html/search.html?q=softmax")
    results = WebDriverWait(driver, 30).until(
        lambda d: d.execute_script(
            "const r = [...document.querySelectorAll('#search-results ul.search li a')].map(a => a.href);"
            "return r.length ? r : null;"))
    assert any("/chapters/" in url for url in results), results
    stray = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not stray, stray


def test_a_prose_answer_cannot_cover_the_manual_grading_page(driver, tmp_path) -> None:
    """Issue 32.4 in Chromium: a prose answer's `\\style{position:fixed;...}{...}` covers nothing on the TA's page (on
    main it covered the whole page with its text), the page's own stylesheet applies under its CSP, and a `style`
    attribute put into the page past the sanitiser is ignored by the browser (the CSP allows no inline style)."""
    from autograder import manual, pages
    from tests.adversarial.outputs import COVER, MATH

    question = manual.Question("ch1", "nb", "prose", 2.0, "Why?", "YOUR ANSWER HERE")
    items = [{"student": "mallory", "score": None, "comment": None, "responded": True,
              "html": pages.safe_markdown(MATH[0]), "text": MATH[0]}]
    text = pages.render("manual.html.j2", title="ch1 prose", question=question, prompt=None, model=None, rubric=None,
                        items=items)
    forged = text.replace("<h2>Answers</h2>", '<h2>Answers</h2><div id="forged" style="' + COVER[7:-1] + '">x</div>')
    for name, html in (("page", text), ("forged", forged)):
        (tmp_path / f"{name}.html").write_text(html, encoding="utf-8")
    found = {}
    for name in ("page", "forged"):
        driver.get((tmp_path / f"{name}.html").as_uri())
        found[name] = driver.execute_script(
            "const fixed = [...document.querySelectorAll('*')].filter(e => getComputedStyle(e).position === 'fixed');"
            "const h1 = document.querySelector('h1'); const r = h1.getBoundingClientRect();"
            "const top = document.elementFromPoint(r.left + 5, r.top + r.height / 2);"
            "return [fixed.length, h1.contains(top),"
            "        getComputedStyle(document.querySelector('.banner')).borderLeftStyle];")
    assert found["page"] == [0, True, "solid"], found  # nothing fixed, the title on top, our stylesheet applied
    assert found["forged"] == [0, True, "solid"], found  # the CSP ignores a style attribute
