"""Attacks on what the instructor's tools write from student text, not on the grader: spreadsheets and pages.

`SPREADSHEET`: one-line prose (an answer, a name, a comment) that a spreadsheet runs as a formula once it
splits the CSV on a separator other than ours (LibreOffice with `;` or tab ticked, Excel in a `;`
locale): the formula starts a piece after the separator, after blanks or a quote. `formula_cells`
reads a CSV every way a spreadsheet may split it and returns the pieces that start a formula.

`MATH`: prose whose math latex2mathml turns into attributes a page must not carry: `\\style` (a fixed
box over the whole page), `\\href` (a link), and the attributes MathML itself allows that do the same.
`page_problems` says what of a page could style it or link away.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
from html.parser import HTMLParser

SPREADSHEET = (
    "The sums;=cmd|' /C calc'!A0",
    "reductions\t=1+2",
    "a line\n+SUM(1,2)",
    'quoted;"=1+1"',
    "after a comma, @SUM(A1)",
    "spaces;  -2+3",
    "=HYPERLINK(\"http://evil\",\"click\")",
)

FORMULA = ("=", "+", "-", "@")

# Names and answers that take over a terminal printed raw: clear the screen, an OSC 8 link, a carriage return that
# overwrites the line, a right-to-left override that reverses what follows (a display name Canvas lets one choose).
TERMINAL = ("Ada\x1b[2J\x1b[H", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "mallory\rada     ", "Lovelace, \u202eadA")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # what a terminal must not get raw



def formula_cells(text: str) -> list[str]:
    """The pieces of CSV `text` that start a formula (after blanks and quotes) when read with `,`, `;` or tab as the
    separator, with the CSV's quoting or with none (a naive split of each line)."""
    found = []
    for sep in (",", ";", "\t"):
        pieces = [x for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep) for x in row]
        pieces += [x for line in text.splitlines() for x in line.split(sep)]
        found += [x for x in pieces if x.lstrip(" \t\r\n\"").startswith(FORMULA)]
    return found


COVER = r"\style{position:fixed;top:0;left:0;width:100%;height:100%;background:#fff;z-index:2147483647}"
MATH = (
    rf"${COVER}{{\text{{every answer on this page is graded already}}}}$",
    r"$\href{https://evil.example/steal}{\text{see the solution}}$",
    r"$\mathcolor{red}{x}$ and $$\style{font-size:900px}{y}$$",
)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))


def page_problems(text: str) -> list[str]:
    """What of an HTML page could restyle it or link from it: a CSP that allows any style but the page's own `<style>`
    (by its hash: no inline style), a `style` attribute, an `href` anywhere but on a web or in-page link."""
    found = []
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    sheets = re.findall(r"<style>(.*?)</style>", text, re.S)
    if csp is None or len(sheets) != 1:
        return [f"{'no CSP' if csp is None else 'a CSP'} and {len(sheets)} <style> elements"]
    digest = base64.b64encode(hashlib.sha256(sheets[0].encode()).digest()).decode()
    styles = re.search(r"style-src ([^;]*)", csp[1])
    if styles is None or styles[1].split() != [f"'sha256-{digest}'"]:
        found.append(f"the CSP's style-src is {styles[1] if styles else 'absent'}, not the page's own stylesheet")
    parser = _Tags()
    parser.feed(text)
    for tag, attrs in parser.tags:
        if "style" in attrs:
            found.append(f"<{tag} style={attrs['style']!r}>")
        href = attrs.get("href")
        if href is not None and (tag != "a" or not href.startswith(("#", "https://", "http://"))):
            found.append(f"<{tag} href={href!r}>")
    return found
