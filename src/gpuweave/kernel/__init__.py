"""Kernel-level priority sharing of one GPU: the FIKIT scheduler and its kernel simulator.

Source: W. Wu, "FIKIT: Priority-Based Real-time GPU Multi-tasking Scheduling with Kernel
Identification", arXiv:2311.10359v5, and the project spec ``specs/fikit.md`` (Algorithms 1 and 2
rebuilt from prose, three added rules, resolutions R-1…R-23, acceptance checks AC-1…AC-22).

Modules, one algorithm each:

- :mod:`.ids`        kernel ID (function name, block dims, grid dims), task key, priority parsing
- :mod:`.profile`    measurement phase: T runs → per-ID mean duration SK and mean following gap SG
- :mod:`.bestfit`    Algorithm 2, BestPrioFit
- :mod:`.sched`      SchedulerCore: Algorithms 0 and 1, priority queues, feedback, preemption, presets
- :mod:`.traces`     kernel-trace format, canonical synthetic traces (spec §6.3)
- :mod:`.torch_import`  importer for ``torch.profiler`` Chrome traces
- :mod:`.models`     synthetic traces for the twelve Table 1 models (documented assumptions)
- :mod:`.sim`        discrete-event kernel simulator (exclusive, time-slice, FIFO, RR-kernel, FIKIT)
- :mod:`.experiments` experiments IV.a–IV.d, II, the feedback ablation and the time-slice sweep
- :mod:`.paper`      paper arithmetic (Tables 2, 3, amortisation, speedup statement)
- :mod:`.protocol`, :mod:`.server`, :mod:`.client`, :mod:`.torch_client`  the real path over UDP
- :mod:`.shim`       the kernel-level real path: ``shim/fikit_shim.c``, a C ``LD_PRELOAD`` library that
  gates ``cudaLaunchKernel`` through the server (runtime API only; not driver-API ``cuLaunchKernel``
  or CUDA graphs), built by :func:`.shim.build_shim` / ``gpuweave fikit build-shim``; see
  ``docs/fikit-shim.md``

Time unit everywhere: milliseconds (float).
"""

from __future__ import annotations

__all__ = ["PRIORITY_LEVELS"]

#: Number of priority queues Q0…Q9 (paper Fig. 7); 0 is the highest priority.
PRIORITY_LEVELS = 10
