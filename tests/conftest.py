"""Test-suite settings shared by every area.

Under CI (the ``CI`` environment variable is set, as `.ci/run` runs) hypothesis is derandomized, so a CI run
is reproducible; locally every run draws fresh examples, which is how the property tests keep finding bugs.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
