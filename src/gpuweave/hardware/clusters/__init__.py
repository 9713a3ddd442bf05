"""Bundled cluster specs (YAML data files, one cluster each); read by gpuweave.hardware.cluster_spec."""
