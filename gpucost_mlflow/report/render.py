"""The decision report: one model of the content, written as Markdown and as a self-contained HTML page.

Every table is built once (`Table`) and written both ways. A long string that would widen a column, or repeat
down it (a memory counter, why an MFU is empty, why a device is not priced), becomes a numbered footnote under
its table; identical strings share one number. Run ids link to the run's page in the MLflow UI (`run_href`).
The cells are `cells.py`'s, the tables and texts of each section `sections.py`'s, the decision card `card.py`'s,
the figures `plots.py`'s, the model `model.py`'s, a table or a text in either format `formats.py`'s; this module
writes the sections in order: the card first, then the question beside the
cost-against-volume figure, the first table (its rows stacked into labelled blocks on a screen under 720 px, so
MLflow's artifact pane never scrolls it sideways), the durations figure and the decision note, then the rest.
"""

from __future__ import annotations

import html

from gpucost_mlflow.report import card, scope
from gpucost_mlflow.report.attempt_sections import (
    ATTEMPT_COLUMNS,
    EXCLUSIONS_TITLE,
    attempt_tables,
    exclusion_text,
    exclusions_table,
)
from gpucost_mlflow.report.cells import Link, Table, run_href
from gpucost_mlflow.report.formats import STYLE, html_table, html_text, md_table
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

def _exclusions_md(report: Report) -> list[str]:
    counts, rule = exclusion_text(report)
    table = exclusions_table(report)
    parts = [f"## {EXCLUSIONS_TITLE}", ""] + ([f"- {line}" for line in counts] if counts else ["No attempt excluded."])
    return parts + ["", rule, ""] + ([md_table(table), ""] if table.rows else [])


def _optional_md(report: Report) -> list[str]:
    """Other costs and break-even sections, only when there is something to show."""
    parts = []
    if report.other_costs:
        parts += ["### Other costs", "", OTHER_TEXT, "", md_table(other_table(report)), ""]
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
    return [*([sentence, ""] if sentence else []), md_table(first), "", DECISION_TEXT, "",
            *_figure_md(report, "durations"), f"**Decision note.** {report.decision}", ""]


def _notices_md(report: Report) -> list[str]:
    """Committed against paid (after a bill), then the warnings."""
    return ([line for text in report.bill for line in (f"**The bill.** {text}", "")]
            + [f"> **Warning:** {w}" for w in report.warnings] + [""])


def _per_configuration_md(report: Report) -> list[str]:
    return ["## Per configuration", "", durations_text(report).capitalize() + ".", "", md_table(summary_table(report)),
            "", SUMMARY_TEXT, "", md_table(energy_table(report)), "", ENERGY_TEXT, "", MFU_TEXT, ""]


NO_PAIRS = ("No two configurations of one series on one device, and no series member beside its reference there: "
            "nothing to separate (projects/variants.yaml names the series).")


def _separability_md(report: Report) -> list[str]:
    table = separation_table(report)
    return ["## Separability within each series", "", md_table(table) if table.rows else NO_PAIRS, ""]


def _plan_md(report: Report) -> list[str]:
    return ["## Campaign plan and committed cost", "", plan_text(report), "", overhead_text(report), "",
            md_table(forecast_table(report)), "", md_table(plan_table(report)), ""]


def _memory_md(report: Report) -> list[str]:
    return ["## Memory", "", *_figure_md(report, "memory")] if _figure_md(report, "memory") else []


def _attempts_md(report: Report) -> list[str]:
    outcome, checks = attempt_tables(report)
    return [f"## Attempts ({len(report.attempts)} rows, one per attempted pass)", "", links_text(report), "",
            "### Outcome", "", md_table(outcome), "",
            "### Checks, utilisation and overlaps", "", md_table(checks), ""]


def markdown(report: Report) -> str:
    """The report as Markdown, section by section in SECTIONS' order (the HTML page's)."""
    return "\n".join(line for written, _ in SECTIONS for line in written(report))


# ---- HTML ----

def _exclusions_html(report: Report) -> list[str]:
    e = html_text
    counts, rule = exclusion_text(report)
    table = exclusions_table(report)
    parts = [f"<h2>{e(EXCLUSIONS_TITLE)}</h2>",
             "<ul>" + "".join(f"<li>{e(line)}</li>" for line in counts) + "</ul>" if counts
             else "<p>No attempt excluded.</p>",
             f"<p>{e(rule)}</p>"]
    return parts + ([html_table(table)] if table.rows else [])


def _optional_html(report: Report) -> list[str]:
    e = html_text
    parts = []
    if report.other_costs:
        parts += ["<h3>Other costs</h3>", f"<p>{e(OTHER_TEXT)}</p>", html_table(other_table(report))]
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
    e = html_text

    def items(lines: list[str]) -> str:
        return "<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"

    return [f'<h2 id="scope">{e(scope.TITLE)}</h2>',
            "<h3>Scope</h3>", items(scope.covers(report.attempts, report.catalog)),
            "<h3>Reproducibility</h3>", items(scope.reproducible(report.attempts, report.reproduce, report.seeds)),
            f'<footer id="licences"><hr><p><b>Licences and sources.</b></p>{items(scope.licences())}</footer>']


def _figure_html(report: Report, key: str) -> str:
    """A figure inline (data URI) with its alt text and caption, or nothing when the report has none."""
    e = html_text
    found = report.figures.get(key)
    if found is None:
        return ""
    ident = f' id="{html.escape(key.replace("_", "-"))}"'
    return (f'<figure{ident}><img alt="{html.escape(found.alt)}" src="{found.uri}"><figcaption>{e(found.caption)}'
            "</figcaption></figure>")


def _card_html(report: Report) -> str:
    """The card, coloured by its state: decided (green), tied (dark green), undecided (amber), no decision (grey)."""
    e = html_text
    return (f'<ul class="decision {card.state(report)}" id="card">'
            + "".join(f"<li><b>{e(label)}:</b> {e(text)}</li>" for label, text in card.lines(report)) + "</ul>")


def _lead_html(report: Report) -> list[str]:
    """The title, then the card, the question and the protocol beside the cost-against-volume figure."""
    e = html_text
    answer = [_card_html(report), f"<p><b>Question.</b> {e(report.question)}</p>",
              f"<p>{digest_text(report, lambda text: f'<code>{e(text)}</code>', e)}</p>",
              *([f"<p><b>Re-judged first.</b> {e(rejudged_text(report))}</p>"] if report.rejudged else [])]
    return [f"<h1>{e(report.title)}</h1>",
            f'<div class="lead"><div>{"".join(answer)}</div>{_figure_html(report, "cost_volume")}</div>']


def _first_html(report: Report) -> list[str]:
    e = html_text
    first, sentence = first_table(report)
    return [*([f'<p id="same">{e(sentence)}</p>'] if sentence else []), html_table(first, stacked=True),
            f"<p>{e(DECISION_TEXT)}</p>", _figure_html(report, "durations"),
            f"<p><b>Decision note.</b> {e(report.decision)}</p>"]


def _notices_html(report: Report) -> list[str]:
    e = html_text
    return ([f"<p><b>The bill.</b> {e(text)}</p>" for text in report.bill]
            + [f'<p class="warning">Warning: {e(w)}</p>' for w in report.warnings])


def _per_configuration_html(report: Report) -> list[str]:
    e = html_text
    return [f"<h2>Per configuration</h2><p>{e(durations_text(report).capitalize())}.</p>",
            html_table(summary_table(report)), f"<p>{e(SUMMARY_TEXT)}</p>", html_table(energy_table(report)),
            f"<p>{e(ENERGY_TEXT)}</p>", f"<p>{e(MFU_TEXT)}</p>"]


def _separability_html(report: Report) -> list[str]:
    table = separation_table(report)
    return ["<h2>Separability within each series</h2>",
            html_table(table) if table.rows else f"<p>{html_text(NO_PAIRS)}</p>"]


def _plan_html(report: Report) -> list[str]:
    e = html_text
    return ["<h2>Campaign plan and committed cost</h2>", f"<p>{e(plan_text(report))}</p>",
            f"<p>{e(overhead_text(report))}</p>", html_table(forecast_table(report)), html_table(plan_table(report))]


def _memory_html(report: Report) -> list[str]:
    return ["<h2>Memory</h2>", _figure_html(report, "memory")] if "memory" in report.figures else []


def _attempts_html(report: Report) -> list[str]:
    e = html_text
    outcome, checks = attempt_tables(report)
    return [f"<h2>Attempts ({len(report.attempts)} rows, one per attempted pass)</h2>",
            f"<p>{e(links_text(report))}</p>",
            "<h3>Outcome</h3>", html_table(outcome), "<h3>Checks, utilisation and overlaps</h3>", html_table(checks)]


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
