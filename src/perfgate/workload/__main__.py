"""`python -m perfgate.workload SPEC.json`: run one workload launch on this rank."""

from __future__ import annotations

import sys

from perfgate.workload.dispatch import main

if __name__ == "__main__":
    sys.exit(main())
