"""Hadar and HadarE (Sultana et al., arXiv 2503.10918v1; IPDPS'24): the pieces behind the cluster policies.

Modules (one algorithm each): :mod:`.price` (Eq. 5-7 price function and its constants), :mod:`.problem`
(the numeric round problem), :mod:`.dp` (FIND_ALLOC and the DP of Algorithm 2 in the spec's corrected
form, plus the literal variant), :mod:`.forking` (HadarE's forking rules: copies per job, copy ids, step split;
the cluster grain's forked placements and their rate are ``cluster/forking.py``), :mod:`.trace` (the 480-job
Philly-derived workload), :mod:`.fig1` (the motivating example), :mod:`.emulation` (5-node physical-cluster
emulation). The cluster policies that run these algorithms in the simulator are in ``cluster/policies`` (their
rate tables in ``cluster/rate_table.py``); the snapshot planner (``gpuweave cluster plan hadar``) in
``cluster/hadar_plan.py``; metrics over simulator records and the scalability curve in the Hadar reproduction.
The spec is ``specs/hadar.md``; where it departs from the paper, the docstrings say so.
"""
