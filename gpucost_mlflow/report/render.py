"""The decision report: one model of the content, written as Markdown and as a self-contained HTML page.

Every table is built once (`Table`) and written both ways. A long string that would widen a column, or repeat
down it (a memory counter, why an MFU is empty, why a device is not priced), becomes a numbered footnote under
its table; identical strings share one number. Run ids link to the run's page in the MLflow UI (`run_href`).
The cells are `cells.py`'s, the tables and texts of each section `sections.py`'s, the decision card `card.py`'s and
the figures `plots.py`'s, the model `model.py`'s; this module writes it: the card first, then the question beside the
cost-against-volume figure, the first table (its rows stacked into labelled blocks on a screen under 720 px, so
MLflow's artifact pane never scrolls it sideways), the durations figure and the decision note, then the rest.
"""

from __future__ import annotations

import html
import re

from gpucost_mlflow.report import card, scope
from gpucost_mlflow.report.attempt_sections import (
    ATTEMPT_COLUMNS,
    EXCLUSIONS_TITLE,
    attempt_tables,
    exclusion_text,
    exclusions_table,
)
from gpucost_mlflow.report.cells import Link, Table, run_href
from gpucost_mlflow.report.model import Report, VariantExclusions
from gpucost_mlflow.report.sections import (
    BREAK_EVEN_TEXT,
    DECISION_TEXT,
    ENERGY_TEXT,
    MFU_TEXT,
    OTHER_TEXT,
    SUMMARY_TEXT,
    digest_text,
    durations_text,
    energy_table,
    first_table,
    forecast_table,
    links_text,
    other_table,
    overhead_text,
    plan_table,
    plan_text,
    rejudged_text,
    separation_table,
    summary_table,
)

# Names other modules and the tests read from here; they live in model.py, cells.py and sections.py.
__all__ = ["ATTEMPT_COLUMNS", "Link", "Report", "Table", "VariantExclusions", "markdown", "page", "run_href"]


# ---- Markdown ----

def _md_cell(cell) -> str:
    if isinstance(cell, Link):
        text = f"[{cell.title or cell.text}]({cell.href})"
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", "; ")


def _md_table(table: Table) -> str:
    if table.all_empty():
        return table.all_empty()
    lines = ["| " + " | ".join(_md_cell(h) for h in table.head) + " |", "|" + " --- |" * len(table.head)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    lines += [""] + [f"- [{n}] {text}" for n, text in enumerate(table.notes, 1)] if table.notes else []
    return "\n".join(lines)


def _exclusions_md(report: Report) -> list[str]:
    counts, rule = exclusion_text(report)
    table = exclusions_table(report)
    parts = [f"## {EXCLUSIONS_TITLE}", ""] + ([f"- {line}" for line in counts] if counts else ["No attempt excluded."])
    return parts + ["", rule, ""] + ([_md_table(table), ""] if table.rows else [])


def _optional_md(report: Report) -> list[str]:
    """Other costs and break-even sections, only when there is something to show."""
    parts = []
    if report.other_costs:
        parts += ["### Other costs", "", OTHER_TEXT, "", _md_table(other_table(report)), ""]
    if report.break_evens:
        parts += (["### Break-even volume (forecast)", "", BREAK_EVEN_TEXT, ""]
                  + [f"- {line}" for line in report.break_evens] + [""])
    for title, text, lines in report.lists:
        if lines:
            parts += [f"### {title}", "", text, ""] + [f"- {line}" for line in lines] + [""]
    return parts


def _scope_md(report: Report) -> list[str]:
    """The closing section (scope, reproducibility; PROTOCOL.md §1, §7, §12) and the licences footer."""
    return ([f"## {scope.TITLE}", "", "**Scope.**", ""]
            + [f"- {line}" for line in scope.covers(report.attempts, report.catalog)]
            + ["", "**Reproducibility.**", ""]
            + [f"- {line}" for line in scope.reproducible(report.attempts, report.reproduce, report.seeds)]
            + ["", "---", "", "**Licences and sources.**", ""] + [f"- {line}" for line in scope.licences()] + [""])


def _figure_md(report: Report, key: str) -> list[str]:
    """A figure as an image of its file next to report.md (written by build.write), or nothing."""
    found = report.figures.get(key)
    return [f"![{found.alt}]({found.file})", ""] if found and found.file else []


def _lead_md(report: Report) -> list[str]:
    """The title, the decision card, the question and the protocol, then the cost-against-volume figure."""
    return [f"# {report.title}", "", *[f"- **{label}:** {text}" for label, text in card.lines(report)],
            "", f"**Question.** {report.question}", "", digest_text(report, lambda text: f"`{text}`", str), "",
            *([f"**Re-judged first.** {rejudged_text(report)}", ""] if report.rejudged else []),
            *_figure_md(report, "cost_volume")]


def _first_md(report: Report) -> list[str]:
    """The first table, what it decides, the durations figure and the decision note."""
    first, sentence = first_table(report)
    return [*([sentence, ""] if sentence else []), _md_table(first), "", DECISION_TEXT, "",
            *_figure_md(report, "durations"), f"**Decision note.** {report.decision}", ""]


def _notices_md(report: Report) -> list[str]:
    """Committed against paid (after a bill), then the warnings."""
    return ([line for text in report.bill for line in (f"**The bill.** {text}", "")]
            + [f"> **Warning:** {w}" for w in report.warnings] + [""])


def _per_configuration_md(report: Report) -> list[str]:
    return ["## Per configuration", "", durations_text(report).capitalize() + ".", "", _md_table(summary_table(report)),
            "", SUMMARY_TEXT, "", _md_table(energy_table(report)), "", ENERGY_TEXT, "", MFU_TEXT, ""]


NO_PAIRS = ("No two configurations of one series on one device, and no series member beside its reference there: "
            "nothing to separate (projects/variants.yaml names the series).")


def _separability_md(report: Report) -> list[str]:
    table = separation_table(report)
    return ["## Separability within each series", "", _md_table(table) if table.rows else NO_PAIRS, ""]


def _plan_md(report: Report) -> list[str]:
    return ["## Campaign plan and committed cost", "", plan_text(report), "", overhead_text(report), "",
            _md_table(forecast_table(report)), "", _md_table(plan_table(report)), ""]


def _memory_md(report: Report) -> list[str]:
    return ["## Memory", "", *_figure_md(report, "memory")] if _figure_md(report, "memory") else []


def _attempts_md(report: Report) -> list[str]:
    outcome, checks = attempt_tables(report)
    return [f"## Attempts ({len(report.attempts)} rows, one per attempted pass)", "", links_text(report), "",
            "### Outcome", "", _md_table(outcome), "",
            "### Checks, utilisation and overlaps", "", _md_table(checks), ""]


def markdown(report: Report) -> str:
    """The report as Markdown, section by section in SECTIONS' order (the HTML page's)."""
    return "\n".join(line for written, _ in SECTIONS for line in written(report))


# ---- HTML ----

CODE = re.compile(r"`([^`\n]+)`")  # inline code in the Markdown's text: `gpucost doctor --peak`
# a date or a moment (2026-12-05, 2026-12-05T08:44+00:00, 2026-12-05T08:44Z): one unbreakable piece on any screen
MOMENT = re.compile(r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[+-]\d\d:\d\d|Z)?)?\b")


def _text(text) -> str:
    """A string as HTML text: escaped, its backticked inline code as <code> (report.md keeps the backticks), and each
    date or moment in a span that never wraps, so a narrow screen never breaks one at a hyphen."""
    written = CODE.sub(r"<code>\1</code>", html.escape(str(text)))
    return MOMENT.sub(lambda found: f'<span class="nw">{found.group(0)}</span>', written)


def _numeric(text: str) -> bool:
    """A number-like cell (figures, units, ranges, dates) that must not wrap: every word holds a digit or is short."""
    words = re.sub(r" \[\d+\]", "", text).split()
    return (0 < len(text) <= 24 and text[:1].isdigit()
            and all(any(ch.isdigit() for ch in w) or len(w) <= 3 for w in words))


def _html_cell(cell, tag: str = "td", label: str = "") -> str:
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
    written, kind = (e, ' class="n"') if numeric else (_text, "")
    glued = re.sub(r" (\[\d+\])", "\u00a0\\1", text)  # a footnote mark never wraps away from its word
    return f"<{tag}{kind}{labelled}>" + "<br>".join(written(line) for line in glued.split("\n")) + f"</{tag}>"


def _html_table(table: Table, stacked: bool = False) -> str:
    """A table in its scrolling frame and its footnotes; `stacked`: its rows become blocks of labelled cells on a
    narrow screen (the first table, read in MLflow's artifact pane), never a sideways scroll."""
    e = _text
    if table.all_empty():
        return f'<p id="{html.escape(table.ident)}">{e(table.all_empty())}</p>'
    kind = ' class="stack"' if stacked else ""
    out = [f'<div class="scroll"><table id="{html.escape(table.ident)}"{kind}><thead><tr>'
           + "".join(_html_cell(h, "th") for h in table.head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(_html_cell(c, label=str(h) if stacked else "") for c, h in zip(row, table.head)) + "</tr>"
            for row in table.rows]
    out.append("</tbody></table></div>")
    if table.notes:
        out.append(f'<ol class="notes" id="{html.escape(table.ident)}-notes">'
                   + "".join(f"<li>{e(text)}</li>" for text in table.notes) + "</ol>")
    return "".join(out)


def _exclusions_html(report: Report) -> list[str]:
    e = _text
    counts, rule = exclusion_text(report)
    table = exclusions_table(report)
    parts = [f"<h2>{e(EXCLUSIONS_TITLE)}</h2>",
             "<ul>" + "".join(f"<li>{e(line)}</li>" for line in counts) + "</ul>" if counts
             else "<p>No attempt excluded.</p>",
             f"<p>{e(rule)}</p>"]
    return parts + ([_html_table(table)] if table.rows else [])


def _optional_html(report: Report) -> list[str]:
    e = _text
    parts = []
    if report.other_costs:
        parts += ["<h3>Other costs</h3>", f"<p>{e(OTHER_TEXT)}</p>", _html_table(other_table(report))]
    if report.break_evens:
        parts += ["<h3>Break-even volume (forecast)</h3>", f"<p>{e(BREAK_EVEN_TEXT)}</p>",
                  "<ul>" + "".join(f"<li>{e(line)}</li>" for line in report.break_evens) + "</ul>"]
    for title, text, lines in report.lists:
        if lines:
            parts += [f"<h3>{e(title)}</h3>", f"<p>{e(text)}</p>",
                      "<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"]
    return parts


def _scope_html(report: Report) -> list[str]:
    """The closing section (scope, reproducibility; PROTOCOL.md §1, §7, §12) and the licences footer, escaped."""
    e = _text

    def items(lines: list[str]) -> str:
        return "<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"

    return [f'<h2 id="scope">{e(scope.TITLE)}</h2>',
            "<h3>Scope</h3>", items(scope.covers(report.attempts, report.catalog)),
            "<h3>Reproducibility</h3>", items(scope.reproducible(report.attempts, report.reproduce, report.seeds)),
            f'<footer id="licences"><hr><p><b>Licences and sources.</b></p>{items(scope.licences())}</footer>']


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


def _figure_html(report: Report, key: str) -> str:
    """A figure inline (data URI) with its alt text and caption, or nothing when the report has none."""
    e = _text
    found = report.figures.get(key)
    if found is None:
        return ""
    ident = f' id="{html.escape(key.replace("_", "-"))}"'
    return (f'<figure{ident}><img alt="{html.escape(found.alt)}" src="{found.uri}"><figcaption>{e(found.caption)}'
            "</figcaption></figure>")


def _card_html(report: Report) -> str:
    """The card, coloured by its state: decided (green), tied (dark green), undecided (amber), no decision (grey)."""
    e = _text
    return (f'<ul class="decision {card.state(report)}" id="card">'
            + "".join(f"<li><b>{e(label)}:</b> {e(text)}</li>" for label, text in card.lines(report)) + "</ul>")


def _lead_html(report: Report) -> list[str]:
    """The title, then the card, the question and the protocol beside the cost-against-volume figure."""
    e = _text
    answer = [_card_html(report), f"<p><b>Question.</b> {e(report.question)}</p>",
              f"<p>{digest_text(report, lambda text: f'<code>{e(text)}</code>', e)}</p>",
              *([f"<p><b>Re-judged first.</b> {e(rejudged_text(report))}</p>"] if report.rejudged else [])]
    return [f"<h1>{e(report.title)}</h1>",
            f'<div class="lead"><div>{"".join(answer)}</div>{_figure_html(report, "cost_volume")}</div>']


def _first_html(report: Report) -> list[str]:
    e = _text
    first, sentence = first_table(report)
    return [*([f'<p id="same">{e(sentence)}</p>'] if sentence else []), _html_table(first, stacked=True),
            f"<p>{e(DECISION_TEXT)}</p>", _figure_html(report, "durations"),
            f"<p><b>Decision note.</b> {e(report.decision)}</p>"]


def _notices_html(report: Report) -> list[str]:
    e = _text
    return ([f"<p><b>The bill.</b> {e(text)}</p>" for text in report.bill]
            + [f'<p class="warning">Warning: {e(w)}</p>' for w in report.warnings])


def _per_configuration_html(report: Report) -> list[str]:
    e = _text
    return [f"<h2>Per configuration</h2><p>{e(durations_text(report).capitalize())}.</p>",
            _html_table(summary_table(report)), f"<p>{e(SUMMARY_TEXT)}</p>", _html_table(energy_table(report)),
            f"<p>{e(ENERGY_TEXT)}</p>", f"<p>{e(MFU_TEXT)}</p>"]


def _separability_html(report: Report) -> list[str]:
    table = separation_table(report)
    return ["<h2>Separability within each series</h2>",
            _html_table(table) if table.rows else f"<p>{_text(NO_PAIRS)}</p>"]


def _plan_html(report: Report) -> list[str]:
    e = _text
    return ["<h2>Campaign plan and committed cost</h2>", f"<p>{e(plan_text(report))}</p>",
            f"<p>{e(overhead_text(report))}</p>", _html_table(forecast_table(report)), _html_table(plan_table(report))]


def _memory_html(report: Report) -> list[str]:
    return ["<h2>Memory</h2>", _figure_html(report, "memory")] if "memory" in report.figures else []


def _attempts_html(report: Report) -> list[str]:
    e = _text
    outcome, checks = attempt_tables(report)
    return [f"<h2>Attempts ({len(report.attempts)} rows, one per attempted pass)</h2>",
            f"<p>{e(links_text(report))}</p>",
            "<h3>Outcome</h3>", _html_table(outcome), "<h3>Checks, utilisation and overlaps</h3>", _html_table(checks)]


# The report's sections in the order both writers follow, each as (Markdown lines, HTML fragments): the answer first
# (card, question, the first table and the figures behind it), then every configuration, plan and attempt.
SECTIONS = (
    (_lead_md, _lead_html),
    (_first_md, _first_html),
    (_notices_md, _notices_html),
    (_per_configuration_md, _per_configuration_html),
    (_exclusions_md, _exclusions_html),
    (_separability_md, _separability_html),
    (_plan_md, _plan_html),
    (_optional_md, _optional_html),
    (_memory_md, _memory_html),
    (_attempts_md, _attempts_html),
    (_scope_md, _scope_html),
)


def page(report: Report) -> str:
    """A self-contained HTML page (inline style, figures as data URIs, no script), section by section in SECTIONS'
    order (the Markdown's); every string from runs is escaped."""
    e = html.escape
    body = [fragment for _, written in SECTIONS for fragment in written(report)]
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpucost {e(report.title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
