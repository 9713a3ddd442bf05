"""gpuweave: decide where and when GPU work runs.

Grains: slices of one GPU (MIG), kernels on one GPU (FIKIT), processors of one machine
(co-scheduling packs) and GPUs of a heterogeneous cluster (ANDREAS, Hadar, Gavel, ...).
"""

__version__ = "0.1.0"
