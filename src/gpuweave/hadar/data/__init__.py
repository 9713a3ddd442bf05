"""Package data of gpuweave.hadar (paper numbers, derived Philly pool, emulated clusters)."""
