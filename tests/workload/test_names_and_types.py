"""GPU-model canonicalisation, the seeded job-type rule, and light imports for the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces.gpu_names import canonical_gpu_model, is_known_gpu_model
from gpuweave.workload.traces.job_types import assign_job_types, candidate_scale, candidates


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("v100", "V100"),
        ("V100M32", "V100"),
        ("V100M16", "V100"),
        ("k80", "K80"),
        ("P100", "P100"),
        (" t4 ", "T4"),
        ("A100-SXM4-80GB", "A100-80GB"),
        ("A800-SXM4-80GB", "A800"),
        ("H800", "H800"),
        ("G2", "G2"),
        ("GPU-series-1", "GPU-series-1"),
        ("MISC", "MISC"),
    ],
)
def test_canonical_names(raw, canonical):
    assert canonical_gpu_model(raw) == canonical
    assert is_known_gpu_model(raw)


def test_unknown_gpu_model_names_where():
    with pytest.raises(InputError) as exc:
        canonical_gpu_model("Voodoo5", file="f.csv", row=3, field="gpu_model")
    assert exc.value.one_line().startswith("f.csv, row 3, field 'gpu_model': unknown GPU model 'Voodoo5'")
    assert not is_known_gpu_model("Voodoo5")


def test_candidate_scale_and_candidates(profiles):
    assert [candidate_scale(profiles, n) for n in (1, 2, 3, 4, 7, 8, 12, 64)] == [1, 2, 2, 4, 4, 8, 8, 8]
    at_one, at_eight = candidates(profiles, 1), candidates(profiles, 8)
    assert len(at_one) == 26 and len(at_eight) == 19
    assert "A3C" not in at_eight and "ResNet-50 (batch size 128)" in at_eight  # V100 fits it; K80 does not


def test_assignment_is_uniform_and_seeded(profiles):
    counts = [1] * 5200 + [8] * 1900
    types, notes = assign_job_types(counts, seed=11, profiles=profiles)
    assert types == assign_job_types(counts, seed=11, profiles=profiles)[0]
    single = Counter(types[:5200])
    assert len(single) == 26 and max(single.values()) < 2 * min(single.values())
    assert set(types[5200:]) <= set(candidates(profiles, 8))
    assert notes[0].startswith("job_type drawn uniformly at random (seed 11)") and "scale 8" in notes[-1]


def test_assignment_fails_when_nothing_fits():
    store = ProfileStore.from_rows([("toy", "V100", 2, True, 0.0)])
    with pytest.raises(InputError, match="1 GPU"):
        assign_job_types([1], seed=0, profiles=store)
    with pytest.raises(InputError, match="positive throughput"):
        assign_job_types([2], seed=0, profiles=store)


def test_trace_cli_module_and_profiles_do_not_import_pandas():
    code = (
        "import sys, gpuweave.cli.trace, gpuweave.workload.profiles as p; "
        "p.load_profiles(); print('pandas' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"
