"""The attempts and exclusions sections of the decision report as content: every attempt in two narrower tables
(outcome, then checks and utilisation), and the exclusions with the protocol's rule; render.py writes them."""

from __future__ import annotations

import pandas as pd

from gpucost_mlflow.core.names import (
    COMPLETED_ENTRIES,
    EXPECTED_IDS,
    MACRO_F1,
    MFU_PADDED,
    MFU_USEFUL,
    OBSERVED_IDS,
    PASS_S,
    STEADY_LAP,
    STEADY_LAP_S,
)
from gpucost_mlflow.report.cells import Table, cell, pair, run_cell
from gpucost_mlflow.report.model import Report

# The attempts-table columns the report shows; attempts.csv keeps them all.
ATTEMPT_COLUMNS = ["pass_index", "round", "position", "variant", "device", "status", "reason", PASS_S, MACRO_F1,
                   "quality_verdict", "run_id", EXPECTED_IDS, OBSERVED_IDS, "ids_match", "corpus_accepted",
                   COMPLETED_ENTRIES, MFU_USEFUL, MFU_PADDED, "mfu_reason", "overlapped_with"]
ATTEMPT_HEAD = ["#", "campaign", "round", "position", "variant", "device", "status", "reason", f"{STEADY_LAP} (s)",
                "macro-F1", "quality", "run"]
CHECK_HEAD = ["#", "run", "ids expected", "ids observed", "ids match", "corpus accepted", "completed entries",
              "MFU useful / padded", "overlapped with"]


SHOWN = ["run_id", "campaign_id", "round", "position", "variant", "device", "status", "reason", STEADY_LAP_S, PASS_S,
         MACRO_F1, "quality_verdict", EXPECTED_IDS, OBSERVED_IDS, "ids_match", "corpus_accepted", COMPLETED_ENTRIES,
         MFU_USEFUL, MFU_PADDED, "mfu_reason", "overlapped_with"]  # what the two tables read of attempts.csv's row


def attempt_tables(report: Report) -> tuple[Table, Table]:
    """The attempts in two narrower tables: outcome, then checks and utilisation; '#' (every attempt numbered once,
    oldest first, across campaigns) and the run join them, and the campaign each ran in is said. They show the
    attempts table (attempts.csv) as the report holds it, a column it lacks empty."""
    outcome, checks = Table("attempts", ATTEMPT_HEAD), Table("attempt-checks", CHECK_HEAD)
    shown = report.attempts.reindex(columns=SHOWN).itertuples(index=False, name=None)
    for index, (run_id, campaign, round_, position, variant, device, status, reason, steady, pass_s, f1, verdict,
                expected, observed, ids, accepted, completed, useful, padded, mfu_reason, overlapped) in enumerate(
                    shown, 1):
        number = str(index)
        run = run_cell(report, run_id)
        outcome.rows.append([number, cell(campaign) or "none", cell(round_), cell(position), cell(variant),
                             cell(device), cell(status), outcome.fold(cell(reason)),
                             cell(steady if pd.notna(steady) else pass_s), cell(f1), outcome.fold(cell(verdict), 16),
                             run])
        mfu = {MFU_USEFUL: useful, MFU_PADDED: padded} if pd.notna(useful) and pd.notna(padded) else {}
        others = ", ".join(other[:8] for other in cell(overlapped).split(",") if other)
        checks.rows.append([number, run, cell(expected), cell(observed), cell(ids), cell(accepted), cell(completed),
                            pair(checks, mfu, MFU_USEFUL, MFU_PADDED, lambda v: f"{v:.3f}", cell(mfu_reason)),
                            others])
    return outcome, checks


EXCLUSIONS_TITLE = "Exclusions (PROTOCOL.md §6)"
EXCLUSION_HEAD = ["variant", "device", "run id", "cause", "by", "when (UTC)"]


def exclusion_text(report: Report) -> tuple[list[str], str]:
    """Per variant 'excluded k of n attempts' (none: one line saying so), and the protocol's rule."""
    counts = ([f"{v.variant}: excluded {len(v.excluded)} of {v.attempts} attempts" for v in report.exclusions]
              if any(v.excluded for v in report.exclusions) else [])
    rule = report.exclusion_rule or "not declared"
    return counts, f"Exclusion rule of the protocol, the same for every variant: {rule}"


def exclusions_table(report: Report) -> Table:
    """Every excluded attempt with its device, run, cause, who excluded it and when."""
    rows = [[v.variant, device, run_cell(report, run_id, short=False), *rest]
            for v in report.exclusions for device, run_id, *rest in v.excluded]
    return Table("exclusions", EXCLUSION_HEAD, rows)
