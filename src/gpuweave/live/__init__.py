"""Live cluster execution: the simulator's policies drive real (or paced synthetic) training jobs.

Layout: :mod:`config` (the simulate config plus an ``executor`` section), :mod:`book` (cluster state kept with
the simulator's own bookkeeping and decision rules), :mod:`runtime` (the wall-clock loop), executors
(:mod:`local`, :mod:`ray_executor`, :mod:`slurm` with :mod:`slurm_commands`) behind :mod:`executor`'s interface,
:mod:`slurm_sandbox` (a throwaway local Slurm for tests and trying it), the worker side (:mod:`api`,
:mod:`channel`, :mod:`workers`), :mod:`journal` (restart after ``kill -9``), :mod:`consolidate` (HadarE) and
:mod:`results`. Nothing below ``cluster/`` imports this package.
"""
