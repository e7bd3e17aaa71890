"""Inputs: the protocol, corpus, sources and fingerprints, variants and workloads, manifests, shipped files."""
