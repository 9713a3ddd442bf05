"""Tests of gpuweave.workload: profiles, trace schema, readers, generator and the trace CLI."""
