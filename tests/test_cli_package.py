"""The `gpucost` command line as a package (cli/): every command still registered, and importing it loads no torch."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from gpucost_mlflow.cli import main

pytestmark = pytest.mark.unit

# `gpucost --help` and each group's subcommands as they were when cli.py became the cli/ package, plus `demo` and
# `fleet` (its hidden `job` is what a fleet's task runs on its machine).
COMMANDS = {
    "attempts": None, "bill": None, "campaign": None, "confirm": None, "deliver": None, "catalog": {"example", "import"}, "corpus": {"build", "slice"}, "demo": {"variants"}, "doctor": None,
    "exclude": None, "hosted": {"batch-file", "batch-import"}, "fleet": {"deliver", "down", "job", "launch", "plan", "status", "worker"},
    "memory": {"estimate", "measure"}, "model": {"prepare"}, "packages": None, "pass": None,
    "plan": None, "protocol": {"lock", "show"}, "rejudge": None, "report": None, "sync": None,
    "variants": {"propose"}, "window": None,
}


def test_every_command_and_subcommand_is_still_registered():
    assert set(main.commands) == set(COMMANDS)
    for name, subcommands in COMMANDS.items():
        command = main.commands[name]
        assert (set(command.commands) if isinstance(command, click.Group) else None) == subcommands, name


def test_importing_the_command_line_does_not_import_torch():
    code = "import sys, gpucost_mlflow.cli; print('torch' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
