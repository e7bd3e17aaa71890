"""The protocol's race read from the attempts (core/campaign/race.py holds the rule): every configuration assessed as
the report assesses it, those of one campaign the runners, the others candidates beside them. The live campaign's
referee (cli/passes.py) and the replay over recorded stores (benchmarks/race_replay.py) both read the race here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from gpucost_mlflow.core.campaign.race import Race, Runner, Stop, stops
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.money.catalog import Catalog, dated
from gpucost_mlflow.core.money.choice import Choice, choose
from gpucost_mlflow.core.money.decision import Assessment, Rules, assess
from gpucost_mlflow.report import seeded
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.report.stage import looked
from gpucost_mlflow.tracking.attempts_table import Attempt

# No --catalog: nothing is priced, so only the quality and deadline stops apply.
NO_CATALOG = Catalog("", "no catalog", "", ())


def race_of(protocol: Protocol) -> Race | None:
    """The race the protocol declares, None when it declares none (the full design)."""
    if protocol.race_from_round is None:
        return None
    return Race(protocol.race_from_round, protocol.passes_per_variant, protocol.confidence)


def assessed(attempts: Sequence[Attempt], protocol: Protocol, catalog: Catalog | None, now: dt.datetime
             ) -> tuple[list[Assessment], ReportAttempts]:
    """Every configuration of these attempts assessed as the report assesses it at `now` (its window placed, its
    prices aged), and the attempts measured. The rules are report/build.py `rules_of`'s, read here without the
    report's writers (matplotlib): the live race imports this after each round, inside the campaign's clock."""
    protocol = protocol.at(now)
    catalog, _ = dated(catalog or NO_CATALOG, now.date(), protocol.max_price_age_days)
    measured = ReportAttempts.of(attempts)
    configs, _ = seeded.configurations(measured, protocol)
    return assess(configs, Rules.of(protocol, catalog, now.date(), *looked(protocol, measured.table))), measured


def chosen(attempts: Sequence[Attempt], protocol: Protocol, catalog: Catalog | None, now: dt.datetime) -> Choice:
    """The choice these attempts make under the protocol and the catalog (core/money/choice.py `choose`)."""
    assessments, _ = assessed(attempts, protocol, catalog, now)
    return choose(assessments, deadline_declared=protocol.deadline is not None)


def _runner(a: Assessment, measured: ReportAttempts) -> Runner:
    """A configuration as the race reads it: its rejected passes' quality verdicts, and whether its workload is
    deterministic (its kind's declaration, which each pass records as `seed.workload_deterministic`)."""
    rows = measured.attempts_of(a.configuration)
    rejections = tuple(r.verdict.quality_verdict for r in rows if r.status == Status.REJECTED)
    workloads = {r.identity.workload for r in rows} or {registry.DEFAULT}
    try:
        deterministic = all(registry.of_workload(w).deterministic for w in workloads)
    except KeyError:  # a kind no installed package declares now: not known to be deterministic
        deterministic = False
    return Runner(a, rejections, deterministic)


def stops_after(attempts: Sequence[Attempt], protocol: Protocol, catalog: Catalog | None, round_: int,
           campaign_id: str = "", now: dt.datetime | None = None) -> list[Stop]:
    """The race's stops after round `round_` (none without a race): the configurations with a pass in campaign
    `campaign_id` (every configuration when '') are the runners, the others candidates beside them."""
    race = race_of(protocol)
    if race is None:
        return []
    assessments, measured = assessed(attempts, protocol, catalog, now or dt.datetime.now(dt.timezone.utc))

    def racing(a: Assessment) -> bool:
        return not campaign_id or campaign_id in {r.place.campaign_id for r in measured.attempts_of(a.configuration)}

    runners = [_runner(a, measured) for a in assessments if racing(a)]
    return stops(runners, [a for a in assessments if not racing(a)], race, round_)
