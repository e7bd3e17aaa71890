"""The cells of a report table: the table itself with its footnotes, a link, and how a figure, a missing
measurement, a useful / padded pair and a run id are written in a cell."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

import pandas as pd

from gpucost_mlflow.report.model import Report
from gpucost_mlflow.tracking import ui

FOLD = 28  # characters: a longer string in a cell becomes its head and a footnote
RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")  # an MLflow run id inside a footnote's text


@dataclass(frozen=True)
class Link:
    """A cell that links to a page (a run's page in the MLflow UI): text shown, full value kept as its title."""
    text: str
    href: str
    title: str = ""


@dataclass
class Table:
    """One table of the report: its id, header, rows of cells (str or Link) and the footnotes its cells point to."""
    ident: str
    head: list[str]
    rows: list[list] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    keys: int = 0  # leading columns that name a row; with keys set, a table whose other cells are all empty is one line
    # texts that differ only in their run ids share one footnote: its number, and the run ids seen at each place
    alike: dict[str, tuple[int, list[list[str]]]] = field(default_factory=dict, repr=False)

    def all_empty(self) -> str:
        """One line standing for a table none of whose measured cells holds a value: how many rows, and why (its
        footnotes); '' when any cell holds one, or the table has no key columns."""
        if not self.keys or not self.rows or any(not str(cell).startswith("empty") for row in self.rows
                                                 for cell in row[self.keys:]):
            return ""
        return (f"{', '.join(self.head[self.keys:])}: empty for all {len(self.rows)} configurations: "
                + "; ".join(self.notes) + ".")

    def note(self, text: str) -> str:
        """'[n]' for text listed once under the table; identical texts share a number, and so do texts that differ
        only in their run ids (each pass judged against its own reference run): the note then names each one."""
        if text in self.notes:
            return f"[{self.notes.index(text) + 1}]"
        key, ids = RUN_ID.sub("\0", text), RUN_ID.findall(text)
        if ids and key in self.alike:
            index, seen = self.alike[key]
            for place, run in zip(seen, ids):
                place.extend([run] if run not in place else [])
            parts = key.split("\0")
            self.notes[index] = parts[0] + "".join(
                (place[0] if len(place) == 1 else ", ".join(run[:8] for run in place)) + rest
                for place, rest in zip(seen, parts[1:]))
            return f"[{index + 1}]"
        self.notes.append(text)
        if ids:
            self.alike[key] = (len(self.notes) - 1, [[run] for run in ids])
        return f"[{len(self.notes)}]"

    def fold(self, text: str, limit: int = FOLD) -> str:
        """Short text as is; a longer one as its head (before ':', ';' or '(') and a footnote with the whole."""
        text = str(text)
        if len(text) <= limit:
            return text
        head = re.split(r"[:;(]", text, maxsplit=1)[0].strip()
        return f"{head} {self.note(text)}" if head and len(head) <= limit and head != text else self.note(text)

    def advice(self, text: str) -> str:
        """The finding before the first '; ' kept in the cell, the advice after it (the same on every row) a
        footnote."""
        finding, sep, rest = str(text).partition("; ")
        return f"{finding} {self.note(rest)}" if sep else finding


def run_href(report: Report, run_id: str) -> str:
    """The run's page in the MLflow UI, on its model-training side (`tracking/ui.py`: `<root>/#/experiments/<eid>/
    runs/<rid>?workflowType=machine_learning`), or the direct `#/runs/<rid>` without the experiment. Absolute: the
    artifact pane shows the page from a `blob:` address, against which no relative link resolves (docs/report.md)."""
    root, run = report.ui_root.rstrip("/"), quote(str(run_id), safe="")
    if not report.experiment_id:
        return f"{root}/#/runs/{run}"
    return f"{root}/{ui.run_path(quote(report.experiment_id, safe=''), run)}"


def run_cell(report: Report, run_id, short: bool = True):
    """A run id as a link to its page (the first 8 characters shown when short), plain text without a UI root."""
    run_id = "" if run_id is None or (not isinstance(run_id, str) and pd.isna(run_id)) else str(run_id)
    if not run_id or not report.ui_root:
        return run_id
    return Link(run_id[:8] if short else run_id, run_href(report, run_id), run_id)


def cell(value) -> str:
    """A value as a cell: empty for a missing one, a float to three decimals, anything else as text."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def empty(table: Table, reason: str) -> str:
    """A missing measurement: 'empty' and the reason as a footnote, never 0."""
    return f"empty {table.note(reason or 'not measured')}"


def pair(table: Table, values: dict, first: str, second: str, fmt, reason: str) -> str:
    """'useful / padded' medians, or 'empty [n]' with the reason in a footnote."""
    if first not in values or second not in values:
        return empty(table, reason)
    return f"{fmt(values[first])} / {fmt(values[second])}"


MARK = re.compile(r"\s?\[(\d+)\]")


def spelled(text: str, notes: list[str]) -> str:
    """A cell with its footnotes written out: 'not priced [2]' -> the note that begins with it, 'empty [1]' ->
    'empty (not measured)'."""
    found = [notes[int(n) - 1] for n in MARK.findall(text) if 0 < int(n) <= len(notes)]
    head = MARK.sub("", text).strip()
    if not found:
        return head
    if len(found) == 1 and found[0].startswith(head):
        return found[0]
    return f"{head} ({'; '.join(found)})" if head else "; ".join(found)


def lift(table: Table, keep: int = 1) -> tuple[Table, list[tuple[str, str]]]:
    """The table without the columns whose cell is the same on every row (of two rows or more; the first `keep`
    columns always stay), and those columns as (header, value spelled out) for one sentence above it; the
    footnotes renumbered to those the remaining cells point to."""
    if len(table.rows) < 2:
        return table, []
    same = [i for i in range(keep, len(table.head))
            if all(not isinstance(row[i], Link) and str(row[i]) == str(table.rows[0][i]) for row in table.rows)]
    lifted = [(str(table.head[i]), spelled(str(table.rows[0][i]), table.notes)) for i in same]
    kept = [i for i in range(len(table.head)) if i not in same]
    result = Table(table.ident, [table.head[i] for i in kept])

    def renumbered(cell):
        if isinstance(cell, Link):
            return cell
        return MARK.sub(lambda m: f" {result.note(table.notes[int(m.group(1)) - 1])}", str(cell))

    result.rows = [[renumbered(row[i]) for i in kept] for row in table.rows]
    return result, [(head, value) for head, value in lifted if value]

