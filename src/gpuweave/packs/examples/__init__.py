"""Small example programs for the real pack runner (``gpuweave run packs``)."""
