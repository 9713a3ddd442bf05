"""GPU sharing at the cluster grain: nodes whose GPUs tasks may share (fractions of a GPU), CPU and memory per
node, the placements that score nodes for such tasks (FGD and its baselines, :mod:`.placements`), FGD's
fragmentation measure (:mod:`.fragmentation`) and FGD's experiment (:mod:`.experiment`: tasks placed at arrival,
never removed)."""
