"""sky.catalog.list_accelerators over a few fixed offers (two GPU types on AWS, us-east-1), in SkyPilot's shape."""

from __future__ import annotations

import re
from collections import namedtuple

InstanceTypeInfo = namedtuple("InstanceTypeInfo", "cloud instance_type accelerator_name accelerator_count cpu_count "
                              "device_memory memory price spot_price region")

OFFERS = [
    InstanceTypeInfo("AWS", "g6.xlarge", "L4", 1, 4.0, 24.0, 16.0, 0.8048, 0.3501, "us-east-1"),
    InstanceTypeInfo("AWS", "g5.xlarge", "A10G", 1, 4.0, 24.0, 16.0, 1.006, 0.4012, "us-east-1"),
]


def list_accelerators(gpus_only=True, name_filter=None, region_filter=None, quantity_filter=None, clouds=None,
                      case_sensitive=True, all_regions=False, require_price=True):
    found: dict[str, list] = {}
    for info in OFFERS:
        if clouds and info.cloud.lower() not in [c.lower() for c in clouds]:
            continue
        if name_filter and not re.match(name_filter, info.accelerator_name, 0 if case_sensitive else re.IGNORECASE):
            continue
        if region_filter and not re.match(region_filter, info.region):
            continue
        found.setdefault(info.accelerator_name, []).append(info)
    return found
