"""ANDREAS: energy- and deadline-aware scheduling of DL training jobs on heterogeneous GPU nodes.

Filippini et al., "ANDREAS: Artificial intelligence traiNing scheDuler foR accElerAted resource clusterS"
(seeds/andreas-energy-aware-dl-scheduling.txt), implemented after the spec ``specs/andreas.md``.

Modules, one algorithm each: :mod:`catalog` (cost and profile tables), :mod:`model` (the rescheduling
problem as arrays), :mod:`cost` (proxy objective), :mod:`rg` (Randomized Greedy), :mod:`fpm` (FIFO/EDF/PS
baselines), :mod:`milp` (exact optimum, HiGHS), :mod:`bruteforce` (test oracle), :mod:`workload` (scenario
generator), :mod:`snapshot` and :mod:`cli` (``gpuweave plan andreas``). The package never imports the cluster
simulator: the policy adapters live in ``cluster/policies`` (``andreas_adapter``), the simulated runs (real
cost, ARMIDA replay, the campaign, the demo section) in the ANDREAS reproduction package.
"""
