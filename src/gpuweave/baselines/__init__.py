"""Other papers' scheduling algorithms on plain arrays, below both the cluster policies and the paper packages.

A baseline here is used by a cluster policy adapter (:mod:`gpuweave.cluster.policies`) and by a paper's own
experiment (e.g. Hadar's emulation), so it may import neither :mod:`gpuweave.cluster` nor a paper package.
"""
