"""GPU catalog: names, aliases, numbers with sources, bad catalog files."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.hardware import (
    CANONICAL_NAMES,
    all_gpus,
    canonical_gpu_name,
    get_gpu,
    get_mig_geometry,
    gpu_from_nvml_name,
)
from gpuweave.hardware.catalog import CATALOG_FILE, load_catalog


def test_catalog_has_exactly_the_canonical_models_in_order():
    assert tuple(all_gpus()) == CANONICAL_NAMES


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("k80", "K80"),
        ("p100", "P100"),
        ("v100", "V100"),
        ("A100", "A100-40GB"),
        ("a100", "A100-40GB"),
        ("a100_80gb", "A100-80GB"),
        ("A100 80GB", "A100-80GB"),
        ("h100", "H100-80GB"),
        ("rtx 3090", "RTX3090"),
        ("Tesla T4", "T4"),
        ("TURING", "T4"),
        ("tesla", "V100"),
        ("b200", "B200"),
        ("a30", "A30"),
    ],
)
def test_aliases_and_case_insensitive_names(alias, canonical):
    assert canonical_gpu_name(alias) == canonical
    assert get_gpu(alias).name == canonical


def test_unknown_gpu_lists_known_names():
    with pytest.raises(InputError) as info:
        get_gpu("GTX1080")
    message = str(info.value)
    assert "GTX1080" in message
    for name in CANONICAL_NAMES:
        assert name in message


def test_memory_and_power_spot_values():
    assert get_gpu("A100").memory_gb == 40
    assert get_gpu("A100-80GB").memory_gb == 80
    assert get_gpu("H200").memory_gb == 141
    assert get_gpu("T4").power_max_w == 70
    assert get_gpu("H100").power_max_w == 700
    for gpu in all_gpus().values():
        assert 0 < gpu.power_idle_w < gpu.power_max_w
        assert gpu.memory_gb > 0


def test_every_number_has_a_source():
    for gpu in all_gpus().values():
        for key in ("memory_gb", "power_idle_w", "power_max_w"):
            assert gpu.sources[key].strip(), (gpu.name, key)


def test_idle_estimates_follow_the_stated_rule():
    meta = tomllib.loads(CATALOG_FILE.read_text())["meta"]
    fraction = meta["idle_fraction_of_max"]
    checked = 0
    for gpu in all_gpus().values():
        if gpu.sources["power_idle_w"].startswith("estimate E1"):
            assert gpu.power_idle_w == math.floor(fraction * gpu.power_max_w + 0.5 + 1e-9), gpu.name
            checked += 1
    assert checked == len(CANONICAL_NAMES)


def test_mig_capable_models_and_geometry_sharing():
    capable = {g.name: g.mig.name for g in all_gpus().values() if g.mig is not None}
    assert capable == {
        "A30": "A30",
        "A100-40GB": "A100",
        "A100-80GB": "A100",
        "H100-80GB": "H100",
        "H100-NVL": "H100",
        "H200": "H100",
        "B200": "H100",
    }
    assert "stand-in" in get_gpu("H200").sources["mig"]
    assert "stand-in" in get_gpu("B200").sources["mig"]
    assert get_gpu("A30").mig_slice_memory_gb == 6
    assert get_gpu("A100").mig_slice_memory_gb == 5
    assert get_gpu("H100").mig_slice_memory_gb == 10
    assert get_gpu("V100").mig is None and get_gpu("V100").mig_slices == 0


def test_far_table1_reconfiguration_times():
    a30, a100, h100 = get_mig_geometry("A30"), get_mig_geometry("A100"), get_mig_geometry("H100")
    assert [a30.create_time(s) for s in (1, 2, 4)] == [0.11, 0.12, 0.13]
    assert [a30.destroy_time(s) for s in (1, 2, 4)] == [0.10, 0.10, 0.10]
    assert [a100.create_time(s) for s in (1, 2, 3, 4, 7)] == [0.16, 0.17, 0.20, 0.21, 0.24]
    assert [a100.destroy_time(s) for s in (1, 2, 3, 4, 7)] == [0.20, 0.20, 0.21, 0.21, 0.22]
    assert [h100.create_time(s) for s in (1, 2, 3, 4, 7)] == [0.16, 0.21, 0.33, 0.38, 0.42]
    assert [h100.destroy_time(s) for s in (1, 2, 3, 4, 7)] == [0.21, 0.23, 0.25, 0.26, 0.26]
    assert get_gpu("A100-80GB").mig.create_s == a100.create_s
    assert get_gpu("B200").mig.destroy_s == h100.destroy_s
    with pytest.raises(InputError):
        a30.create_time(3)


def test_mig_geometry_of_non_mig_gpu_is_an_input_error():
    with pytest.raises(InputError, match="no MIG"):
        get_mig_geometry("T4")


def _write_catalog(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpus.toml"
    path.write_text(text)
    return path


def test_bad_catalog_missing_source_names_file_and_field(tmp_path):
    path = _write_catalog(
        tmp_path,
        """
[gpu.X1]
memory_gb = 8
power_max_w = 100
power_idle_w = 10
[gpu.X1.sources]
memory_gb = "datasheet"
power_max_w = "datasheet"
""",
    )
    with pytest.raises(InputError) as info:
        load_catalog(path)
    assert info.value.file == str(path)
    assert info.value.field == "gpu.X1.sources.power_idle_w"


def test_bad_catalog_negative_memory_and_unknown_geometry(tmp_path):
    base = """
[gpu.X1]
memory_gb = {mem}
power_max_w = 100
power_idle_w = 10
mig = "{mig}"
[gpu.X1.sources]
memory_gb = "a"
power_max_w = "b"
power_idle_w = "c"
"""
    with pytest.raises(InputError) as info:
        load_catalog(_write_catalog(tmp_path, base.format(mem=-1, mig="")))
    assert info.value.field == "gpu.X1.memory_gb"
    with pytest.raises(InputError) as info:
        load_catalog(_write_catalog(tmp_path, base.format(mem=8, mig="Z9")))
    assert info.value.field == "gpu.X1.mig"


def test_bad_catalog_not_toml(tmp_path):
    with pytest.raises(InputError, match="not valid TOML"):
        load_catalog(_write_catalog(tmp_path, "[gpu\n"))


@pytest.mark.parametrize(
    "nvml_name, model",
    [
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A30", "A30"),
        ("NVIDIA B200", "B200"),
        ("Tesla T4", "T4"),
    ],
)
def test_nvml_device_names_resolve(nvml_name, model):
    assert gpu_from_nvml_name(nvml_name).name == model


def test_unknown_nvml_name_is_none():
    assert gpu_from_nvml_name("NVIDIA GeForce GTX 1080") is None
