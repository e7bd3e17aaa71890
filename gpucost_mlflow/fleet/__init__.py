"""The fleet at the edge: SkyPilot's SDK (launch, queue, cancel, its catalog), the wheel each job installs, and the
job's own side on its machine (find or resume its campaign). The rules are core/fleet/'s; docs/fleet.md walks it."""
