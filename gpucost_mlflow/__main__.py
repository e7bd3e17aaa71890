"""`python -m gpucost_mlflow` runs the `gpucost` command line."""

from gpucost_mlflow.cli import main

main()
