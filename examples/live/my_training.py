"""How to wrap your own training loop for `gpuweave cluster run` (executor.program: examples/live/my_training.py).

The 'model' here is one number nudged each step; replace the marked lines with your training step, your
checkpoint save and your checkpoint load.
"""

import json
import os

from gpuweave.live import api

value, steps = 0.0, 0
resume = api.resume_path()
if resume is not None:
    value = json.loads(resume.read_text())["value"]  # <- load your checkpoint

while steps < api.target_steps():
    value += 0.001  # <- one training step
    steps += 1
    api.report(steps)
    if api.should_checkpoint():
        path = api.checkpoint_path()
        tmp = f"{path}.tmp"
        with open(tmp, "w") as fh:
            json.dump({"value": value, "steps": steps}, fh)  # <- save your checkpoint
        os.replace(tmp, path)
        api.checkpointed(steps)
