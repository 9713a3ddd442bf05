"""ANDREAS: energy- and deadline-aware scheduling of DL training jobs on heterogeneous GPU nodes.

Filippini et al., "ANDREAS: Artificial intelligence traiNing scheDuler foR accElerAted resource clusterS"
(seeds/andreas-energy-aware-dl-scheduling.txt), implemented after the spec ``specs/andreas.md``.

Modules, one algorithm each: :mod:`catalog` (cost and profile tables), :mod:`model` (the rescheduling
problem as arrays), :mod:`cost` (proxy objective and real ex-post cost), :mod:`rg` (Randomized Greedy),
:mod:`fpm` (FIFO/EDF/PS baselines), :mod:`milp` (exact optimum, HiGHS), :mod:`bruteforce` (test oracle),
:mod:`adapter` and :mod:`policy` (cluster-simulator policies), :mod:`workload` (scenario generator),
:mod:`armida` (real-cluster replay), :mod:`snapshot` and :mod:`cli` (``gpuweave plan andreas``).
"""
