"""MIG geometry: partitions (FAR Fig. 1) and repartitioning trees (FAR Fig. 4, spec §1.5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.hardware import get_mig_geometry, get_partition, is_valid_partition, partition_label, partitions
from gpuweave.hardware.mig import Placement, geometry_from_tables, repartition_tree

A30_FIG1 = ["4", "2-2", "2-1-1", "1-1-2", "1-1-1-1"]
A100_FIG1 = [
    "7", "4-3", "4-2-1", "4-1-1-1",
    "3-3", "3-2-1", "3-1-1-1",
    "2-2-3", "2-2-2-1", "2-2-1-1-1",
    "2-1-1-3", "2-1-1-2-1", "2-1-1-1-1-1",
    "1-1-2-3", "1-1-2-2-1", "1-1-2-1-1-1",
    "1-1-1-1-3", "1-1-1-1-2-1", "1-1-1-1-1-1-1",
]  # fmt: skip


def N(start, size, occ, *children):
    """Spec §1.5 notation Node(start, size, occ) -> TreeNode.to_tuple() form."""
    return (start, size, tuple(sorted(occ)), tuple(children))


def leaf(s):
    return N(s, 1, {s})


SPEC_A30_TREE = N(0, 4, {0, 1, 2, 3}, N(0, 2, {0, 1}, leaf(0), leaf(1)), N(2, 2, {2, 3}, leaf(2), leaf(3)))
SPEC_A100_TREE = N(
    0, 7, set(range(7)),
    N(0, 4, {0, 1, 2, 3},
      N(0, 3, {0, 1, 2, 3},
        N(0, 2, {0, 1}, leaf(0), leaf(1)),
        N(2, 2, {2, 3}, leaf(2), leaf(3)))),
    N(4, 3, {4, 5, 6},
      N(4, 2, {4, 5}, leaf(4), leaf(5)),
      leaf(6)),
)  # fmt: skip


@pytest.mark.parametrize(
    ("gpu", "expected"), [("A30", SPEC_A30_TREE), ("A100", SPEC_A100_TREE), ("H100", SPEC_A100_TREE)]
)
def test_repartition_tree_equals_spec_node_for_node(gpu, expected):
    tree = repartition_tree(get_mig_geometry(gpu))
    assert tree.to_tuple() == expected


def test_tree_sizes_and_reconfiguration_bounds():
    a30 = repartition_tree(get_mig_geometry("A30"))
    a100 = repartition_tree(get_mig_geometry("A100"))
    assert len(list(a30.walk())) == 7 and a30.non_leaf_count() == 3
    assert len(list(a100.walk())) == 14 and a100.non_leaf_count() == 7
    # every placement appears exactly once in its tree
    geo = get_mig_geometry("A100")
    assert sorted((n.size, n.start) for n in a100.walk()) == sorted((p.size, p.start) for p in geo.placements)
    # §5.2 case 3: the S6 branch is 7 -> 3 -> 1
    s6 = [n.size for n in a100.walk() if 6 in n.slices]
    assert s6 == [7, 3, 1]


@pytest.mark.parametrize(
    ("gpu", "expected"), [("A30", A30_FIG1), ("A100", A100_FIG1), ("H100", A100_FIG1), ("B200", A100_FIG1)]
)
def test_partitions_match_fig1_numbering(gpu, expected):
    found = partitions(get_mig_geometry(gpu))
    assert [partition_label(p) for p in found] == expected
    assert len(found) == {"A30": 5}.get(gpu, 19)


def test_partition_contents_use_occupancy():
    geo = get_mig_geometry("A100")
    p5 = partitions(geo)[4]  # "3-3": S3 unused, blocked by the first 3
    assert partition_label(p5) == "3-3"
    first = p5[0]
    assert first.slices == frozenset({0, 1, 2}) and first.occupancy == frozenset({0, 1, 2, 3})
    assert [p.start for p in get_partition(geo, "1-1-2-3")] == [0, 1, 2, 4]
    for part in partitions(geo):
        assert is_valid_partition(part, geo)
        assert sum(len(p.occupancy) for p in part) == geo.num_slices  # maximal partitions cover all slices


def test_get_partition_unknown_label():
    with pytest.raises(InputError, match="2-4-1"):
        get_partition(get_mig_geometry("A100"), "2-4-1")


def test_is_valid_partition_examples():
    geo = get_mig_geometry("A100")
    three_at_0 = geo.placement(3, 0)
    assert not is_valid_partition([three_at_0, geo.placement(1, 3)])  # S3 is occupied by 3@0
    assert is_valid_partition([three_at_0, geo.placement(2, 4)])
    assert not is_valid_partition([geo.placement(4, 0), geo.placement(2, 2)])
    assert is_valid_partition([])
    odd = Placement(size=2, start=1, slices=frozenset({1, 2}), occupancy=frozenset({1, 2}))
    assert is_valid_partition([odd])  # disjoint on its own...
    assert not is_valid_partition([odd], geo)  # ...but {S1,S2} is not an A100 instance
    a30 = get_mig_geometry("A30")
    with pytest.raises(InputError, match="no MIG instance of size 2 at slice 1"):
        a30.placement(2, 1)  # {S1,S2} is not an instance on A30


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["A30", "A100"]), st.data())
def test_valid_sets_are_exactly_subsets_of_maximal_partitions(gpu, data):
    geo = get_mig_geometry(gpu)
    chosen = data.draw(st.sets(st.sampled_from(geo.placements), max_size=5))
    inside_some = any(chosen <= set(part) for part in partitions(geo))
    assert is_valid_partition(chosen, geo) == inside_some


def _tables(**override):
    table = {
        "num_slices": 4,
        "sizes": [1, 2, 4],
        "placements": [{"size": 4, "start": 0}, {"size": 2, "start": 0}, {"size": 2, "start": 2}]
        + [{"size": 1, "start": s} for s in range(4)],
        "create_s": {"1": 0.1, "2": 0.1, "4": 0.1},
        "destroy_s": {"1": 0.1, "2": 0.1, "4": 0.1},
    }
    table.update(override)
    return {"G": table}


def test_geometry_from_tables_accepts_a30_like_table():
    geo = geometry_from_tables(_tables())["G"]
    assert [partition_label(p) for p in partitions(geo)] == A30_FIG1


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"placements": [{"size": 4, "start": 1}]}, "mig.G.placements[0].start"),
        ({"placements": [{"size": 3, "start": 0}]}, "mig.G.placements[0].size"),
        ({"placements": [{"size": 2, "start": 0, "occupancy": [0]}]}, "mig.G.placements[0].occupancy"),
        ({"create_s": {"1": 0.1}}, "mig.G.create_s"),
        ({"sizes": [1, 2, 5]}, "mig.G.sizes"),
        ({"placements": [{"size": 4, "start": 0}]}, "mig.G.placements"),
    ],
)
def test_bad_geometry_names_the_field(override, field):
    with pytest.raises(InputError) as info:
        geometry_from_tables(_tables(**override), file="x.toml")
    assert info.value.field == field
    assert info.value.file == "x.toml"


def test_non_tree_geometry_is_rejected():
    # two overlapping 2-slice instances {S0,S1} and {S1,S2}: S1 has two parents
    geo = geometry_from_tables(
        {
            "G": {
                "num_slices": 3,
                "sizes": [1, 2, 3],
                "placements": [{"size": 3, "start": 0}, {"size": 2, "start": 0}, {"size": 2, "start": 1}]
                + [{"size": 1, "start": s} for s in range(3)],
                "create_s": {"1": 0, "2": 0, "3": 0},
                "destroy_s": {"1": 0, "2": 0, "3": 0},
            }
        }
    )["G"]
    assert [partition_label(p) for p in partitions(geo)] == ["3", "2-1", "1-2", "1-1-1"]
    with pytest.raises(ValueError, match="not a single tree"):
        repartition_tree(geo)
