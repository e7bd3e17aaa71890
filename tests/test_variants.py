"""Declared series tell the truth (PROTOCOL §3), and separability compares each member with its series' reference (§6)."""

from __future__ import annotations

import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.report.tables import separations
from tests.helpers import ROOT

pytestmark = pytest.mark.unit

SHIPPED = ROOT / "projects" / "variants.yaml"
VARIANTS = {
    "batch4": {"batch_size": 4},
    "batch8": {"batch_size": 8},
    "batch8-bf16": {"precision": "bf16"},
    "batch8-fast": {"precision": "bf16", "length_grouping": "sorted"},
    "batch8-int8": {"quantization": "dynamic-int8", "device": "cpu"},
    "batch8-int8-auto": {"quantization": "dynamic-int8"},
}


def declare(tmp_path, series: dict):
    """A variants file with the shipped defaults, the variants above and the given series."""
    defaults = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))["defaults"]
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"defaults": defaults, "series": series, "variants": VARIANTS}), encoding="utf-8")
    return path


def refusal(path) -> str:
    with pytest.raises(GpucostError) as refused:
        load_variants(path)
    message = str(refused.value)
    assert "\n" not in message
    return message.removeprefix(f"{path}: ")


def test_the_shipped_series_declare_what_their_variants_change():
    variants = load_variants(SHIPPED)
    assert {n: (v.series, v.reference) for n, v in variants.items()} == {
        "batch1": ("batch", ""), "batch4": ("batch", ""), "batch8": ("batch", ""),
        **{f"batch{size}": ("batch-gpu", "batch8") for size in (16, 32, 64, 128, 256, 512)},
        "batch8-bf16": ("cheaper", "batch8"), "batch8-lengthgrouped": ("cheaper", "batch8"),
        "batch8-int8": ("int8-cpu", "batch8"),
        "embed-batch1": ("embeddings-batch", ""), "embed-batch4": ("embeddings-batch", ""),
        "embed-batch8": ("embeddings-batch", ""), "embed-batch8-bf16": ("embeddings-cheaper", "embed-batch8"),
        "gen-batch1": ("generation-batch", ""), "gen-batch4": ("generation-batch", ""),
        "gen-batch8": ("generation-batch", ""), "gen-batch16": ("generation-batch", ""),
        "gen-batch8-bf16": ("generation-cheaper", "gen-batch8"),
        "gen-batch8-lengthgrouped": ("generation-cheaper", "gen-batch8"),
        "my-workload": ("", ""),
        "ort-batch8": ("engine", "batch8"), "ort-batch8-int8": ("engine-int8", "ort-batch8"),
        "ort-embed-batch8": ("embeddings-engine", "embed-batch8"),
        "ct2-gen-batch8": ("generation-engine", "gen-batch8"), "vllm-gen-batch8": ("generation-engine", "gen-batch8"),
        "ct2-gen-batch8-int8": ("generation-engine-types", "ct2-gen-batch8"),
        "ct2-gen-batch8-bf16": ("generation-engine-types", "ct2-gen-batch8"),
        "served-gen-c1": ("generation-endpoint", "gen-batch8"), "served-gen-c8": ("generation-endpoint", "gen-batch8"),
    }
    assert "series" not in variants["batch8-int8"].settings.record() and "reference" not in variants["batch8-int8"].settings.record()


def test_a_series_whose_member_differs_in_an_undeclared_field_is_refused(tmp_path):
    path = declare(tmp_path, {"cheaper": {"field": ["precision", "quantization", "length_grouping"],
                                          "reference": "batch8", "variants": ["batch8-bf16", "batch8-int8"]}})
    assert refusal(path) == ("series 'cheaper': batch8-int8 differs from batch8 in quantization, device; "
                             "the series declares precision, quantization, length_grouping (one field per variant)")


def test_a_member_that_changes_two_declared_fields_at_once_is_refused(tmp_path):
    path = declare(tmp_path, {"cheaper": {"field": ["precision", "length_grouping"], "reference": "batch8",
                                          "variants": ["batch8-fast"]}})
    assert refusal(path).startswith("series 'cheaper': batch8-fast differs from batch8 in precision, length_grouping;")


def test_a_series_without_reference_refuses_a_pair_that_differs_outside_its_field(tmp_path):
    path = declare(tmp_path, {"batch": {"field": "batch_size", "variants": ["batch4", "batch8", "batch8-bf16"]}})
    assert refusal(path) == ("series 'batch': batch8-bf16 differs from batch4 in batch_size, precision; "
                             "the series declares batch_size (the only fields that may differ)")


def test_fields_declared_together_must_all_change_and_nothing_else(tmp_path):
    together = {"field": ["quantization", "device"], "together": True, "reference": "batch8"}
    assert load_variants(declare(tmp_path, {"int8-cpu": {**together, "variants": ["batch8-int8"]}}))[
        "batch8-int8"].series == "int8-cpu"
    path = declare(tmp_path, {"int8-cpu": {**together, "variants": ["batch8-int8", "batch8-int8-auto"]}})
    assert refusal(path) == ("series 'int8-cpu': batch8-int8-auto differs from batch8 in quantization; "
                             "the series declares quantization, device (changed together, all in each variant)")
    path = declare(tmp_path, {"int8-cpu": {**together, "reference": None, "variants": ["batch8-int8"]}})
    assert "'together' needs a reference" in refusal(path)


@pytest.mark.parametrize("spec, expected", [
    ({"field": "precision", "reference": "batch9", "variants": ["batch8-bf16"]},
     "series 's': 'batch9' is not a declared variant; declared: batch4,"),
    ({"field": "precision", "reference": "batch8", "variants": ["batch8-fp16"]},
     "series 's': 'batch8-fp16' is not a declared variant;"),
    ({"field": "precision", "reference": "batch8", "variants": ["batch8", "batch8-bf16"]},
     "series 's': the reference batch8 is also listed among its variants"),
    ({"field": "colour", "variants": ["batch4", "batch8"]}, "series 's': 'field' must name one or more of batch_size,"),
    ({"field": "batch_size", "variants": ["batch4", "batch8"], "refrence": "batch8"}, "series 's': unknown key(s) refrence"),
])
def test_a_series_naming_what_is_not_declared_is_refused(tmp_path, spec, expected):
    assert refusal(declare(tmp_path, {"s": spec})).startswith(expected)


def test_a_variant_listed_in_two_series_is_refused(tmp_path):
    path = declare(tmp_path, {"a": {"field": "precision", "reference": "batch8", "variants": ["batch8-bf16"]},
                              "b": {"field": ["precision"], "reference": "batch8", "variants": ["batch8-bf16"]}})
    assert refusal(path) == "variant 'batch8-bf16' is listed in two series, 'a' and 'b'"


def measured(variant: str, device: str, *seconds: float) -> Configuration:
    return Configuration(device=device, variant=variant, statuses=["accepted"] * len(seconds),
                         durations=Durations(seconds), medians={"load_s": 1.0})


FAST, SLOW = (5.0, 5.1, 5.2, 5.1, 5.0), (10.0, 10.2, 10.1, 10.3, 10.0)


def test_separability_compares_each_member_with_its_series_reference():
    rows = separations([measured("batch8", "cpu", *SLOW), measured("batch8-lengthgrouped", "cpu", *FAST)],
                       load_variants(SHIPPED))
    (label, separation), = rows
    assert label == "cheaper on cpu (vs reference batch8)"
    assert (separation.faster, separation.slower, separation.decided) == ("batch8-lengthgrouped", "batch8", True)


def test_separability_compares_a_member_with_its_reference_on_the_same_device_only():
    rows = separations([measured("batch8", "NVIDIA B200", *SLOW), measured("batch8-lengthgrouped", "cpu", *FAST),
                        measured("batch8-int8", "cpu", *FAST)], load_variants(SHIPPED))
    assert rows == []


def test_separability_lists_each_pair_once_within_and_against_the_reference():
    names = ("batch4", "batch8", "batch8-bf16", "batch8-int8", "batch8-lengthgrouped")
    rows = separations([measured(name, "cpu", *FAST) for name in names], load_variants(SHIPPED))
    assert [(label, {s.faster, s.slower}) for label, s in rows] == [
        ("batch on cpu", {"batch4", "batch8"}),
        ("cheaper on cpu", {"batch8-bf16", "batch8-lengthgrouped"}),
        ("cheaper on cpu (vs reference batch8)", {"batch8", "batch8-bf16"}),
        ("cheaper on cpu (vs reference batch8)", {"batch8", "batch8-lengthgrouped"}),
        ("int8-cpu on cpu (vs reference batch8)", {"batch8", "batch8-int8"}),
    ]
