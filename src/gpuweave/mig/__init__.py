"""Moldable batch scheduling on NVIDIA MIG: FAR, its baselines, an exact solver, a validator, an executor.

Entry points (imported lazily by the CLI): :func:`gpuweave.mig.far.far`,
:func:`gpuweave.mig.registry.plan`, :func:`gpuweave.mig.validate.validate_schedule`,
:func:`gpuweave.mig.problem.read_tasks_csv`.
"""
