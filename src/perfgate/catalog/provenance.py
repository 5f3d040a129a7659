"""The catalog perfgate ships, and how a site's baselines folder stands against it.

perfgate ships its rows twice: `baselines/` is the site's to edit (add, drop, re-measure),
and `perfgate/catalog/shipped/` is the reference a release was built and tested on: NVIDIA's
published configurations (seeds 000-004, the Megatron-Bridge performance summary) and
perfgate's own megatron_core rows, exactly as transcribed. The suite's own tests read the
reference, never `baselines/`, so a site's edits cannot turn them red; `perfgate validate
--provenance` holds a folder against it:

- every shipped row is present, with its configuration (everything but the baseline)
  unchanged;
- its baseline is the shipped one, or one perfgate measured on the site (`--update-baselines`
  stores those with a provenance that says so): a published number is never edited by hand;
- rows the site added are counted, never judged.

`exact=True` (the project's own CI) also refuses own rows and replaced baselines: the folder
must be the reference itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfgate.catalog.rows import Row
from perfgate.catalog.schema import row_to_dict
from perfgate.catalog.store import Catalog, load_catalog

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"


def shipped_catalog() -> Catalog:
    """The rows perfgate ships (perfgate/catalog/shipped/<gpu>.json)."""
    return load_catalog(SHIPPED_DIR)


@dataclass
class ProvenanceReport:
    """How a folder stands against the shipped rows: counts, and one line per problem."""

    shipped: int = 0
    unchanged: int = 0
    remeasured: list[str] = field(default_factory=list)
    own: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no shipped row is missing, altered or carries an edited number."""
        return not self.problems


def _config(row: Row) -> dict:
    d = row_to_dict(row)
    d.pop("baseline", None)
    return d


def _first_difference(a: dict, b: dict) -> str:
    for key in sorted(set(a) | set(b), key=lambda k: (k not in a, k)):
        if a.get(key) != b.get(key):
            return f"field {key!r}: {b.get(key)!r}, shipped {a.get(key)!r}"
    return "identical"


def check(site: Catalog, where: str, *, exact: bool = False) -> ProvenanceReport:
    """Hold a loaded baselines folder (named `where` in each line) against the shipped rows."""
    ref = shipped_catalog()
    report = ProvenanceReport(shipped=len(ref.rows))
    for want in ref.rows:
        have = site.by_id.get(want.id)
        if have is None:
            report.problems.append(f"{where}: row {want.id}: shipped row missing")
            continue
        path = site.files[want.id]
        shipped_cfg, site_cfg = _config(want), _config(have)
        if shipped_cfg != site_cfg:
            diff = _first_difference(shipped_cfg, site_cfg)
            report.problems.append(f"{path}: row {want.id}: configuration changed: {diff}")
            continue
        if have.baseline == want.baseline:
            report.unchanged += 1
        elif have.baseline is not None and have.baseline.measured_here and not exact:
            report.remeasured.append(want.id)
        else:
            stored = "none" if have.baseline is None else have.baseline.provenance.source
            report.problems.append(
                f"{path}: row {want.id}: field 'baseline': not the shipped one and not "
                f"measured by perfgate (source {stored[:60]!r})"
            )
    for row in site.rows:
        if row.id not in ref.by_id:
            report.own.append(row.id)
            if exact:
                report.problems.append(f"{site.files[row.id]}: row {row.id}: not a shipped row")
    return report


def check_folder(directory: str | Path, *, exact: bool = False) -> ProvenanceReport:
    """check() on a baselines folder read from disk."""
    return check(load_catalog(directory), str(directory), exact=exact)
