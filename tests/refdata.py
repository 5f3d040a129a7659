"""Where the repository keeps its real reference data: tests/data/reference (see its README).

The one place that says so: the tests (tests/conftest.py), examples/replay/make_examples.py and
scripts/detector_data.py take these paths from here. Standard library only.
"""

from pathlib import Path

REFERENCE = Path(__file__).resolve().parent / "data" / "reference"
SEEDS = REFERENCE / "seeds"  # the excerpts of the seed documents that tests read
