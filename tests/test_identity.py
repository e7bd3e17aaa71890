"""A configuration's identity (PROTOCOL.md §2) as one frozen record: equal fields, one configuration."""

from __future__ import annotations

import dataclasses

import pytest

from gpucost_mlflow.core.inputs.identity import Identity

pytestmark = pytest.mark.unit


def test_two_passes_differing_only_in_the_driver_are_two_configurations_named_by_it():
    a = Identity("NVIDIA B200", "batch8", "classification", "1", "a" * 40, "f" * 64, "2.13.0+cu128", "12.8", "", "580.1")
    b = dataclasses.replace(a, driver="590.2")
    assert a != b and len({a, b}) == 2
    assert a.differing({a, b}) == ["driver"] and a.distinction({a, b}) == "driver 580.1"
    assert a.distinction({a}) == ""


def test_the_identity_is_frozen_and_its_columns_are_the_attempts_tables():
    a = Identity("cpu", "batch1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.device = "other"
    assert Identity.columns() == ("workload", "lanes", "model_revision", "corpus_fingerprint", "torch_build",
                                  "cuda_runtime", "hip_runtime", "driver", "engine", "torch_version",
                                  "transformers_version", "engine_version", "seed", "endpoint")
    assert Identity("cpu", "v", model_revision="b" * 40).distinction({Identity("cpu", "v"),
                                                                      Identity("cpu", "v", model_revision="b" * 40)}) \
        == "model revision bbbbbbbbbbbb"
