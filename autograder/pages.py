"""The instructor's and the students' HTML pages: one Jinja2 environment, one page shell, one style.

Feedback (`feedback`), manual grading (`manual`) and similarity (`similarity`) pages are
templates in `autograder/templates/` (package data) that extend `page.html.j2`: a page with
no script, that loads nothing (a Content-Security-Policy forbids scripts and every resource
but inline styles and data: images) and renders math as MathML, offline.

Autoescape is on for every template, and every value a template prints passes `clean` first
(ANSI codes dropped, control characters shown escaped): what a student wrote is text on the
page, never markup. Markup reaches a page only as `Markup` made here: the course's own
markdown (`markdown`), a student's markdown rendered safely (`safe_markdown`: raw HTML off,
only data: images, no links), and Pygments' highlighted code.
"""
from __future__ import annotations

import functools
import html
import re

from markupsafe import Markup

from autograder.tables import printable

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
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
    env.globals.update(csp=Markup(CSP))  # ours: quotes as written
    env.filters.update(num=number, pct=lambda x: f"{x:.0%}")
    return env


def render(template: str, **context: object) -> str:
    """One page from `template` (a name under autograder/templates/)."""
    return environment().get_template(template).render(**context)


def warm(*templates: str) -> None:
    """Import and build what pages need (Jinja2 and `templates` compiled, the markdown renderers, MathML,
    Pygments) ahead of the first page: done while a grading run's sandboxes start, 0.1-0.2 s less after it."""
    for template in templates:
        environment().get_template(template)
    _markdown(True), _markdown(False)
    mathml("x")
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

    md.add_render_rule("math_inline", math("inline"))
    md.add_render_rule("math_block", math("block"))
    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    md.add_render_rule("link_close", link_close)
    return md


def markdown(text: str) -> Markup:
    """The course's own markdown (trusted text) as HTML."""
    return Markup(_markdown(True).render(text, {}))


def safe_markdown(text: str) -> Markup:
    """A student's markdown as HTML that can do nothing: control characters escaped, raw HTML shown as text,
    no link, images only from data: URIs, math as MathML."""
    return Markup(_markdown(False).render(printable(ANSI.sub("", text), newlines=True), {}))


def mathml(tex: str, display: str = "inline") -> str:
    """TeX as MathML (no script, no font download); the TeX itself, escaped, if it cannot be converted."""
    from latex2mathml.converter import convert

    try:
        return convert(tex, display=display).replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    except Exception:  # noqa: BLE001 - latex2mathml raises many kinds on TeX it does not know
        return f'<code class="tex">{html.escape(tex)}</code>'


def highlight(code: str) -> Markup:
    """Python source, highlighted by Pygments (its spans carry colours only), control characters escaped."""
    from pygments import highlight as pyg
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return Markup(pyg(printable(code, newlines=True), PythonLexer(),
                      HtmlFormatter(nowrap=True, noclasses=True, style="default")))


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
