"""Jobs, profiles and traces: what the schedulers are asked to run."""
