"""The confirmation runs of the chosen configurations read from the attempts, their verdicts
(core/measurement/confirmation.py), and the report's lines that list every one of them."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.measurement.confirmation import Confirmation, ConfirmationRun, confirm
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.core.names import EXPECTED_IDS, MEASURED_TOTAL_S, PASS_S, REPETITIONS, STEADY_LAP_S, TOKENS_INPUT
from gpucost_mlflow.report.measured import ReportAttempts, at_each_seed, median_of
from gpucost_mlflow.report.versus_reference import flips_text
from gpucost_mlflow.tracking.schema import CONFIRMATION_ROLE, REFERENCE_OUTPUTS


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _any_corpus(identity: Identity) -> Identity:
    return replace(identity, corpus_fingerprint="")


def runs_of(measured: ReportAttempts, config: Configuration) -> list[ConfirmationRun]:
    """The confirmation runs of one configuration, oldest first: its device, variant and identity (at any of its
    seeds), on any corpus."""
    if config.identity is None:
        def mine(identity: Identity) -> bool:
            return (identity.device, identity.variant) == (config.device, config.variant)
    else:
        wanted = {_any_corpus(identity) for identity in at_each_seed(config.identity)}

        def mine(identity: Identity) -> bool:
            return _any_corpus(identity) in wanted
    positions = [p for p, a in enumerate(measured.attempts) if a.role == CONFIRMATION_ROLE and mine(a.identity)]
    marked = [measured.attempts[p].place.confirmation == REFERENCE_OUTPUTS for p in positions]
    rows = measured.table.iloc[positions].assign(reference_outputs=marked).sort_values("start_time")
    total = rows[MEASURED_TOTAL_S] if MEASURED_TOTAL_S in rows else rows[PASS_S]
    counts = rows[REPETITIONS] if REPETITIONS in rows else pd.Series([None] * len(rows), index=rows.index)
    tokens = rows[TOKENS_INPUT] if TOKENS_INPUT in rows else pd.Series([None] * len(rows), index=rows.index)
    # its rate at the steady lap, as the benchmark passes it is compared with are read (before steady laps: pass_s)
    corpus_s = rows[STEADY_LAP_S].fillna(rows[PASS_S]) if STEADY_LAP_S in rows else rows[PASS_S]
    return [ConfirmationRun(row.run_id, str(row.status), str(row.reason or ""),
                            int(row.expected) if _number(row.expected) else None, _number(one),
                            _number(total_s) if _number(total_s) is not None else _number(row.pass_s),
                            int(count) if _number(count) else None, _number(real), bool(row.reference_outputs))
            for row, one, total_s, count, real in zip(rows.assign(expected=rows[EXPECTED_IDS]).itertuples(index=False),
                                                      corpus_s, total, counts, tokens)]


HELD = "; quality held"  # how core/measurement/confirmation.py says a run's quality held


def _changed(measured: ReportAttempts, run_ids: set[str]) -> dict[str, str]:
    """The answers each of these runs changed against the reference's outputs ('1 lost, 0 gained of 1,000 inputs
    (exact McNemar p = 1)'), where any changed: a held quality bar does not hide a lost answer (issue 66)."""
    found = {}
    for position, attempt in enumerate(measured.attempts):  # row i of the table is attempt i: found by its run
        if attempt.run_id not in run_ids:
            continue
        changed = flips_text(measured.table.iloc[[position]])
        if changed and not changed.startswith("no correct answer changed"):
            found[attempt.run_id] = changed
    return found


def _with_flips(verdict: Confirmation, changed: dict[str, str]) -> Confirmation:
    """The verdict with each run's changed answers after its 'quality held'."""
    runs = tuple(replace(run, figures=run.figures.replace(HELD, f"{HELD}: {changed[run.run_id]} against the "
                                                                 "reference's outputs", 1))
                 if run.run_id in changed else run for run in verdict.runs)
    figures = next((new.figures for old, new in zip(verdict.runs, runs) if old.figures == verdict.figures),
                   verdict.figures)
    return replace(verdict, figures=figures, runs=runs)


def verdicts(measured: ReportAttempts, chosen: list[Assessment], inputs_per_pass: int, min_s: float
             ) -> dict[str, Confirmation]:
    """Each chosen configuration's confirmation verdict, by its name, with the answers its runs changed."""
    found = {a.configuration.name: confirm(a.configuration.durations.values, inputs_per_pass,
                                           runs_of(measured, a.configuration), min_s,
                                           median_of(measured.attempts_of(a.configuration), TOKENS_INPUT))
             for a in chosen}
    changed = _changed(measured, {run.run_id for verdict in found.values() for run in verdict.runs})
    return {name: _with_flips(verdict, changed) for name, verdict in found.items()}


def lines(confirmed: dict[str, Confirmation]) -> list[str]:
    """The report's Confirmation section: each configuration's verdict, then every one of its confirmation runs with
    its outcome (an excluded run with its cause), so no run that did not hold can go unseen; a verdict resting on its
    one run is one line, never the same figures twice."""
    found = []
    for name, verdict in confirmed.items():
        runs = verdict.runs
        if len(runs) == 1 and runs[0].outcome == verdict.verdict and runs[0].figures == verdict.figures:
            found.append(f"{name}: {verdict.verdict} by its one confirmation run ({runs[0].run_id}): {runs[0].figures}")
            continue
        found.append(f"{name}: {verdict.verdict} ({verdict.figures})")
        found += [f"{name}, confirmation run {number} of {len(runs)} ({run.run_id}): {run.outcome}: "
                  f"{run.figures}" for number, run in enumerate(runs, 1)]
    return found
