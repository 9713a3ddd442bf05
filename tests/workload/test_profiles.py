"""Profile store: the bundled Gavel table, lookups, infeasible vs absent entries, extrapolation, CSV checks."""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path

import pytest

from gpuweave.errors import InputError, MissingProfileError
from gpuweave.workload.profiles import ProfileRow, ProfileStore, load_profiles

from .conftest import assert_names

RN50_64 = "ResNet-50 (batch size 64)"
RN50_128 = "ResNet-50 (batch size 128)"


def test_bundled_table_shape(profiles):
    assert len(profiles) == 414
    assert len(profiles.job_types()) == 26
    assert profiles.gpu_models() == ("K80", "P100", "V100")
    assert profiles.scale_factors(RN50_64) == (1, 2, 4, 8)
    assert profiles.scale_factors("A3C") == (1,)


def test_values_match_gavel_appendix(profiles):
    # hadar.md Appendix A / Gavel README: V100 ResNet-50 bs64 alone = 4.3948 steps/s; K80 0.619; A3C 2.09x.
    assert profiles.rate(RN50_64, "V100", 1, True) == pytest.approx(4.3948, abs=1e-4)
    assert profiles.rate(RN50_64, "K80", 1, True) == pytest.approx(0.619, abs=1e-3)
    assert profiles.rate("A3C", "V100", 1, True) / profiles.rate("A3C", "K80", 1, True) == pytest.approx(2.09, abs=0.01)
    assert profiles.rate("LM (batch size 5)", "V100", 8, True) == pytest.approx(698.773, abs=1e-3)
    assert profiles.rate("LM (batch size 5)", "V100", 8, False) == pytest.approx(73.120, abs=1e-3)


def test_single_gpu_answers_both_placements(profiles):
    assert (
        profiles.rate("CycleGAN", "P100", 1, False)
        == profiles.rate("CycleGAN", "P100", 1, True)
        == pytest.approx(2.403, abs=1e-3)
    )


def test_known_infeasible_is_zero_not_an_error(profiles):
    for scale in (2, 4, 8):
        assert profiles.rate(RN50_128, "K80", scale, True) == 0.0
        assert profiles.has(RN50_128, "K80", scale)


def test_absent_entry_raises_naming_type_model_and_count(profiles):
    with pytest.raises(MissingProfileError) as exc:
        profiles.rate(RN50_64, "K80", 4, False)
    message = str(exc.value)
    assert RN50_64 in message and "K80" in message and "4 x" in message
    assert not profiles.has(RN50_64, "K80", 4, consolidated=False)
    assert profiles.has(RN50_64, "K80", 4, consolidated=None)
    with pytest.raises(MissingProfileError, match="unknown job type 'BERT'"):
        profiles.rate("BERT", "V100", 1, True)
    with pytest.raises(MissingProfileError, match="unknown GPU model 'A100'"):
        profiles.rate(RN50_64, "A100", 1, True)
    with pytest.raises(MissingProfileError, match="unknown job type"):
        profiles.scale_factors("BERT")


def test_extrapolation_is_off_by_default_and_linear_when_on(profiles):
    with pytest.raises(MissingProfileError, match="extrapolate=True"):
        profiles.rate(RN50_64, "V100", 16, True)
    assert not profiles.has(RN50_64, "V100", 32, True)
    wide = load_profiles(extrapolate=True)
    per_gpu = wide.rate(RN50_64, "V100", 8, True) / 8
    assert wide.rate(RN50_64, "V100", 32, True) == pytest.approx(per_gpu * 32)
    assert wide.rate(RN50_64, "V100", 16, False) == pytest.approx(wide.rate(RN50_64, "V100", 8, False) * 2)
    assert wide.has(RN50_64, "V100", 64, True)
    assert wide.rate(RN50_128, "K80", 16, True) == 0.0  # infeasible stays infeasible
    with pytest.raises(MissingProfileError):  # below the largest count: still absent
        wide.rate(RN50_64, "V100", 3, True)
    with pytest.raises(MissingProfileError):  # single-GPU-only types are not data-parallel: no scaling
        wide.rate("A3C", "V100", 2, True)
    assert not wide.has("CycleGAN", "V100", 16)


def test_from_rows_accepts_tuples_dicts_and_rows():
    store = ProfileStore.from_rows(
        [
            ("toy", "V100", 1, 1, 10.0),
            {"job_type": "toy", "gpu_model": "V100", "num_gpus": 2, "consolidated": 0, "throughput": 15.0},
            ProfileRow("toy", "V100", 2, True, 19.0),
        ]
    )
    assert store.rate("toy", "V100", 2, True) == 19.0
    assert store.rate("toy", "V100", 2, False) == 15.0
    assert store.rate("toy", "V100", 1, False) == 10.0
    assert "toy" in store and store.job_types() == ("toy",)
    with pytest.raises(InputError, match="duplicate"):
        ProfileStore.from_rows([("toy", "V100", 1, 1, 1.0), ("toy", "V100", 1, 1, 2.0)])


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profiles.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_user_csv_loads_and_canonicalises_gpu_names(tmp_path):
    path = _write(
        tmp_path,
        "# my table\njob_type,gpu_model,num_gpus,consolidated,throughput\nbert,v100,1,1,3.5\nbert,A100-80GB,2,0,9\n",
    )
    store = load_profiles(path)
    assert store.rate("bert", "V100", 1, True) == 3.5
    assert store.rate("bert", "A100-80GB", 2, False) == 9.0
    assert store.source == str(path)


@pytest.mark.parametrize(
    ("body", "row", "field", "words"),
    [
        ("job_type,gpu_model,num_gpus,throughput\nbert,V100,1,3\n", 0, "consolidated", "missing column"),
        (
            "job_type,gpu_model,num_gpus,consolidated,throughput\nbert,V100,1,1,fast\n",
            1,
            "throughput",
            "expected a number",
        ),
        (
            "job_type,gpu_model,num_gpus,consolidated,throughput\nbert,V100,1,1,3\nbert,V100,2,1,-1\n",
            2,
            "throughput",
            "from 0 to",
        ),
        (
            "job_type,gpu_model,num_gpus,consolidated,throughput\nbert,V100,two,1,3\n",
            1,
            "num_gpus",
            "whole number of GPUs",
        ),
        ("job_type,gpu_model,num_gpus,consolidated,throughput\nbert,V100,1,maybe,3\n", 1, "consolidated", "0 or 1"),
        (
            "job_type,gpu_model,num_gpus,consolidated,throughput\nbert,V100,1,1,3\nbert,V100,1,1,4\n",
            2,
            "job_type",
            "duplicate",
        ),
    ],
)
def test_user_csv_errors_name_file_row_field(tmp_path, body, row, field, words):
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as exc:
        load_profiles(path)
    assert_names(exc, path, row, field)
    assert words in str(exc.value)


def test_missing_profile_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_profiles(tmp_path / "nope.csv")


def test_bundled_table_is_derived_from_the_gavel_json(shared_data):
    spec = importlib.util.spec_from_file_location(
        "derive_gavel_profiles", Path(__file__).resolve().parents[2] / "tools" / "derive_gavel_profiles.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import json

    throughputs = json.loads((shared_data / "gavel" / "simulation_throughputs.json").read_text(encoding="utf-8"))
    expected = module.render_csv(module.derive_rows(throughputs))
    bundled = resources.files("gpuweave.workload").joinpath("data", "gavel_throughputs.csv").read_text(encoding="utf-8")
    assert bundled == expected
