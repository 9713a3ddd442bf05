"""Fixtures of the gang tests (issue 37): testbeds of network namespaces, made by the tests and always removed.

Every test here carries the ``gang`` marker but issue 38's elastic jobs live, which run on these testbeds and carry
``elastic`` instead (``pytest -m gang`` is issue 37's tests, ``-m elastic`` those). A testbed needs root
(``ip netns``), as CI and this machine have; the name is unique per test process, so the two xdist workers never
share one.
"""

import os

import pytest

from gpuweave.live import testbed


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gang/" in item.nodeid and item.get_closest_marker("elastic") is None:
            item.add_marker(pytest.mark.gang)


def _name(tag: str) -> str:
    return f"{tag}{os.getpid() % 100000}"


@pytest.fixture(scope="module")
def netns_bed():
    """Three namespaces on a private bridge (no Ray): node i is gw-<name>-i at 10.213.X.(10 + i)."""
    if os.geteuid() != 0:
        pytest.fail("the gang tests need root for `ip netns` (CI runs as root)")
    name = _name("n")
    testbed.down(name)  # a previous run of this process id that was killed
    bed = testbed.up(name, 3)
    try:
        yield bed
    finally:
        testbed.down(name)


@pytest.fixture(scope="module")
def ray_bed():
    """A Ray head on node 0 and Ray worker nodes 1-3 (1 x gpu_type:V100 each), each in its own namespace. A test
    that cuts a node off must be the module's last (the testbed is not mended)."""
    if os.geteuid() != 0:
        pytest.fail("the gang tests need root for `ip netns` (CI runs as root)")
    name = _name("r")
    testbed.down(name)
    bed = testbed.up(name, 4, ray=True, gpus_per_node=1, gpu_model="V100")
    try:
        yield bed
    finally:
        testbed.down(name)


@pytest.fixture(scope="module")
def slurm_bed(tmp_path_factory):
    """A Slurm whose control plane (MariaDB, slurmdbd, slurmctld) lives in namespace 0 and whose three slurmd live
    in namespaces 1-3, each with its own NodeAddr (nodes gw0-gw2, 4 V100 + 2 K80 fake GPUs each); yields
    (testbed, sandbox)."""
    from gpuweave.live.slurm_sandbox import SlurmSandbox, missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.fail(missing)
    name = _name("s")
    testbed.down(name)
    bed = testbed.up(name, 4)
    box = None
    try:
        box = SlurmSandbox(
            tmp_path_factory.mktemp("slurm"),
            namespaces=[(n.namespace, n.addr) for n in bed.nodes[1:]],
            control=(bed.nodes[0].namespace, bed.nodes[0].addr),
        ).start()
        yield bed, box
    finally:
        if box is not None:
            box.stop()
        testbed.down(name)
