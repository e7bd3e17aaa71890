"""User code (python:PATH_OR_MODULE): child.py runs it in the pass's child, launch.py describes it for the launcher."""
