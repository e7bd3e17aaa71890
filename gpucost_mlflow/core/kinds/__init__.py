"""Which workload kinds and inference engines exist, and what each takes: the kind-neutral registry a campaign, a
protocol and the pass's harness read, naming each kind's folder (`workloads/<kind>/`) by package, as
an entry point names a plug-in. Nothing here imports a kind's code, torch or an engine until asked for it.
"""
