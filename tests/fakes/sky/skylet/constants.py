"""The constants gpucost reads: where SkyPilot caches its catalogs, and the clouds it knows."""

CATALOG_DIR = "~/.sky/catalogs"
CATALOG_SCHEMA_VERSION = "v8"
ALL_CLOUDS = ("AWS", "GCP")
MANAGED_JOB_ID_ENV_VAR = "SKYPILOT_MANAGED_JOB_ID"
