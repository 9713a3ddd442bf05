"""Crosschecks: our policies on a peer simulator's own traces, beside the peer's own results."""
