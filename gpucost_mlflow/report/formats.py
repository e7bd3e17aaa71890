"""The two formats of the report: a table (its footnotes numbered under it) and a text as Markdown and as HTML, and
the page's style. HTML text is escaped, its backticked code set as <code> and its dates kept unbroken."""

from __future__ import annotations

import html
import re

from gpucost_mlflow.report.cells import Link, Table


def md_cell(cell) -> str:
    if isinstance(cell, Link):
        text = f"[{cell.title or cell.text}]({cell.href})"
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", "; ")


def md_table(table: Table) -> str:
    if table.all_empty():
        return table.all_empty()
    lines = ["| " + " | ".join(md_cell(h) for h in table.head) + " |", "|" + " --- |" * len(table.head)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in table.rows]
    lines += [""] + [f"- [{n}] {text}" for n, text in enumerate(table.notes, 1)] if table.notes else []
    return "\n".join(lines)


CODE = re.compile(r"`([^`\n]+)`")  # inline code in the Markdown's text: `gpucost doctor --peak`
# a date or a moment (2026-12-05, 2026-12-05T08:44+00:00, 2026-12-05T08:44Z): one unbreakable piece on any screen
MOMENT = re.compile(r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[+-]\d\d:\d\d|Z)?)?\b")


def html_text(text) -> str:
    """A string as HTML text: escaped, its backticked inline code as <code> (report.md keeps the backticks), and each
    date or moment in a span that never wraps, so a narrow screen never breaks one at a hyphen."""
    written = CODE.sub(r"<code>\1</code>", html.escape(str(text)))
    return MOMENT.sub(lambda found: f'<span class="nw">{found.group(0)}</span>', written)


def _numeric(text: str) -> bool:
    """A number-like cell (figures, units, ranges, dates) that must not wrap: every word holds a digit or is short."""
    words = re.sub(r" \[\d+\]", "", text).split()
    return (0 < len(text) <= 24 and text[:1].isdigit()
            and all(any(ch.isdigit() for ch in w) or len(w) <= 3 for w in words))


def html_cell(cell, tag: str = "td", label: str = "") -> str:
    """One cell; `label`: its column's header, shown beside it where a narrow screen stacks the table's rows. A
    number-like cell is kept whole as it is (`td.n`), so its dates need no span of their own."""
    e = html.escape
    labelled = f' data-label="{e(label)}"' if label else ""
    if isinstance(cell, Link):
        title = f' title="{e(cell.title)}"' if cell.title else ""
        return (f'<{tag} class="n"{labelled}><a href="{e(cell.href)}" target="_blank" rel="noopener noreferrer"'
                f"{title}>{e(cell.text)}</a></{tag}>")
    text = str(cell)
    numeric = tag == "td" and _numeric(text)
    written, kind = (e, ' class="n"') if numeric else (html_text, "")
    glued = re.sub(r" (\[\d+\])", "\u00a0\\1", text)  # a footnote mark never wraps away from its word
    return f"<{tag}{kind}{labelled}>" + "<br>".join(written(line) for line in glued.split("\n")) + f"</{tag}>"


def html_table(table: Table, stacked: bool = False) -> str:
    """A table in its scrolling frame and its footnotes; `stacked`: its rows become blocks of labelled cells on a
    narrow screen (the first table, read in MLflow's artifact pane), never a sideways scroll."""
    e = html_text
    if table.all_empty():
        return f'<p id="{html.escape(table.ident)}">{e(table.all_empty())}</p>'
    kind = ' class="stack"' if stacked else ""
    out = [f'<div class="scroll"><table id="{html.escape(table.ident)}"{kind}><thead><tr>'
           + "".join(html_cell(h, "th") for h in table.head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(html_cell(c, label=str(h) if stacked else "") for c, h in zip(row, table.head)) + "</tr>"
            for row in table.rows]
    out.append("</tbody></table></div>")
    if table.notes:
        out.append(f'<ol class="notes" id="{html.escape(table.ident)}-notes">'
                   + "".join(f"<li>{e(text)}</li>" for text in table.notes) + "</ol>")
    return "".join(out)


STYLE = """body{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#222;max-width:1400px}\
h1{font-size:1.5em;margin:.2em 0 .5em}
table{border-collapse:collapse;margin:1em 0 .3em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}td.n{white-space:nowrap}\
.warning{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.decision{background:#e8f4ea;padding:.6em 1em;border-left:4px solid #2ca02c;font-size:15px;margin:0 0 .8em;\
list-style:none}
.decision.tied{background:#eef6e8;border-left-color:#0b5d1e}\
.decision.undecided{background:#fff3cd;border-left-color:#e0a800}
.decision.none{background:#f0f0f0;border-left-color:#7f7f7f}.decision li{margin:.2em 0}\
.decision,table.stack td{overflow-wrap:anywhere}img{max-width:100%}
.lead{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.1fr);gap:1.5em;align-items:start}
.lead figure{margin:0;display:block}.lead img{width:100%;height:auto}.lead p{margin:.5em 0}
@media (max-width:1100px){.lead{display:block}.lead figure{margin:1em 0}}
@media (max-width:720px){table.stack,table.stack tbody,table.stack tr{display:block}table.stack thead{display:none}
table.stack tr{border:1px solid #ccc;margin:.4em 0;padding:.3em .5em}\
table.stack td{display:inline-block;border:0;padding:1px 12px 1px 0;white-space:normal}
table.stack td::before{content:attr(data-label) ": ";color:#555}\
table.stack td:first-child{display:block;font-weight:600}
table.stack td:first-child::before{content:none}}
.nw{white-space:nowrap}.scroll{overflow-x:auto;max-width:100%}\
figure{display:inline-block;margin:.5em 1em .5em 0;max-width:100%}
ol.notes{font-size:12px;color:#444;margin:.2em 0 1em;padding-left:2.2em}\
ol.notes li::marker{content:"[" counter(list-item) "] "}"""
