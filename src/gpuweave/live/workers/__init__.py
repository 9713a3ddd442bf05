"""Programs the live runtime ships: a synthetic worker (no torch) and a small PyTorch training program."""
