"""Built-in sentence embeddings: child.py runs it in the pass's child, launch.py describes it for the launcher."""
