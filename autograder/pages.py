"""The instructor's and the students' HTML pages: one Jinja2 environment, one page shell, one style.

Feedback (`feedback`), manual grading (`manual`), similarity (`similarity`) and report pages are
templates in `autograder/templates/` (package data) that extend `page.html.j2`: a page with no
script, that loads nothing and renders math as MathML, offline. Its Content-Security-Policy
(`csp`) forbids scripts and every resource but data: images, and allows one style: the page
shell's stylesheet (`stylesheet`: templates/style.css and Pygments' colours), by its hash, so no
`style` attribute and no other `<style>` takes effect, whatever reaches the page.

Autoescape is on for every template, and every value a template prints passes `clean` first
(ANSI codes dropped, control characters shown escaped): what a student wrote is text on the
page, never markup. Markup reaches a page only as `Markup` made here: the course's own
markdown (`markdown`), a student's markdown rendered safely (`safe_markdown`: raw HTML off,
only data: images, no links), both passed through `sanitise` (nh3: an allowlist of HTML and
MathML elements and attributes, so latex2mathml's `\\style` and `\\href` leave nothing), and
Pygments' highlighted code (class names only). Authoring comments (`<!-- claim: ... -->`,
`<!-- given -->`, invisible in Jupyter and the book) never reach a page (`without_comments`).
"""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
from importlib.resources import files

from markupsafe import Markup

from autograder.tables import printable

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


@functools.cache
def stylesheet() -> str:
    """The pages' one stylesheet: Pygments' colours for highlighted code, then templates/style.css."""
    from pygments.formatters import HtmlFormatter

    pygments = HtmlFormatter(style="default").get_style_defs("pre.code")
    return pygments + "\n" + files("autograder").joinpath("templates/style.css").read_text(encoding="utf-8")


@functools.cache
def csp() -> str:
    """The pages' Content-Security-Policy: no script, nothing remote, data: images, and only `stylesheet` as style
    (by its hash: a `style` attribute or another `<style>` is ignored)."""
    digest = base64.b64encode(hashlib.sha256(stylesheet().encode("utf-8")).digest()).decode()
    return (f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def clean(value: object) -> object:
    """What a template prints: Markup as is, anything else as text without ANSI codes or raw control characters."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    return printable(ANSI.sub("", str(value)), newlines=True)


def esc(text: object) -> str:
    """`clean`, then HTML-escaped: for the few strings built outside a template."""
    return html.escape(str(clean(text)), quote=True)


@functools.cache
def environment():  # -> jinja2.Environment
    """The pages' Jinja2 environment: templates from the package, autoescape, `clean` on every output."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("autograder", "templates"), autoescape=True, finalize=clean,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals.update(csp=Markup(csp()), stylesheet=Markup(stylesheet()))  # ours: quotes as written
    env.filters.update(num=number, pct=lambda x: f"{x:.0%}")
    return env


def render(template: str, **context: object) -> str:
    """One page from `template` (a name under autograder/templates/)."""
    return environment().get_template(template).render(**context)


def warm(*templates: str) -> None:
    """Import and build what pages need (Jinja2 and `templates` compiled, the markdown renderers, MathML, nh3,
    Pygments) ahead of the first page: done while a grading run's sandboxes start (autograder.startup)."""
    for template in templates:
        environment().get_template(template)
    _markdown(True), _markdown(False)
    mathml("x")
    sanitise("<p>x</p>")
    highlight("x")


def number(x: float | None) -> str:
    """A score as the pages write it: 1.5, 2, or – for none."""
    return "–" if x is None else f"{x:g}"


# ----------------------------------------------------------------------------- markdown and code


@functools.cache
def _markdown(links: bool):
    """CommonMark + tables + $math$, raw HTML off, math as MathML, images only from data: URIs; with
    `links`, only links to other sites or to this page (#...) stay links: a relative link (a book page)
    has no target beside a feedback page, so its text stands alone."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin).enable("table")

    def math(display: str):
        def rule(renderer, tokens, idx, options, env) -> str:
            return mathml(tokens[idx].content, display)
        return rule

    def image(renderer, tokens, idx, options, env) -> str:
        src = tokens[idx].attrGet("src") or ""
        alt = html.escape(tokens[idx].content or "image")
        return f'<img src="{html.escape(src)}" alt="{alt}">' if src.startswith("data:image/") else f"[{alt}]"

    def link_open(renderer, tokens, idx, options, env) -> str:
        href = str(tokens[idx].attrGet("href") or "")
        keep = links and (href.startswith(("https://", "http://")) or href.startswith("#"))
        env.setdefault("open", []).append(keep)
        return renderer.renderToken(tokens, idx, options, env) if keep else ""

    def link_close(renderer, tokens, idx, options, env) -> str:
        keep = env.get("open", [False]).pop() if env.get("open") else False
        return renderer.renderToken(tokens, idx, options, env) if keep else ""

    def cell_open(renderer, tokens, idx, options, env) -> str:  # a column's alignment as a class, not a style
        align = re.fullmatch(r"text-align:(left|center|right)", str(tokens[idx].attrGet("style") or ""))
        tokens[idx].attrs.pop("style", None)
        if align:
            tokens[idx].attrSet("class", f"align-{align[1]}")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("math_inline", math("inline"))
    md.add_render_rule("math_block", math("block"))
    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    md.add_render_rule("link_close", link_close)
    md.add_render_rule("th_open", cell_open)
    md.add_render_rule("td_open", cell_open)
    return md


def without_comments(text: str) -> str:
    """`text` without its HTML comments (the chapters' authoring tags, `<!-- claim: ID -->`, `<!-- given -->`,
    `<!-- seed -->`, which Jupyter and the book never show); linear in the text."""
    out, at = [], 0
    while (start := text.find("<!--", at)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break  # no comment closes after this point
        out.append(text[at:start])
        at = end + 3
    out.append(text[at:])
    return "".join(out)


def markdown(text: str) -> Markup:
    """The course's own markdown (trusted text) as HTML, without its authoring comments."""
    return Markup(sanitise(_markdown(True).render(without_comments(text), {}), links=True))


def safe_markdown(text: str) -> Markup:
    """A student's markdown as HTML that can do nothing: control characters escaped, raw HTML shown as text,
    no link, images only from data: URIs, math as MathML, and only allowlisted elements and attributes."""
    return Markup(sanitise(_markdown(False).render(printable(ANSI.sub("", text), newlines=True), {}), links=False))


# What rendered markdown may hold: markdown-it's elements, MathML's presentation elements, and attributes that
# neither style nor link (no style, href, id, event handler; `class` only ours; lengths small and not negative).
HTML_TAGS = {"p", "em", "strong", "code", "pre", "ul", "ol", "li", "blockquote", "h1", "h2", "h3", "h4", "h5",
             "h6", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "img", "s", "del"}
MATHML_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac",
               "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "menclose",
               "mpadded", "mphantom", "merror", "mmultiscripts", "mprescripts", "none", "semantics"}
ATTRIBUTES = {"img": {"src", "alt"}, "ol": {"start"}, "code": {"class"}, "th": {"class"}, "td": {"class"},
              "math": {"display"}, "mi": {"mathvariant"}, "mn": {"mathvariant"}, "mtext": {"mathvariant"},
              "mo": {"stretchy", "fence", "separator", "lspace", "rspace", "form", "largeop", "movablelimits",
                     "minsize", "maxsize", "symmetric", "accent", "mathvariant"},
              "mstyle": {"displaystyle", "scriptlevel"}, "mfrac": {"linethickness"}, "menclose": {"notation"},
              "mspace": {"width", "height", "depth", "linebreak"}, "mpadded": {"width", "height", "depth"},
              "mover": {"accent"}, "munder": {"accentunder"}, "munderover": {"accent", "accentunder"},
              "mtable": {"columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines"},
              "mtd": {"columnalign", "columnspan", "rowspan"}}
CLASSES = {"tex", "align-left", "align-center", "align-right"}
LENGTHS = {"width", "height", "depth", "lspace", "rspace", "minsize", "maxsize", "linethickness", "rowspacing",
           "columnspacing"}
LENGTH = re.compile(r"(?:\d{1,2}(?:\.\d{1,4})?|\.\d{1,4})(?:em|ex|mu|pt|px|%)?|[a-z]{0,20}mathspace")


def _attribute(tag: str, name: str, value: str) -> str | None:
    """An allowlisted attribute's value as kept (None drops it): our classes only, small non-negative lengths,
    data: images, script levels 0 to 2."""
    if name == "class":
        return value if value in CLASSES else None
    if name in LENGTHS:
        return value if all(LENGTH.fullmatch(v) for v in value.split()) else None
    if name == "src":
        return value if value.startswith("data:image/") else None
    if name == "scriptlevel":  # TeX's display, text, script and scriptscript styles; a negative one enlarges
        return value if value in ("0", "1", "2") else None
    return value


def sanitise(fragment: str, links: bool = False) -> str:
    """Rendered markdown (and its MathML) reduced to the allowlist: HTML_TAGS and MATHML_TAGS with ATTRIBUTES (and,
    with `links`, `a` with an http(s) or in-page href), comments dropped."""
    try:
        import nh3
    except ImportError:  # an environment set up before pages needed it: say how to bring it up to date
        raise ImportError("the pages' sanitiser needs nh3 (pyproject.toml): run `source scripts/venv.sh`, or "
                          "pip install -e '.[dev]'") from None

    tags = HTML_TAGS | MATHML_TAGS | ({"a"} if links else set())
    attributes = {**ATTRIBUTES, **({"a": {"href"}} if links else {})}
    return nh3.clean(fragment, tags=tags, attributes=attributes, attribute_filter=_attribute, strip_comments=True,
                     link_rel=None, url_schemes={"http", "https", "data"} if links else {"data"})


def mathml(tex: str, display: str = "inline") -> str:
    """TeX as MathML (no script, no font download); the TeX itself, escaped, if it cannot be converted."""
    from latex2mathml.converter import convert

    try:
        return convert(tex, display=display).replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    except Exception:  # noqa: BLE001 - latex2mathml raises many kinds on TeX it does not know
        return f'<code class="tex">{html.escape(tex)}</code>'


def highlight(code: str) -> Markup:
    """Python source, highlighted by Pygments (spans with its class names: the colours are in `stylesheet`), control
    characters escaped."""
    from pygments import highlight as pyg
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return Markup(pyg(printable(code, newlines=True), PythonLexer(), HtmlFormatter(nowrap=True)))


def marked(code: str, spans: list[tuple[int, int]]) -> Markup:
    """`code` as text with the character ranges `spans` in <mark>."""
    out, at = [], 0
    for start, end in sorted(spans):
        start, end = max(int(start), at), int(end)
        out.append(esc(code[at:start]))
        if end > start:
            out.append(f"<mark>{esc(code[start:end])}</mark>")
        at = max(at, end)
    out.append(esc(code[at:]))
    return Markup("".join(out))
