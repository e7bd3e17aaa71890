"""Acceptance check of issue 4: Ctrl-C (SIGINT to the process group) during pass 7 of the demo campaign, then --resume."""
import os
import signal
import subprocess
import time

import pandas as pd

os.chdir("/work/main")
os.environ["MLFLOW_TRACKING_URI"] = "sqlite:////tmp/ctrlc.db"
if os.path.exists("/tmp/ctrlc.db"):
    os.remove("/tmp/ctrlc.db")
from mlflow.tracking import MlflowClient

first = subprocess.Popen([".venv/bin/gpucost", "campaign", "--variants", "batch1,batch4,batch8", "--passes", "5",
                          "--experiment", "ctrlc"], start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
c = MlflowClient()
while True:
    e = c.get_experiment_by_name("ctrlc")
    runs = c.search_runs([e.experiment_id], filter_string="params.`gpucost.pass_index` = '7'") if e else []
    if runs and runs[0].data.tags.get("gpucost.status") == "running":
        break
    time.sleep(1)
time.sleep(6)
os.killpg(first.pid, signal.SIGINT)
out = first.communicate()[0]
print(out[-1500:]); print("first exit", first.returncode)
cid = out.split("--resume ")[1].split("`")[0]
second = subprocess.run(preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), args=[".venv/bin/gpucost", "campaign", "--resume", cid, "--experiment", "ctrlc"], capture_output=True, text=True)
print(second.stdout[-1500:], second.stderr[-1500:]); print("resume exit", second.returncode)
subprocess.run([".venv/bin/gpucost", "attempts", "--experiment", "ctrlc", "--format", "csv", "--out", "/tmp/ctrlc.csv"])
t = pd.read_csv("/tmp/ctrlc.csv")
print(t[["pass_index", "round", "position", "attempt", "variant", "status", "reason"]].to_string())
print(t.status.value_counts().to_dict())
print("duplicate accepted slots:", int(t[t.status == "accepted"].duplicated(["round", "position"]).sum()))
