"""Profile sources and the wrappers around them implement the typed contract explicitly (no attribute forwarding)."""

from __future__ import annotations

import inspect

import pytest

from gpuweave.errors import MissingProfileError
from gpuweave.live.rates import MeasuredProfiles
from gpuweave.workload.pollux import PolluxJobModel
from gpuweave.workload.profile_source import PlacementRateSource, ProfileSource
from gpuweave.workload.profiles import ProfileStore

MEMBERS = ("rate", "has", "job_types", "gpu_models", "scale_factors", "__contains__")
ROWS = [
    ("A", "V100", 1, True, 10.0),
    ("A", "V100", 2, True, 18.0),
    ("A", "V100", 2, False, 15.0),
    ("A", "K80", 1, True, 4.0),
    ("B", "K80", 1, True, 0.0),
]


def _store() -> ProfileStore:
    return ProfileStore.from_rows(ROWS)


def test_every_source_is_a_profile_source_and_only_pollux_rates_placements():
    store = _store()
    pollux = PolluxJobModel({}, source="<none>")
    wrapped = [MeasuredProfiles(store, {})]
    for source in [store, pollux, *wrapped]:
        assert isinstance(source, ProfileSource), source
    assert isinstance(pollux, PlacementRateSource)
    # A wrapper offers no placement_rate: a driver keeps the placement-shape source it was built with.
    for source in [store, *wrapped, MeasuredProfiles(pollux, {})]:
        assert not isinstance(source, PlacementRateSource), source


def test_the_wrapper_defines_every_member_with_the_contracts_signature():
    cls = MeasuredProfiles
    assert "__getattr__" not in vars(cls)
    for name in MEMBERS:
        assert name in vars(cls), name
        mine = list(inspect.signature(getattr(cls, name)).parameters)
        assert mine == list(inspect.signature(getattr(ProfileSource, name)).parameters), name


def test_measured_profiles_answer_measurements_first_and_the_base_for_the_rest():
    store = _store()
    measured = MeasuredProfiles(store, {("A", "V100", 1, True): 7.5, ("A", "K80", 4, True): 1.0})
    assert measured.rate("A", "V100", 1, True) == 7.5
    assert measured.rate("A", "V100", 2, False) == 15.0
    with pytest.raises(MissingProfileError):
        measured.rate("A", "K80", 3, True)
    assert measured.has("A", "K80", 4) and measured.has("A", "V100", 2) and not measured.has("A", "K80", 3)
    assert measured.job_types() == store.job_types() == ("A", "B")
    assert measured.gpu_models() == store.gpu_models()
    assert measured.scale_factors("A") == (1, 2)
    assert "A" in measured and "C" not in measured


def test_allowed_gpu_types_are_a_field_of_the_job_and_never_fits_is_the_books_rule():
    """A service job's GPU types become ``Job.allowed_models`` (no ``@only`` suffix on its type); the book reads the
    other models as rate 0 and the service's admission check is the book's feasibility rule."""
    pytest.importorskip("sqlalchemy")
    from gpuweave.cluster.book import ClusterBook
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.service.jobs import never_fits
    from gpuweave.workload.job import Job

    store = _store()
    nodes = [Node(0, "v", "V100", 2, 0.0, 1.0), Node(1, "k", "K80", 2, 0.0, 1.0)]
    only_k80 = Job("a", 0.0, 1, 10.0, "A", allowed_models=("K80",))
    book = ClusterBook(nodes, [only_k80], store, {"V100": (0.0, 1.0), "K80": (0.0, 1.0)})
    assert book.job_model_rate(only_k80, "V100", True) == 0.0
    assert book.job_model_rate(only_k80, "K80", True) == 4.0
    assert book.fastest_models(only_k80) == ["K80"]
    assert book.placement_rate(only_k80, 1, ((0, 1),)) == 0.0
    book.check_feasible()
    assert never_fits(nodes, store, "A", 2, None) is None
    assert "unknown job type 'C' (known: A, B)" in str(never_fits(nodes, store, "C", 1, None))
    assert "can never run" in str(never_fits(nodes, store, "B", 1, None))
    assert "can never run on any node of the allowed types K80" in str(never_fits(nodes, store, "A", 2, ["K80"]))
    assert "GPU type(s) P100 not in the cluster" in str(never_fits(nodes, store, "A", 1, ["P100"]))
    # Spread over nodes only with ideal placement (the cluster's own rule): 3 V100s on nodes of 2.
    wide = [Node(0, "v0", "V100", 2, 0.0, 1.0), Node(1, "v1", "V100", 2, 0.0, 1.0)]
    spread_store = ProfileStore.from_rows([("A", "V100", 3, True, 20.0)])
    assert never_fits(wide, spread_store, "A", 3, None) is not None
    assert never_fits(wide, spread_store, "A", 3, None, ideal_placement=True) is None
