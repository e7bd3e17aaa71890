"""MLflow's own system metrics on a pass's run: CPU and memory through psutil, GPU utilisation, memory and power
through nvidia-ml-py where it is installed, as `system/...` timelines the MLflow UI charts.

They are sampled by the launcher (the parent) while the child runs, so the child's measured clock holds none of
the sampling; the interval is the protocol's (`system_metrics_interval_s`, 1 s when absent) and is tagged on the
run. Sampling is best-effort, like the heartbeat: a store that stops answering ends it, never the pass.
"""

from __future__ import annotations

import logging

from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema

DEFAULT_INTERVAL_S = 1.0


class Sampler:
    """One pass's sampling: started when its child starts, finished (and flushed) when the child ends."""

    def __init__(self, client: MlflowClient, run_id: str, interval_s: float):
        self.client, self.run_id, self.interval_s = client, run_id, interval_s
        self.monitor = None
        self.missing = ""

    def start(self) -> Sampler:
        """Log the interval (a param: schema.FACTS) and start MLflow's monitor thread; a monitor that cannot start
        leaves the reason."""
        try:
            from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

            logging.getLogger("mlflow.system_metrics").setLevel(logging.WARNING)  # no INFO lines on the terminal
            self.client.log_param(self.run_id, schema.SYSTEM_METRICS_INTERVAL, f"{self.interval_s:g}")
            self.monitor = SystemMetricsMonitor(self.run_id, sampling_interval=self.interval_s,
                                                samples_before_logging=1, tracking_uri=self.client.tracking_uri)
            self.monitor.start()
        except Exception as exc:  # noqa: BLE001 - sampling is best-effort: the pass goes on without it
            self.monitor, self.missing = None, f"system metrics not sampled: {exc}"
        return self

    def stop(self) -> None:
        """Stop sampling and flush what was sampled (errors swallowed: the attempt reaches the store anyway)."""
        if self.monitor is None:
            return
        try:
            self.monitor.finish()
        except Exception:  # noqa: BLE001, S110 - a store gone away: the attempt itself goes through the spool
            pass
        self.monitor = None
