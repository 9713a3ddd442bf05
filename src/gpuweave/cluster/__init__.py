"""Cluster-scale scheduling: the event-driven simulator, allocation rules, metrics and policies."""
