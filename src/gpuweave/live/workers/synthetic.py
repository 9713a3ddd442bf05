"""Synthetic worker: does no computation, only paced steps, so a live run needs no torch and no GPU.

The runtime's pace (``GPUWEAVE_PACE``, steps per wall second) emulates the job's speed on its GPU type from the
profile store's rate; the checkpoint is ``{"steps": n}``. ``--crash-attempts K`` makes the first K attempts of a
job exit with status 3 halfway (fault tests); ``--silent`` never reports (a program that hangs); ``--fixed-rate R``
runs at R steps per wall second whatever GPU it was given (a program whose real speed differs from its profile);
``--ignore-sigterm`` swallows the runtime's stop signal (a program whose own handler keeps it training).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from gpuweave.live import api

BATCH_S = 0.01  # wall seconds of emulated work per report


def save(path: Path, steps: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"steps": steps}))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--crash-attempts", type=int, default=0)
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--fixed-rate", type=float, default=0.0)
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args(argv)
    if args.fixed_rate > 0:  # before the first api call, which reads the pace
        os.environ["GPUWEAVE_PACE"] = str(args.fixed_rate)
    if args.silent:
        time.sleep(3600)
        return 0
    target = api.target_steps()  # the first api call installs the api's SIGTERM handler
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    attempt = int(os.environ.get("GPUWEAVE_ATTEMPT", "0"))
    crash_at = target // 2 if attempt < args.crash_attempts else -1
    pace = float(os.environ.get("GPUWEAVE_PACE", "0") or 0)
    batch = max(1, int(pace * BATCH_S)) if pace > 0 else 1
    steps = 0
    while steps < target:
        steps = min(target, steps + batch)
        api.report(steps)
        if 0 <= crash_at <= steps:
            print(f"synthetic worker: injected crash at step {steps}", file=sys.stderr)
            return 3
        if api.should_checkpoint():
            save(api.checkpoint_path(), steps)
            api.checkpointed(steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
