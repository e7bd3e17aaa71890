"""The decision report: one model of the content, written as Markdown and as a self-contained HTML page.

Every table is built once (`Table`) and written both ways. A long string that would widen a column, or repeat
down it (a memory counter, why an MFU is empty, why a device is not priced), becomes a numbered footnote under
its table; identical strings share one number. Run ids link to the run's page in the MLflow UI (`run_href`).
The cells are `cells.py`'s, the tables and texts of each section `sections.py`'s; this module holds the model and
writes it.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import pandas as pd

from gpucost_mlflow.core.measurement.stats import Separation
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.report import scope
from gpucost_mlflow.report.cells import Link, Table, run_href
from gpucost_mlflow.report.sections import (
    ATTEMPT_COLUMNS,
    BREAK_EVEN_TEXT,
    DECISION_TEXT,
    ENERGY_TEXT,
    EXCLUSIONS_TITLE,
    MFU_TEXT,
    OTHER_TEXT,
    SUMMARY_TEXT,
    attempt_tables,
    decision_table,
    digest_text,
    durations_text,
    energy_table,
    exclusion_text,
    exclusions_table,
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
from gpucost_mlflow.report.tables import Summary
from gpucost_mlflow.tracking.ui import LOCAL_UI

# Names other modules and the tests read from here; they live in cells.py and sections.py.
__all__ = ["ATTEMPT_COLUMNS", "Link", "Report", "Table", "VariantExclusions", "markdown", "page", "run_href"]


@dataclass
class Report:
    experiment: str
    question: str
    protocol_digest: str
    catalog: str
    decision: str
    warnings: list[str]
    attempts: pd.DataFrame
    summaries: list[Summary]
    separations: list[tuple[str, Separation]]
    assessments: list[Assessment]
    deadline: str
    plan: dict | None
    choice: Choice = field(default_factory=Choice)  # the one choice made of the assessments (build), read by the tables
    figures: dict = field(default_factory=dict)
    break_evens: list[str] = field(default_factory=list)
    overhead: tuple = (None, 0)  # median harness overhead per attempt (s), attempts counted
    other_costs: tuple = ()
    example_prices: bool = False
    exclusions: list = field(default_factory=list)  # VariantExclusions, one per variant (PROTOCOL.md §6)
    exclusion_rule: str = ""
    passes_per_variant: int | None = None  # the protocol's, named in the per-configuration header
    experiment_id: str = ""  # for run links; without it they use the UI's direct route #/runs/<id>
    ui_root: str = LOCAL_UI  # the MLflow UI run links open: the tracking server, else where `mlflow ui` serves by default
    rejudged: list[str] = field(default_factory=list)  # pending passes `gpucost report` judged first, one line each
    what_if: str = ""  # 'what-if protocol other.yaml (changed deadline)' when decided under another protocol than the lock
    what_if_digest: str = ""  # that protocol's digest, shown beside the locked one (protocol_digest)
    bill: list[str] = field(default_factory=list)  # committed against paid (report/bill.py), empty without a bill
    # Bullet sections after the plan tables, each (title, what it says, lines): prices and their age, hosted
    # endpoints, the bill; a section without lines is left out.
    lists: list[tuple[str, str, list[str]]] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The page title; a what-if protocol says so first, a what-if catalog of example prices in it."""
        kind = "Decision report (what-if: example price)" if self.example_prices else "Decision report"
        return f"What-if protocol: {kind[0].lower()}{kind[1:]}: {self.experiment}" if self.what_if \
            else f"{kind}: {self.experiment}"


@dataclass
class VariantExclusions:
    """One variant's excluded attempts (k of its n attempts), each as [device, run id, cause, by, when]."""
    variant: str
    attempts: int
    excluded: list = field(default_factory=list)


# ---- Markdown ----

def _md_cell(cell) -> str:
    if isinstance(cell, Link):
        text = f"[{cell.title or cell.text}]({cell.href})"
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", "; ")


def _md_table(table: Table) -> str:
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
        parts += ["### Break-even volume (forecast)", "", BREAK_EVEN_TEXT, ""] + [f"- {line}" for line in report.break_evens] + [""]
    for title, text, lines in report.lists:
        if lines:
            parts += [f"### {title}", "", text, ""] + [f"- {line}" for line in lines] + [""]
    return parts


def _scope_md(report: Report) -> list[str]:
    """The closing section (scope, reproducibility; PROTOCOL.md §1, §7, §12) and the licences footer."""
    return ([f"## {scope.TITLE}", "", "**Scope.**", ""] + [f"- {line}" for line in scope.covers(report.attempts, report.catalog)]
            + ["", "**Reproducibility.**", ""] + [f"- {line}" for line in scope.reproducible(report.attempts)]
            + ["", "---", "", "**Licences and sources.**", ""] + [f"- {line}" for line in scope.licences()] + [""])


def markdown(report: Report) -> str:
    """The report as Markdown: the decision first, then the figures behind it, then every attempt."""
    outcome, checks = attempt_tables(report)
    parts = [f"# {report.title}", "", f"**Decision note.** {report.decision}", "", _md_table(decision_table(report)), "",
             DECISION_TEXT, ""]
    parts += [line for text in report.bill for line in (f"**The bill.** {text}", "")]
    parts += [f"> **Warning:** {w}" for w in report.warnings]
    parts += ["", f"**Question.** {report.question}", "",
              digest_text(report, lambda text: f"`{text}`", str), "",
              *([f"**Re-judged first.** {rejudged_text(report)}", ""] if report.rejudged else []),
              "## Per configuration", "", durations_text(report).capitalize() + ".", "", _md_table(summary_table(report)), "",
              SUMMARY_TEXT, "", _md_table(energy_table(report)), "", ENERGY_TEXT, "",
              MFU_TEXT, "", *_exclusions_md(report),
              "## Separability within each series", "", _md_table(separation_table(report)), "",
              "## Campaign plan and committed cost", "", plan_text(report), "", overhead_text(report), "",
              _md_table(forecast_table(report)), "", _md_table(plan_table(report)), "", *_optional_md(report),
              f"## Attempts ({len(report.attempts)} rows, one per attempted pass)", "", links_text(report), "",
              _md_table(outcome), "", _md_table(checks), "", *_scope_md(report)]
    return "\n".join(parts)


# ---- HTML ----

def _numeric(text: str) -> bool:
    """A number-like cell (figures, units, ranges, dates) that must not wrap: every word holds a digit or is short."""
    words = re.sub(r" \[\d+\]", "", text).split()
    return 0 < len(text) <= 24 and text[:1].isdigit() and all(any(ch.isdigit() for ch in w) or len(w) <= 3 for w in words)


def _html_cell(cell, tag: str = "td") -> str:
    e = html.escape
    if isinstance(cell, Link):
        title = f' title="{e(cell.title)}"' if cell.title else ""
        return (f'<{tag} class="n"><a href="{e(cell.href)}" target="_blank" rel="noopener noreferrer"{title}>'
                f"{e(cell.text)}</a></{tag}>")
    text = str(cell)
    numeric = ' class="n"' if tag == "td" and _numeric(text) else ""
    glued = re.sub(r" (\[\d+\])", "\u00a0\\1", text)  # a footnote mark never wraps away from its word
    return f"<{tag}{numeric}>" + "<br>".join(e(line) for line in glued.split("\n")) + f"</{tag}>"


def _html_table(table: Table) -> str:
    e = html.escape
    out = [f'<div class="scroll"><table id="{e(table.ident)}"><thead><tr>'
           + "".join(_html_cell(h, "th") for h in table.head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in table.rows]
    out.append("</tbody></table></div>")
    if table.notes:
        out.append(f'<ol class="notes" id="{e(table.ident)}-notes">'
                   + "".join(f"<li>{e(text)}</li>" for text in table.notes) + "</ol>")
    return "".join(out)


def _exclusions_html(report: Report) -> list[str]:
    e = html.escape
    counts, rule = exclusion_text(report)
    table = exclusions_table(report)
    parts = [f"<h2>{e(EXCLUSIONS_TITLE)}</h2>",
             "<ul>" + "".join(f"<li>{e(line)}</li>" for line in counts) + "</ul>" if counts else "<p>No attempt excluded.</p>",
             f"<p>{e(rule)}</p>"]
    return parts + ([_html_table(table)] if table.rows else [])


def _optional_html(report: Report) -> list[str]:
    e = html.escape
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
    e = html.escape

    def items(lines: list[str]) -> str:
        return "<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"

    return [f'<h2 id="scope">{e(scope.TITLE)}</h2>', "<h3>Scope</h3>", items(scope.covers(report.attempts, report.catalog)),
            "<h3>Reproducibility</h3>", items(scope.reproducible(report.attempts)),
            f'<footer id="licences"><hr><p><b>Licences and sources.</b></p>{items(scope.licences())}</footer>']


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:1em 0 .3em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}td.n{white-space:nowrap}.warning{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.decision{background:#e8f4ea;padding:.8em 1em;border-left:4px solid #2ca02c;font-size:15px}img{max-width:100%}
.scroll{overflow-x:auto;max-width:100%}figure{display:inline-block;margin:.5em 1em .5em 0}
ol.notes{font-size:12px;color:#444;margin:.2em 0 1em;padding-left:2.2em}ol.notes li::marker{content:"[" counter(list-item) "] "}"""


def page(report: Report) -> str:
    """A self-contained HTML page (inline style, figures as data URIs, no script); every string from runs is escaped."""
    e = html.escape
    outcome, checks = attempt_tables(report)
    figures = "".join(f'<figure><img alt="{e(name)}" src="{uri}"><figcaption>{e(name)}</figcaption></figure>'
                      for name, uri in report.figures.items())
    body = [f"<h1>{e(report.title)}</h1>", f'<p class="decision"><b>Decision note.</b> {e(report.decision)}</p>',
            _html_table(decision_table(report)), f"<p>{e(DECISION_TEXT)}</p>"]
    body += [f"<p><b>The bill.</b> {e(text)}</p>" for text in report.bill]
    body += [f'<p class="warning">Warning: {e(w)}</p>' for w in report.warnings]
    body += [f"<p><b>Question.</b> {e(report.question)}</p>",
             f"<p>{digest_text(report, lambda text: f'<code>{e(text)}</code>', e)}</p>",
             *([f"<p><b>Re-judged first.</b> {e(rejudged_text(report))}</p>"] if report.rejudged else []),
             f"<h2>Per configuration</h2><p>{e(durations_text(report).capitalize())}.</p>",
             _html_table(summary_table(report)), f"<p>{e(SUMMARY_TEXT)}</p>", _html_table(energy_table(report)),
             f"<p>{e(ENERGY_TEXT)}</p>", f"<p>{e(MFU_TEXT)}</p>", *_exclusions_html(report),
             "<h2>Separability within each series</h2>", _html_table(separation_table(report)),
             "<h2>Campaign plan and committed cost</h2>", f"<p>{e(plan_text(report))}</p>", f"<p>{e(overhead_text(report))}</p>",
             _html_table(forecast_table(report)), _html_table(plan_table(report)), *_optional_html(report),
             "<h2>Figures</h2>", figures,
             f"<h2>Attempts ({len(report.attempts)} rows, one per attempted pass)</h2>", f"<p>{e(links_text(report))}</p>",
             "<h3>Outcome</h3>", _html_table(outcome), "<h3>Checks, utilisation and overlaps</h3>", _html_table(checks),
             *_scope_html(report)]
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpucost {e(report.title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
