"""YAML read safely through libyaml's parser where PyYAML was built with it (several times faster than the pure-Python
one that `yaml.safe_load` uses; a campaign reads its variants and protocol files at every pass), the same safe
constructor either way."""

from __future__ import annotations

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str):
    """The YAML document of `text`, as `yaml.safe_load` gives it (raises yaml.YAMLError the same way)."""
    return yaml.load(text, Loader=LOADER)
