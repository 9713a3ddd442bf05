"""Cluster specs: bundled clusters, expansion, make_cluster and bad YAML input."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.hardware import ClusterSpec, Node, bundled_clusters, load_cluster, make_cluster


def test_bundled_clusters_listed():
    assert {"gavel-60", "andreas-v100-t4", "andreas-armida", "mixed-1024"} <= set(bundled_clusters())


def test_gavel_60():
    spec = load_cluster("gavel-60")
    assert spec.total_gpus == 60
    assert spec.total_nodes == 15
    assert spec.gpus_by_model() == {"V100": 20, "P100": 20, "K80": 20}
    nodes = spec.expand()
    assert [n.index for n in nodes] == list(range(15))
    assert all(n.num_gpus == 4 for n in nodes)
    assert nodes[0] == Node(0, "v100-0", "V100", 4, 0.0, 1.0)
    assert nodes[-1].name == "k80-4"
    assert "Gavel" in spec.source


def test_andreas_clusters_use_paper_price_and_pue():
    sim = load_cluster("andreas-v100-t4")
    nodes = sim.expand()
    assert [n.gpu_model for n in nodes] == ["V100", "T4"] * 5  # node i is TESLA when i is even
    assert [n.num_gpus for n in nodes] == [2, 1] * 5
    assert all(n.price_per_kwh == 0.17168313 and n.pue == 1.33 for n in nodes)
    armida = load_cluster("andreas-armida")
    assert [(n.name, n.gpu_model, n.num_gpus) for n in armida.expand()] == [
        ("armida-05", "V100", 1),
        ("armida-06", "V100", 2),
        ("armida-07", "T4", 1),
    ]


def test_mixed_1024():
    spec = load_cluster("mixed-1024")
    assert spec.total_gpus == 1024
    assert spec.gpus_by_model() == {"V100": 384, "P100": 384, "K80": 256}
    assert len({n.name for n in spec.expand()}) == 128


def test_load_by_path_with_aliases_and_group_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        """
name: tiny
price_per_kwh: 0.1
pue: 1.2
nodes:
  - {count: 2, gpu: a100, gpus_per_node: 8}
  - {gpu: Tesla T4, gpus_per_node: 1, price_per_kwh: 0.3, pue: 1.5, name_prefix: edge}
  - {gpu: a100_40gb, gpus_per_node: 4}
"""
    )
    spec = load_cluster(path)
    nodes = spec.expand()
    assert [n.name for n in nodes] == ["a100-40gb-0", "a100-40gb-1", "edge0", "a100-40gb-2"]
    assert nodes[0].gpu_model == "A100-40GB" and nodes[0].price_per_kwh == 0.1 and nodes[0].pue == 1.2
    assert (nodes[2].gpu_model, nodes[2].price_per_kwh, nodes[2].pue) == ("T4", 0.3, 1.5)
    assert spec.gpus_by_model() == {"A100-40GB": 20, "T4": 1}
    assert load_cluster(str(path)) == spec


def test_defaults_documented_values():
    spec = ClusterSpec.model_validate({"name": "x", "nodes": [{"gpu": "V100", "gpus_per_node": 2}]})
    assert spec.price_per_kwh == 0.0 and spec.pue == 1.0
    assert spec.nodes[0].count == 1


def _bad(tmp_path: Path, body: str) -> InputError:
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(InputError) as info:
        load_cluster(path)
    assert info.value.file == str(path)
    return info.value


def test_unknown_gpu_names_file_and_field(tmp_path):
    err = _bad(
        tmp_path,
        """
name: c
nodes:
  - {count: 1, gpu: V100, gpus_per_node: 4}
  - {count: 1, gpu: P100, gpus_per_node: 4}
  - {count: 1, gpu: GTX9000, gpus_per_node: 4}
""",
    )
    assert err.field == "nodes[2].gpu"
    assert "GTX9000" in err.message and "A100-40GB" in err.message
    line = str(err)
    assert "bad.yaml" in line and "nodes[2].gpu" in line


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("name: c\nnodes:\n  - {count: 0, gpu: V100, gpus_per_node: 4}\n", "nodes[0].count"),
        ("name: c\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: -1}\n", "nodes[0].gpus_per_node"),
        ("name: c\nnodes:\n  - {gpu: V100}\n", "nodes[0].gpus_per_node"),
        ("name: c\npue: 0.5\nnodes:\n  - {gpu: V100, gpus_per_node: 1}\n", "pue"),
        ("name: c\nnodes:\n  - {gpu: V100, gpus_per_node: 1, price_per_kwh: -2}\n", "nodes[0].price_per_kwh"),
        ("name: c\nnodes:\n  - {gpu: V100, gpus_per_node: 1, colour: red}\n", "nodes[0].colour"),
        ("name: c\nnodes: []\n", "nodes"),
        ("nodes:\n  - {gpu: V100, gpus_per_node: 1}\n", "name"),
        ("name: c\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: 1, names: [a]}\n", "nodes[0]"),
    ],
)
def test_bad_values_name_the_field(tmp_path, body, field):
    assert _bad(tmp_path, body).field == field


def test_duplicate_node_names(tmp_path):
    err = _bad(
        tmp_path,
        "name: c\nnodes:\n  - {gpu: V100, gpus_per_node: 1, names: [n1]}\n"
        "  - {gpu: T4, gpus_per_node: 1, names: [n1]}\n",
    )
    assert err.field == "nodes[1].names" and "n1" in err.message


def test_not_yaml_and_not_mapping(tmp_path):
    err = _bad(tmp_path, "name: [unclosed\n")
    assert "YAML" in err.message
    err = _bad(tmp_path, "- just\n- a list\n")
    assert "mapping" in err.message


def test_unknown_bundled_name_and_missing_path():
    with pytest.raises(InputError, match="gavel-60"):
        load_cluster("no-such-cluster")
    with pytest.raises(InputError, match="not found"):
        load_cluster("/nonexistent/dir/c.yaml")


def test_make_cluster_splits_nodes_evenly():
    spec = make_cluster(1024, ["V100", "P100", "K80"])
    assert spec.total_gpus == 1024
    assert [g.count for g in spec.nodes] == [43, 43, 42]
    assert spec.gpus_by_model() == {"V100": 344, "P100": 344, "K80": 336}
    small = make_cluster(16, ["a100"], gpus_per_node=4, price_per_kwh=0.2, pue=1.1)
    nodes = small.expand()
    assert len(nodes) == 4 and nodes[0].gpu_model == "A100-40GB" and nodes[0].pue == 1.1


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((100, ["V100"]), "gpus"),
        ((0, ["V100"]), "gpus"),
        ((8, []), "models"),
        ((8, ["V100", "T4"]), "models"),
        ((8, ["Z1"]), "models[0]"),
    ],
)
def test_make_cluster_bad_input(args, field):
    with pytest.raises(InputError) as info:
        make_cluster(*args)
    assert info.value.field == field


def test_currency_is_the_specs_and_checked(tmp_path):
    """Issue 40 item 5: one currency, named by the cluster spec ("$" by default); a bad one is one line."""
    assert load_cluster("gavel-60").currency == "$"
    base = "name: c\nprice_per_kwh: 0.3\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: 4}\n"
    path = tmp_path / "c.yaml"
    for currency in ("€", "EUR", "CHF "):
        path.write_text(base + f'currency: "{currency}"\n', encoding="utf-8")
        assert load_cluster(path).currency == currency
    for bad in ("", "a b", "\\t", "EURO-DOLLAR"):
        path.write_text(base + f'currency: "{bad}"\n', encoding="utf-8")
        with pytest.raises(InputError, match="currency"):
            load_cluster(path)
