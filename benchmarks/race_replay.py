"""Replay before trust (issue 63): the protocol's race replayed over recorded stores, before a campaign trusts it.

Each store's benchmark passes are shuffled into many orders of rounds (seeded): per configuration, a random order of
its recorded passes, the i-th its round i. Each order is raced as a campaign races it (report/race.py `stops_after`
after every round but the last, a stop carried on the configuration's rows as a campaign's tag is), then decided
(core/money/choice.py `choose`) over the passes the race ran, beside the decision over every pass (the full design).
Per store, two figures:

  passes saved          the share of the recorded benchmark passes the race did not run
  the choice stopped    how often the race stopped a configuration the full design chooses (or leaves undecided):
                        it must be 0 on every store; if not, the rule is wrong (exit code 1)

and how often the race's decision (the configurations chosen, tied or undecided) is the full design's.

    .venv/bin/python benchmarks/race_replay.py [--store URI --experiment NAME --protocol FILE [--catalog FILE ...]]
        [--from-round 2] [--orders 200] [--seed 0] [--noise 0.03] [--medians b=2.62,x=3.1,y=3.6]

Without --store it replays the demo's store (./mlflow.db, experiment gpucost-demo, projects/protocol-demo.yaml and
catalog/this-machine.csv when they exist), the recorded store of tests/recorded/attempts-before-54 (under the
protocol locked on it, over catalog/labkit-2026-09-24.csv) and a demo-like store written here: the ten configurations
`make demo` measured on 2 CPU cores (their medians, benchmarks/results/2026-12-01-demo-decision-cpu.txt, halved for
the demo protocol's 500-input slice), five passes each with seeded noise (log-normal, --noise; one pass in ten 15 %
slower, as a pass beside another job), batch8-int8 rejected on label agreement, under projects/protocol-demo.yaml
priced by the hour at 0.10 USD; with --medians, only such a store of the configurations named (seconds per corpus).
A protocol that declares no race is raced from round --from-round; one that declares its own is raced as declared.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import random
import sys
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.campaign.schedule import rotated
from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.money.catalog import Catalog, example_catalog, load_catalog, merged
from gpucost_mlflow.core.names import FIRST_LAP_S, MEASURED_TOTAL_S, REPETITIONS
from gpucost_mlflow.report.measured import BENCHMARK
from gpucost_mlflow.report.race import chosen, race_of, stops_after
from gpucost_mlflow.tracking import experiments, reader, schema
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.run_records import RunRecord

ROOT = Path(__file__).resolve().parents[1]
DEMO = ("sqlite:///mlflow.db", "gpucost-demo", ROOT / "projects" / "protocol-demo.yaml",
        ROOT / "catalog" / "this-machine.csv")
RECORDED = ROOT / "tests" / "recorded" / "attempts-before-54"
LABKIT = ROOT / "catalog" / "labkit-2026-09-24.csv"
# Median pass_s per 1,000 inputs of `make demo` on 2 CPU cores (benchmarks/results/2026-12-01-demo-decision-cpu.txt).
DEMO_MEDIANS = {"batch32-bf16-lengthgrouped": 2.061, "batch16-bf16-lengthgrouped": 2.108,
                "batch64-bf16-lengthgrouped": 2.230, "batch8-bf16-lengthgrouped": 2.276, "batch8-bf16": 4.803,
                "batch8-lengthgrouped": 4.823, "batch1": 8.228, "batch4": 8.658, "batch8": 10.585, "batch8-int8": 3.414}
REJECTED = {"status": "rejected", "quality": "failed: reference_agreement",
            "reason": "reference_agreement: label agreement 94.3 % < 97 %"}

Key = tuple[str, str]  # a configuration as a stop names it: (device, variant)


@dataclasses.dataclass(frozen=True)
class Store:
    """One recorded store to replay: its attempts, the protocol they are raced under, the catalog and its name."""

    name: str
    attempts: tuple[Attempt, ...]
    protocol: Protocol
    catalog: Catalog | None
    now: dt.datetime


@dataclasses.dataclass(frozen=True)
class Raced:
    """One order raced: the benchmark passes it ran, the configurations it stopped (and why) and its decision."""

    ran: int
    stopped: dict[Key, str]
    decision: frozenset[Key]


@dataclasses.dataclass(frozen=True)
class Figures:
    """A store's replay: orders raced, recorded benchmark passes, passes the race ran over all orders, orders whose
    stops hit the full design's decision, orders whose decision is the full design's, and how often each
    configuration was stopped."""

    orders: int
    recorded: int
    ran: int
    choice_stopped: int
    same_decision: int
    full: frozenset[Key]
    stops: dict[str, int]

    @property
    def saved(self) -> float:
        return 1 - self.ran / (self.recorded * self.orders) if self.recorded and self.orders else 0.0

    def lines(self) -> list[str]:
        stops = "; ".join(f"{name} in {count}" for name, count in sorted(self.stops.items())) or "none"
        return [(f"  passes saved: {100 * self.saved:.1f} % ({self.ran / max(self.orders, 1):.1f} of {self.recorded} "
                 "benchmark passes run per order)"),
                (f"  the choice stopped: {self.choice_stopped} of {self.orders} orders "
                 f"({100 * self.choice_stopped / max(self.orders, 1):.1f} %; the full design decides "
                 f"{', '.join(sorted(_name(key) for key in self.full)) or 'nothing'})"),
                f"  decision as the full design's: {self.same_decision} of {self.orders} orders",
                f"  configurations stopped (orders): {stops}"]


def _key(attempt: Attempt) -> Key:
    return attempt.identity.device, attempt.identity.variant


def _name(key: Key) -> str:
    return f"{key[1]} on {key[0]}"


def _decision(attempts: Sequence[Attempt], store: Store) -> frozenset[Key]:
    """The configurations a decision over these attempts chooses, ties or leaves undecided."""
    choice = chosen(attempts, store.protocol, store.catalog, store.now)
    return frozenset((a.configuration.device, a.configuration.variant) for a in choice.chosen + choice.undecided)


def _kept(others: list[Attempt], lanes: dict[Key, list[Attempt]], stopped: dict[Key, tuple[int, str]],
          rounds: int | None) -> list[Attempt]:
    """The attempts a race has run after `rounds` rounds (None: to the end): a stopped configuration's up to its stop,
    each carrying why (as the attempts table's `stopped` column does)."""
    found = list(others)
    for key, passes in lanes.items():
        if key in stopped:
            count, why = stopped[key]
            found += [dataclasses.replace(a, stopped=why) for a in passes[:count]]
        else:
            found += passes if rounds is None else passes[:rounds]
    return found


def race_one(store: Store, lanes: dict[Key, list[Attempt]], others: list[Attempt]) -> Raced:
    """One order of rounds raced as a campaign races it: after each round but the last, the stops; then the decision
    over the passes it ran."""
    race = race_of(store.protocol)
    stopped: dict[Key, tuple[int, str]] = {}
    longest = max((len(p) for p in lanes.values()), default=0)
    for round_ in range(1, min(race.passes, longest)):
        for stop in stops_after(_kept(others, lanes, stopped, round_), store.protocol, store.catalog, round_,
                                now=store.now):
            key = (stop.device, stop.variant)
            if key in lanes and key not in stopped:
                stopped[key] = (min(round_, len(lanes[key])), stop.reason)
    kept = _kept(others, lanes, stopped, None)
    ran = sum(1 for a in kept if a.role == BENCHMARK)
    return Raced(ran, {key: why for key, (_, why) in stopped.items()}, _decision(kept, store))


def replay(store: Store, orders: int, seed: int) -> Figures:
    """The store's benchmark passes shuffled into `orders` orders of rounds (seeded) and each raced."""
    rng = random.Random(seed)
    others = [a for a in store.attempts if a.role != BENCHMARK]
    recorded: dict[Key, list[Attempt]] = {}
    for attempt in store.attempts:
        if attempt.role == BENCHMARK:
            recorded.setdefault(_key(attempt), []).append(attempt)
    full = _decision(store.attempts, store)
    ran = hit = same = 0
    stops: dict[str, int] = {}
    for _ in range(orders):
        lanes = {key: rng.sample(passes, len(passes)) for key, passes in recorded.items()}
        raced = race_one(store, lanes, others)
        ran += raced.ran
        hit += any(key in full for key in raced.stopped)
        same += raced.decision == full
        for key in raced.stopped:
            stops[_name(key)] = stops.get(_name(key), 0) + 1
    return Figures(orders, sum(len(p) for p in recorded.values()), ran, hit, same, full, stops)


def raced_protocol(path: Path, from_round: int) -> Protocol:
    """The protocol as raced: its own race, else one from `from_round` (never past its passes)."""
    protocol = load_protocol(path)
    if protocol.race_from_round is not None:
        return protocol
    return dataclasses.replace(protocol, race_from_round=min(from_round, protocol.passes_per_variant))


def read_store(uri: str, experiment: str, protocol: Protocol, catalogs: Sequence[Path]) -> Store:
    """A tracking store's experiment as the replay reads it (every attempt, through the project's reader)."""
    client = MlflowClient(tracking_uri=uri)
    attempts = tuple(reader.attempts(client, experiments.named(client, experiment)))
    catalog = merged([load_catalog(path) for path in catalogs]) if catalogs else None
    return Store(f"{uri} experiment '{experiment}'", attempts, protocol, catalog, dt.datetime.now(dt.timezone.utc))


def recorded_store(from_round: int) -> Store:
    """tests/recorded/attempts-before-54: a varied store's runs as the reader reads them, under its locked protocol."""
    data = json.loads((RECORDED / "records.json").read_text(encoding="utf-8"))
    records = [RunRecord(**record) for record in data["records"]]
    for record in records:
        record.metrics = {k: float("nan") if v == "nan" else v for k, v in record.metrics.items()}
    now = dt.datetime.fromisoformat(data["now"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "protocol.yaml"
        path.write_text(data["experiment_tags"][schema.PROTOCOL_TEXT], encoding="utf-8")
        protocol = raced_protocol(path, from_round)
    return Store(f"{RECORDED.relative_to(ROOT)}", tuple(reader.attempts_of(records, now)), protocol,
                 load_catalog(LABKIT), now)


def demo_like_store(folder: Path, seed: int, noise: float, medians: dict[str, float] | None = None) -> Store:
    """The demo's configurations (or `medians`: seconds per 500-input corpus by variant), five passes each in rotated
    rounds with seeded noise, written through the project's own writer (tests/scenario.py) into a store in `folder`,
    under the demo protocol priced by the hour."""
    import mlflow

    sys.path.insert(0, str(ROOT))
    from tests import scenario  # the checkout's writer of attempts, as the tests write them

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    write, rng = scenario.attempt_writer("demo-like"), random.Random(seed)
    medians = medians or {variant: seconds / 2 for variant, seconds in DEMO_MEDIANS.items()}
    for slot in rotated(list(medians), 5):
        seconds = medians[slot.variant] * rng.lognormvariate(0, noise) * (1.15 if rng.random() < 0.1 else 1)
        laps = max(2, math.ceil(3 / seconds))  # the demo protocol's min_measured_s: 3 s timed, two laps at least
        write(slot.variant, "AMD EPYC", round(seconds, 3), **(REJECTED if slot.variant == "batch8-int8" else {}),
              metrics_extra={REPETITIONS: laps, MEASURED_TOTAL_S: laps * seconds, FIRST_LAP_S: seconds})
    catalog = folder / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    store = read_store(uri, "demo-like", raced_protocol(DEMO[2], 2), [catalog])
    said = ", ".join(f"{variant} {seconds:g} s" for variant, seconds in medians.items())
    return dataclasses.replace(store, name=f"demo-like store (seed {seed}, noise {noise:g}; medians {said})")


def stores(args: argparse.Namespace, folder: Path) -> list[Store]:
    """The stores named, else the demo's (where it exists) and the recorded one."""
    if args.store:
        if not (args.experiment and args.protocol):
            raise SystemExit("--store needs --experiment and --protocol")
        return [read_store(args.store, args.experiment, raced_protocol(args.protocol, args.from_round),
                           args.catalog)]
    found = []
    uri, experiment, protocol, catalog = DEMO
    if Path("mlflow.db").exists():
        found.append(read_store(uri, experiment, raced_protocol(protocol, args.from_round),
                                [catalog] if catalog.exists() else []))
    if args.medians:
        return [demo_like_store(folder, args.seed, args.noise, args.medians)]
    return found + [recorded_store(args.from_round), demo_like_store(folder, args.seed, args.noise)]


def medians_of(text: str) -> dict[str, float]:
    """'b=2.62,x=3.1': a demo-like store's own configurations and their median seconds per corpus."""
    return {name.strip(): float(seconds) for name, seconds in (part.split("=") for part in text.split(","))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a tracking URI (sqlite:///path/mlflow.db, http://host:5000)")
    parser.add_argument("--experiment")
    parser.add_argument("--protocol", type=Path)
    parser.add_argument("--catalog", type=Path, action="append", default=[])
    parser.add_argument("--from-round", type=int, default=2, help="the race of a protocol that declares none")
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.03, help="the demo-like store's log-normal spread")
    parser.add_argument("--medians", type=medians_of, help="replay only a demo-like store of these configurations: "
                        "NAME=SECONDS per 500-input corpus, comma-separated (b=2.62,x=3.1,y=3.6)")
    args = parser.parse_args(argv)
    wrong = False
    with tempfile.TemporaryDirectory() as folder:
        found = stores(args, Path(folder))
    for store in found:
        race = race_of(store.protocol)
        figures = replay(store, args.orders, args.seed)
        print(f"{store.name}: race from round {race.from_round} of {race.passes}, {figures.recorded} benchmark "
              f"passes, {args.orders} orders (seed {args.seed})")
        print("\n".join(figures.lines()))
        wrong = wrong or figures.choice_stopped > 0
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
