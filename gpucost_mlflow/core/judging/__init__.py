"""Judging: checks on a pass's outputs, quality, the one judge and each output's verdict rules."""
