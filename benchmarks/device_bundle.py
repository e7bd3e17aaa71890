"""`make device-bundle`: what a bare GPU machine of the device tool lacks, packed into the fewest calls it carries.

The machine (one H200, offline) has CPython 3.12 with a CUDA torch, transformers and about 200 packages
(benchmarks/device-image-packages.txt), but not MLflow and the rest of this project's dependencies, nor the demo's
model folder and corpus (data/model, data/corpus). This gathers them:

1. the wheels of every dependency of this project (its `gpu` extra included) that the image lacks, for Linux x86_64
   and the image's Python, at the versions this venv runs (`pip download`, kept under .device-bundle/wheels);
2. data/model and the check's corpus files;

packs them as one gzip'd tar, and cuts it into parts that each fit one call's 64 MiB beside the working tree that
travels with every call. Each part is a folder, .device-bundle/part-N (ignored by git), that one call carries; the
last call runs benchmarks/device_run.sh, which joins, verifies and unpacks the parts, installs the wheels offline and
runs benchmarks/device_check.sh whole. What cannot be carried (onnxruntime-gpu, the generation model) is a SKIP there.

    python benchmarks/device_bundle.py [--out .device-bundle] [--python-version 3.12] [--data CHECKOUT]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
IMAGE = Path(__file__).resolve().parent / "device-image-packages.txt"
PROJECT = "gpucost-mlflow"
EXTRAS = ("gpu",)  # NVML for the board's energy counter: the image has it, named so it is never left out silently
CALL_BYTES = 64 * 2**20  # what one call of the device tool carries: the working tree and its carried paths together
MARGIN_BYTES = 2 * 2**20  # room for files the working tree gains between the bundle and the calls
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux1_x86_64")
DATA = ("data/model", "data/corpus/comparison.jsonl", "data/corpus/corpus.json")
PAYLOAD = "payload.tgz"
MANIFEST = "bundle.sha256"
RUN = "bash benchmarks/device_run.sh"


class BundleError(Exception):
    """The bundle cannot be made: the message says what is missing, in one line."""


def target_environment(python_version: str) -> dict[str, str]:
    """The marker environment of the device's Python: CPython on Linux x86_64."""
    return {"python_version": python_version, "python_full_version": f"{python_version}.0", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "os_name": "posix"}


def image_packages(path: Path = IMAGE) -> set[str]:
    """The image's package names, canonical."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {canonicalize_name(line.strip()) for line in lines if line.strip() and not line.startswith("#")}


def missing(requires, installed, image: set[str], environment: dict[str, str]) -> dict[str, str]:
    """Every distribution the project needs (its requirements, followed through each one's own) that the image lacks:
    canonical name -> the version installed here. `requires(name)` gives a distribution's requirement lines and
    `installed(name)` its version (None when not installed here: an error, since its wheel's version is unknown)."""
    needed: dict[str, str] = {}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(PROJECT, EXTRAS)]
    while todo:
        name, extras = todo.pop()
        key = (canonicalize_name(name), tuple(sorted(extras)))
        if key in seen:
            continue
        seen.add(key)
        if key[0] != PROJECT:
            if key[0] in image:
                continue
            version = installed(name)
            if version is None:
                raise BundleError(f"{name} is needed on the device but not installed here: run `make install` first")
            needed[key[0]] = version
        for line in requires(name) or ():
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({**environment, "extra": extra}) for extra in (*extras, "")):
                todo.append((requirement.name, tuple(requirement.extras)))
    return dict(sorted(needed.items()))


def _requires(name: str) -> list[str]:
    return metadata.distribution(name).requires or []


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def download(pins: dict[str, str], wheels: Path, python_version: str) -> list[Path]:
    """The wheels of the pins (cached: a wheel already in the folder is not fetched again), one per distribution."""
    wheels.mkdir(parents=True, exist_ok=True)
    found = {}
    for path in wheels.glob("*.whl"):
        name, version = path.name.split("-")[:2]
        found[(canonicalize_name(name), version)] = path
    wanted = [f"{name}=={version}" for name, version in pins.items() if (name, version) not in found]
    if wanted:
        platforms = [argument for platform in PLATFORMS for argument in ("--platform", platform)]
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--implementation",
                   "cp", "--python-version", python_version, *platforms, "-d", str(wheels), *wanted]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BundleError("pip download failed: " + " ".join(done.stderr.strip().splitlines()[-1:]))
    kept = []
    for path in sorted(wheels.glob("*.whl")):
        name, version = path.name.split("-")[:2]
        if pins.get(canonicalize_name(name)) == version:
            kept.append(path)
    absent = sorted(set(pins) - {canonicalize_name(path.name.split("-")[0]) for path in kept})
    if absent:
        raise BundleError(f"no wheel of {', '.join(absent)} for CPython {python_version} on Linux x86_64")
    return kept


def travelling_bytes(root: Path = ROOT) -> int:
    """What every call carries anyway: tracked and untracked-not-ignored files, and shared/ where the checkout has one."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    total = sum((root / name.decode()).stat().st_size for name in listed if name and (root / name.decode()).is_file())
    shared = root / "shared"
    if shared.is_dir():
        total += sum(path.stat().st_size for path in shared.rglob("*") if path.is_file())
    return total


def pack(wheels: list[Path], root: Path = ROOT) -> bytes:
    """One gzip'd tar: wheels/ and the data files under their repository paths."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=6, mtime=0) as zipped, \
            tarfile.open(fileobj=zipped, mode="w") as tar:
        for wheel in wheels:
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
        for name in DATA:
            path = root / name
            if not path.exists():
                raise BundleError(f"{name} is missing: `make model` and `make corpus` build data/ first")
            tar.add(path, arcname=name)
    return buffer.getvalue()


@dataclass(frozen=True)
class Part:
    """One call's carry: its folder (repository-relative) and the bytes of the payload it holds."""

    folder: str
    size: int


def split(payload: bytes, budget: int) -> list[bytes]:
    """The payload in the fewest parts of at most `budget` bytes, of about equal size."""
    if budget <= 0:
        raise BundleError("the working tree alone fills a call's 64 MiB: nothing is left to carry")
    count = -(-len(payload) // budget)
    size = -(-len(payload) // count)
    return [payload[start:start + size] for start in range(0, len(payload), size)]


def write(out: Path, chunks: list[bytes]) -> list[Part]:
    """Each chunk in a folder of its own, part-N/payload.tgz.NN, with the checksums of every chunk and of the whole
    (bundle.sha256, `sha256sum -c` reads it) in each folder; earlier parts removed first."""
    for old in out.glob("part-*"):
        for path in old.iterdir():
            path.unlink()
        old.rmdir()
    whole = hashlib.sha256(b"".join(chunks)).hexdigest()
    names = [f"{PAYLOAD}.{number:02d}" for number in range(1, len(chunks) + 1)]
    sums = "".join(f"{hashlib.sha256(chunk).hexdigest()}  {name}\n" for chunk, name in zip(chunks, names))
    sums += f"{whole}  {PAYLOAD}\n"
    parts = []
    for number, (chunk, name) in enumerate(zip(chunks, names), start=1):
        folder = out / f"part-{number}"
        folder.mkdir(parents=True)
        (folder / name).write_bytes(chunk)
        (folder / MANIFEST).write_text(sums, encoding="utf-8")
        parts.append(Part(str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder), len(chunk)))
    return parts


def calls(parts: list[Part], timeout_s: int = 600) -> list[str]:
    """The device tool's calls that carry the parts, the last one running the whole check."""
    said = []
    for number, part in enumerate(parts, start=1):
        last = number == len(parts)
        command = RUN if last else f"{RUN} stage"
        limit = timeout_s if last else 120
        said.append(f"call {number} of {len(parts)}: run(carry=[\"{part.folder}\"], command=\"{command}\", "
                    f"timeout_s={limit})")
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".device-bundle")
    parser.add_argument("--python-version", default="3.12", help="the device's Python (3.12 on the H200 image)")
    parser.add_argument("--data", type=Path, default=ROOT, help="the folder whose data/ is packed (default: this "
                        "checkout)")
    args = parser.parse_args(argv)
    try:
        pins = missing(_requires, _installed, image_packages(), target_environment(args.python_version))
        wheels = download(pins, args.out / "wheels", args.python_version)
        payload = pack(wheels, args.data)
        tree = travelling_bytes()
        chunks = split(payload, CALL_BYTES - tree - MARGIN_BYTES)
        parts = write(args.out, chunks)
    except BundleError as exc:
        print(f"device-bundle: {exc}")
        return 2
    print(f"device-bundle: {len(wheels)} wheels ({sum(w.stat().st_size for w in wheels) / 2**20:.1f} MiB) the image "
          f"lacks, {', '.join(DATA)}: {len(payload) / 2**20:.1f} MiB packed in {len(parts)} part(s) beside a "
          f"{tree / 2**20:.1f} MiB working tree, under {args.out}")
    print("Device calls, one after the other (the machine keeps what a call carried only while it stays warm, "
          "30 s after each call):")
    for line in calls(parts):
        print("  " + line)
    print("The last writes summary.txt and device-check.tgz (logs, report, cold-warm.json) to its $OUT.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
