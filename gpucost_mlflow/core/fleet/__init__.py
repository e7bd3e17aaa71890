"""A fleet: one campaign per GPU type on rented machines launched through SkyPilot (docs/fleet.md). Pure rules here:
the jobs and their names, the tracking URI a cloud machine can reach and what of it is secret, the worst case priced
before any launch, and the SkyPilot task each job runs. SkyPilot itself is called at the edge (gpucost_mlflow/fleet/).
"""
