"""An offline SkyPilot home for the tests that run the real SkyPilot: its AWS catalog in SkyPilot's own format, as
SkyPilot leaves it after a download (checksum file included), so its API reads it without a network."""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
from pathlib import Path

GPU_INFO = ("{'Gpus': [{'Name': '%s', 'Manufacturer': 'NVIDIA', 'Count': %d, 'MemoryInfo': {'SizeInMiB': %d}}], "
            "'TotalGpuMemoryInMiB': %d}")
AWS_VMS = [
    ("g5.xlarge", "A10G", 1, 4, 16, 24576, "1.006", "0.4321", "us-east-1", "use1-az1"),
    ("g5.xlarge", "A10G", 1, 4, 16, 24576, "1.006", "0.4012", "us-east-1", "use1-az2"),
    ("g5.xlarge", "A10G", 1, 4, 16, 24576, "1.258", "0.5012", "eu-west-1", "euw1-az1"),
    ("p4d.24xlarge", "A100", 8, 96, 1152, 40960, "32.7726", "12.5", "us-east-1", "use1-az1"),
]


def skypilot_home(home: Path, downloaded: dt.date, vms: list[tuple] = AWS_VMS) -> Path:
    """An offline SkyPilot home: AWS's catalog in SkyPilot's v8 format (a few real-format rows, a CPU-only row
    among them) as SkyPilot leaves it after a download, checksum file included."""
    import hashlib

    folder = home / ".sky" / "catalogs" / "v8"
    (folder / "aws").mkdir(parents=True)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
                     "SpotPrice", "Region", "AvailabilityZone", "Arch"])
    for instance, gpu, count, cpus, memory, mib, price, spot, region, zone in vms:
        writer.writerow([instance, gpu, f"{count}.0", f"{cpus}.0", f"{memory}.0", GPU_INFO % (gpu, count, mib, mib * count),
                         price, spot, region, zone, "x86_64"])
    writer.writerow(["m5.large", "", "", "2.0", "8.0", "", "0.096", "0.04", "us-east-1", "use1-az1", "x86_64"])
    vms = folder / "aws" / "vms.csv"
    vms.write_text(out.getvalue())
    meta = folder / ".meta" / "aws" / "vms.csv.md5"
    meta.parent.mkdir(parents=True)
    meta.write_text(hashlib.md5(vms.read_bytes(), usedforsecurity=False).hexdigest())
    stamp = dt.datetime.combine(downloaded, dt.time(12)).timestamp()
    os.utime(meta, (stamp, stamp))
    return home
