"""Which offers are worth measuring (`gpucost fleet plan`, docs/fleet.md): for the device of every catalog offer no
pass ran on, a bound, the memory fit and a verdict, from the configurations measured so far on any device.

- **bound**: the work's useful FLOPs (per corpus, as measured, times the protocol's expected deliverables) at that
  device's dense datasheet peak, split at best over every GPU of the lot, plus the protocol's setup hours, billed as the
  offer bills: no configuration there can cost less (at the precisions accepted so far). A floor, never a price.
- **memory**: the peak memory per GPU measured (on a CPU, the encoder's estimate) against that device's memory.
- **verdict**: `worth measuring` when even the bound beats the best committed cost measured so far and the memory fits;
  `not worth measuring` when the bound already costs as much or more, or the memory does not fit; `unknown` without a
  device table row, a peak at the precision, a FLOP count or an estimate of the memory.

No cost is estimated for a device never measured: a datasheet peak gives no throughput (PROTOCOL.md §8), and a
measured efficiency carried from another device would print a dollar figure that reads as one.

Pure: the device table (`catalog/device-specs-<date>.csv`) is read by core/fleet/devices.py, the store at the
edge (cli/fleet_plan.py).
Nothing of a plan enters a decision: `gpucost report` decides on measured passes only.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import budget
from gpucost_mlflow.core.fleet.devices import NO_QUANTIZATION, DeviceSpec, Tables, peak_for, spec_for
from gpucost_mlflow.core.fleet.jobs import Job
from gpucost_mlflow.core.money import billing
from gpucost_mlflow.core.money.catalog import Catalog, Package
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.money.market import Offer
from gpucost_mlflow.core.money.plans import Plan, plan_for, to_hours

FIT_MARGIN = 0.15  # within 15 % of a GPU's memory neither a measured peak nor an estimate can tell: unknown
WORTH, NOT_WORTH, UNKNOWN = "worth measuring", "not worth measuring", "unknown"
NEVER_DECIDES = "Nothing of this plan enters a decision: `gpucost report` decides on measured passes only."
HINT_LISTED = 8  # devices a nothing-priced hint names before 'and N more'


@dataclass(frozen=True)
class ConfigurationFigures:
    """A measured configuration as the plan carries it: its figures, each with where it comes from or why it is
    empty."""

    name: str  # 'batch8 on NVIDIA L4'
    variant: str
    device: str
    precision: str
    quantization: str
    flop_per_corpus: float | None  # useful FLOPs of one corpus: useful_flop_per_s x pass_s
    flop_note: str
    memory_bytes: float | None  # the peak memory per GPU, measured on a GPU or estimated
    memory_note: str
    gpus: int = 1  # GPUs one pass uses (lanes)


@dataclass(frozen=True)
class Candidate:
    """A configuration as the report assessed it: what the plan may carry and compare with."""

    measured: ConfigurationFigures
    feasible: bool
    committed: Decimal | None  # the committed cost of its cheapest covering plan (None: not priced)
    currency: str
    plan: str  # that plan in words, or why it is not priced
    median_s: float | None
    meets_deadline: bool | None = None


@dataclass(frozen=True)
class Best:
    """The best committed cost measured so far: what an offer's bound has to beat."""

    cost: Decimal
    currency: str
    name: str
    plan: str

    def line(self) -> str:
        return f"Best committed cost measured so far: {money(self.cost, self.currency)}, {self.name} ({self.plan})."


@dataclass(frozen=True)
class Basis:
    """What the plan carries, and against what: the measured configuration, the best cost, the precisions accepted so
    far (the bound takes the fastest of them) and the protocol's volume and setup."""

    measured: ConfigurationFigures
    best: Best | None
    precisions: tuple[str, ...]
    deliverables: int
    setup_hours: Decimal
    notes: tuple[str, ...] = ()


def _rank(c: Candidate) -> tuple:
    """Priced and feasible first, cheapest first; then feasible; then the fastest median pass (as the report prefers
    the faster at the same cost)."""
    return (c.committed is None or not c.feasible, c.committed or 0, not c.feasible,
            c.median_s if c.median_s is not None else math.inf, c.measured.name)


def basis(candidates: list[Candidate], deliverables: int, setup_hours: Decimal) -> Basis:
    """The best committed cost (feasible, priced, not late) and the configuration the plan carries: the cheapest
    priced one with a GPU analogue and a FLOP count, else the fastest feasible, else the fastest measured."""
    priced = sorted((c for c in candidates if c.feasible and c.committed is not None and c.meets_deadline is not False),
                    key=_rank)
    cheapest = priced[0] if priced else None
    best = Best(cheapest.committed, cheapest.currency, cheapest.measured.name, cheapest.plan) if cheapest else None
    usable = sorted((c for c in candidates
                     if c.measured.quantization == NO_QUANTIZATION and c.measured.flop_per_corpus is not None),
                    key=_rank)
    if not usable:
        raise GpucostError("no measured configuration to carry: none has an accepted pass with a FLOP count and no "
                           "CPU-only quantization (run a campaign first; a python: workload without a FLOP count "
                           "cannot be carried)")
    carried = usable[0]
    notes = []
    if cheapest is not None and cheapest not in usable:
        why = (f"its quantization {cheapest.measured.quantization} has no GPU analogue"
               if cheapest.measured.quantization != NO_QUANTIZATION else "it has no FLOP count")
        notes.append(f"{cheapest.measured.name} holds the best cost but cannot be carried to a GPU ({why}): "
                     f"{carried.measured.name} is carried")
    if not carried.feasible:
        notes.append(f"{carried.measured.name} is carried although no configuration is feasible yet: its passes so far "
                     "size the work")
    accepted = [c.measured.precision for c in usable if c.feasible] or [carried.measured.precision]
    return Basis(carried.measured, best, tuple(dict.fromkeys(accepted)), deliverables, setup_hours, tuple(notes))


@dataclass(frozen=True)
class Line:
    """One device and lot size of the catalogs: its bound, its memory fit and its verdict, each said with its basis."""

    gpu: str
    gpus_per_lot: int
    rows: tuple[Package, ...]  # every catalog row of this device and lot size
    spec: DeviceSpec | None
    offer: Package  # the row with the lowest bound (the first row when there is no bound)
    bound: Plan | None
    bound_basis: str
    memory: str
    verdict: str
    why: str

    @property
    def launchable(self) -> bool:
        """An on-demand hourly offer of a market catalog: something `gpucost fleet launch` can rent through SkyPilot."""
        return bool(self.on_demand)

    @property
    def on_demand(self) -> list[Package]:
        """Its rows `fleet launch` could rent: on-demand hourly offers of a market catalog (an instance type)."""
        return [r for r in self.rows if r.instance and r.billing == billing.HOURLY.name]

    @property
    def accelerator(self) -> str:
        """The GPU type as SkyPilot names it (the device table's row), for `--gpus`."""
        return self.spec.accelerator if self.spec else self.gpu

    def text(self) -> str:
        """The device's block: heading, lower bound, memory, verdict."""
        names = "; ".join(self.offer.device_names) or "device names unknown"
        where = self.offer.offer or f"{self.offer.provider} {self.offer.describe()}"
        head = (f"{self.gpu} x{self.gpus_per_lot} ({names}; {len(self.rows)} row{'s' if len(self.rows) > 1 else ''}, "
                f"lowest bound on {where} at {self.offer.price_per_lot:,} {self.offer.currency} per lot"
                f"{'-hour' if self.offer.hourly else ''}; device table: {self.spec.label if self.spec else 'no row'})")
        bound = f"{money(self.bound.total, self.bound.currency)}: " if self.bound else "empty: "
        return "\n".join([head, f"  lower bound {bound}{self.bound_basis}", f"  memory: {self.memory}",
                          f"  verdict: {self.verdict}: {self.why}"])


def _hours(flops: float, rate: float, setup: Decimal) -> tuple[Decimal, float]:
    """Setup plus the work at this rate, in hours (micro-hours), and the work's own hours."""
    work = flops / rate / 3600
    return to_hours(setup) + to_hours(work), work


def _fit(basis_: Basis, spec: DeviceSpec | None) -> tuple[bool | None, str]:
    """Whether the measured memory peak per GPU fits the device's memory: True, False, or None (cannot tell) and why."""
    m = basis_.measured
    if m.memory_bytes is None:
        return None, f"unknown: {m.memory_note}"
    if spec is None:
        return None, "unknown: no device table row"
    capacity = spec.memory_gib * 2**30
    said = f"{m.memory_bytes / 2**30:.2f} GiB ({m.memory_note}) for {spec.memory_gib:g} GiB"
    if abs(m.memory_bytes - capacity) <= FIT_MARGIN * capacity:
        return None, f"too close to say: {said}"
    if m.memory_bytes < capacity:
        return True, f"fits: {said}"
    return False, f"does not fit: {said}"


def _bound(basis_: Basis, spec: DeviceSpec, rows: list[Package]) -> tuple[Plan | None, str]:
    """The lowest plan of these rows at the device's fastest accepted precision over all of a lot's GPUs, and its
    basis."""
    m = basis_.measured
    peaks = [(peak, words, precision) for precision in basis_.precisions
             for peak, words in [peak_for(spec, precision, m.quantization)] if peak is not None]
    if not peaks:
        return None, peak_for(spec, m.precision, m.quantization)[1]
    peak, words, precision = max(peaks, key=lambda p: p[0])
    lot = rows[0].gpus_per_lot
    flops = m.flop_per_corpus * basis_.deliverables
    hours, work = _hours(flops, peak * lot, basis_.setup_hours)
    plans = [p for p in (plan_for(r, hours, lot, work / basis_.deliverables) for r in rows) if p is not None]
    if not plans:
        return None, "no row covers the bound's window (its interruptions would outrun the work)"
    split = f" x {lot} GPUs (the work split over the whole lot at best; the lot price counts whole)" if lot > 1 else ""
    said = (f"{flops:.3g} useful FLOPs ({m.flop_per_corpus:.3g} per corpus, {m.flop_note}, x {basis_.deliverables:,} "
            f"expected deliverable{'s' if basis_.deliverables != 1 else ''}) at {words}{split}: {work:.4f} h + "
            f"{basis_.setup_hours:f} h setup (the protocol's plan); {precision}, the fastest here of the precisions "
            f"accepted so far ({', '.join(basis_.precisions)})")
    cheapest = min(plans, key=lambda p: (p.total, p.offer.line))
    return cheapest, f"{said}; {cheapest.describe()}"


def _verdict(basis_: Basis, bound: Plan | None, fit: tuple[bool | None, str], why_no_bound: str) -> tuple[str, str]:
    """Worth measuring, not worth measuring or unknown, and why: from the bound and the memory fit only."""
    if bound is None:
        return UNKNOWN, f"no bound ({why_no_bound})"
    fits, memory = fit
    best = basis_.best
    if best is not None and bound.total >= best.cost:
        return NOT_WORTH, (f"even its bound {money(bound.total, bound.currency)} costs as much as or more than the "
                           f"best committed {money(best.cost, best.currency)} ({best.name})")
    if fits is False:
        return NOT_WORTH, f"the memory does not fit ({memory})"
    if fits is None:
        return UNKNOWN, f"no estimate of memory fit ({memory})"
    if best is None:
        return WORTH, "no measured configuration is priced in these catalogs, so there is no committed cost to beat yet"
    return WORTH, (f"its bound {money(bound.total, bound.currency)} beats the best committed "
                   f"{money(best.cost, best.currency)} ({best.name}) and the memory fits")


def plan_offers(basis_: Basis, catalog: Catalog, measured_devices: set[str], tables: Tables) -> list[Line]:
    """One line per device and lot size among the catalog's rows for devices no pass ran on: bound, memory fit and
    verdict; the lowest bounds first, the unknown ones last."""
    groups: dict[tuple, list[Package]] = {}
    for rows in catalog.not_measured(measured_devices).values():
        for row in rows:
            groups.setdefault((row.gpu, row.device_names, row.gpus_per_lot), []).append(row)
    lines = []
    for (gpu, _, lot), rows in groups.items():
        spec, missing = spec_for(tables, gpu, rows[0].device_names)
        if spec is None:
            bound, bound_basis = None, missing
        else:
            bound, bound_basis = _bound(basis_, spec, rows)
        fit = _fit(basis_, spec)
        verdict, why = _verdict(basis_, bound, fit, bound_basis)
        lines.append(Line(gpu, lot, tuple(rows), spec, bound.offer if bound else rows[0], bound, bound_basis, fit[1],
                          verdict, why))
    return sorted(lines, key=lambda x: (x.bound is None, x.bound.total if x.bound else 0, x.gpu, x.gpus_per_lot))


@dataclass(frozen=True)
class Launch:
    """What `fleet launch` would be given for the offers worth measuring: its limits and the command's other words."""

    experiment: str
    variant: str
    protocol: str
    variants_file: str | None
    max_hours: Decimal
    setup_hours: Decimal
    max_cost: Decimal | None
    design: budget.Design | None = None  # the campaign each job would run, for the worst case with the race


def launch_lines(lines: list[Line], launch: Launch, gpus: int) -> list[str]:
    """The worst case of a fleet measuring the launchable offers worth measuring, against --max-cost (and beside it
    the worst case with the protocol's race, where it declares one), and the `gpucost fleet launch` line; what is
    worth measuring but not launchable is said apart."""
    worth = [x for x in lines if x.verdict == WORTH]
    if not worth:
        return ["No offer is worth measuring on these figures: no `gpucost fleet launch` line."]
    out = []
    jobs: dict[str, Job] = {}
    for x in worth:
        if not x.launchable:
            out.append(f"{x.gpu} x{x.gpus_per_lot} is worth measuring but not through `gpucost fleet launch`: "
                       f"{x.offer.describe()} is not an on-demand SkyPilot offer; rent it by hand")
        elif x.gpus_per_lot != gpus:
            out.append(f"{x.gpu} x{x.gpus_per_lot} is worth measuring but `gpucost fleet launch` rents "
                       f"{x.accelerator}:{gpus} for this {gpus}-GPU configuration, not its {x.gpus_per_lot}-GPU lot; "
                       "rent that lot by hand")
        else:
            jobs.setdefault(x.accelerator.lower(), Job(x.accelerator, gpus))
    if not jobs:
        return out + ["No launchable offer is worth measuring: no `gpucost fleet launch` line."]
    offers = [Offer(r.provider, r.instance, r.region, x.accelerator, r.gpus_per_lot, None, r.price_per_lot, None)
              for x in worth for r in x.on_demand]
    clouds = sorted({o.provider for o in offers})
    worsts = [budget.worst_case(job, offers, max_hours=launch.max_hours, setup_hours=launch.setup_hours, spot=False,
                                interruptions=None, clouds=", ".join(clouds)) for job in jobs.values()]
    raced = [r for w in worsts if launch.design and (r := budget.with_race(w, launch.design)) is not None]
    for w in worsts:
        out += [w.line()] + [r.line() for r in raced if r.worst is w]
    total = budget.total(worsts)
    max_cost = launch.max_cost
    if max_cost is None:
        max_cost = total.to_integral_value(rounding=ROUND_UP)
        out.append(f"fleet worst case: {total} {budget.CURRENCY} over these catalogs' offers (`fleet launch` prices it "
                   f"again over SkyPilot's own); no --max-cost given: the line below sets it to {max_cost} "
                   f"{budget.CURRENCY}")
    elif total > max_cost:
        out.append(f"fleet worst case: {total} {budget.CURRENCY} exceeds --max-cost {max_cost} {budget.CURRENCY}: "
                   "`fleet launch` would refuse it; raise --max-cost or drop a GPU type")
    else:
        out.append(f"fleet worst case: {total} {budget.CURRENCY} of --max-cost {max_cost} {budget.CURRENCY}, over "
                   "these catalogs' offers (`fleet launch` prices it again over SkyPilot's own)")
    out += [line for line in [budget.totals_line(worsts, raced)] if line]
    words = ["gpucost fleet launch --gpus", ",".join(j.gpu for j in jobs.values()), "--clouds", ",".join(clouds),
             "--experiment", shlex.quote(launch.experiment), "--variants", shlex.quote(launch.variant),
             "--protocol", shlex.quote(launch.protocol)]
    words += ["--variants-file", shlex.quote(launch.variants_file)] if launch.variants_file else []
    words += ["--max-hours", f"{launch.max_hours:f}", "--setup-hours", f"{launch.setup_hours:f}", "--max-cost",
              f"{max_cost:f}"]
    return out + [" ".join(words)]


def priced_devices_hint(catalog: Catalog, experiment_name: str, catalog_paths: Sequence[str | Path] = (), *,
                        protocol_path: str | Path | None = None, variants_path: str | Path | None = None) -> str:
    """The sentence for a report with nothing priced: which devices the catalog does price, and the exact
    `gpucost fleet plan` command (its protocol and variants file when given) that says which are worth measuring."""
    lots: dict[str, set[int]] = {}
    for row in catalog.packages:
        lots.setdefault(row.gpu, set()).add(row.gpus_per_lot)
    if not lots:
        return ""
    said = [f"{gpu} ({', '.join(str(n) for n in sorted(sizes))} GPU{'s' if max(sizes) > 1 else ''} per lot)"
            for gpu, sizes in sorted(lots.items())]
    if len(said) > HINT_LISTED:
        said = said[:HINT_LISTED] + [f"{len(said) - HINT_LISTED} more"]
    words = ["gpucost fleet plan --experiment", shlex.quote(experiment_name)]
    words += ["--protocol", shlex.quote(str(protocol_path))] if protocol_path is not None else []
    words += ["--variants-file", shlex.quote(str(variants_path))] if variants_path is not None else []
    words += [f"--catalog {shlex.quote(str(path))}" for path in catalog_paths]
    return (f"Catalog {catalog.version} prices {', '.join(said)}: `{' '.join(words)}` says which of them are worth "
            "measuring (a lower bound per offer, never a decision).")
