"""Measurement: durations and their separability, FLOPs, overlaps, lanes, energy, the real schedule."""
