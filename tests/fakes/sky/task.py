"""sky.Task as the fleet uses it: built from a YAML config, given secrets at launch."""

from __future__ import annotations

import copy


class Task:
    def __init__(self, config: dict):
        self.config = config
        self.name = config.get("name")
        self.secrets: dict[str, str] = {}

    @staticmethod
    def from_yaml_config(config: dict) -> Task:
        if "accelerators" not in config.get("resources", {}):
            raise ValueError("stand-in: the fleet's tasks always name their accelerators")
        return Task(copy.deepcopy(config))

    def update_secrets(self, secrets: dict[str, str]) -> Task:
        self.secrets.update(secrets)
        return self
