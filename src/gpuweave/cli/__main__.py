"""``python -m gpuweave.cli``: the same as the ``gpuweave`` console script."""

from gpuweave.cli import main

main()
