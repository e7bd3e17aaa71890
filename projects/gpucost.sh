#!/bin/sh
# The gpucost an `mlflow run projects` command calls: the one on PATH (an activated venv, a conda environment, the
# Makefile's PATH), else the checkout's own .venv beside this folder, so `.venv/bin/mlflow run projects ...` works
# without activating it. Neither: one line naming what to do, exit 127.
if command -v gpucost >/dev/null 2>&1; then
  exec gpucost "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/../.venv/bin/gpucost" ]; then
  exec "$here/../.venv/bin/gpucost" "$@"
fi
echo "gpucost: not found on PATH nor in $here/../.venv (run make install, or activate the environment that has it)" >&2
exit 127
