"""The format registry: every family's shapes reachable, and the orders the parser relies on."""

from __future__ import annotations

from perfgate.logs import formats as lf


def test_every_shape_gate_holds_a_marker_of_its_family():
    # A gate without one of its family's markers would never see a line: the scan drops it.
    for family in lf.FAMILIES:
        for shape in family.shapes:
            assert any(m.decode() in shape.gate for m in family.markers), shape


def test_each_kind_belongs_to_one_family():
    kinds = [k for family in lf.FAMILIES for k in family.kinds]
    assert len(kinds) == len(set(kinds))


# perfgate's own formats: a site's own may stand anywhere among them (docs/extending.md), so
# the orders below are held for these, in the order they keep relative to each other.
OWN_FORMATS = (
    "megatron_bridge", "megatron", "nemo2", "nemo_delta_timing", "nemo1_tqdm", "automodel",
    "automodel_benchmark", "torchtitan",
)  # fmt: skip
OWN_KINDS = {
    lf.NEMO2, lf.MEGATRON, lf.MEMORY, lf.AM_SUMMARY, lf.STEP_TIME, lf.NEMO_DELTA, lf.TQDM,
    lf.AUTOMODEL, lf.TITAN, lf.AM_BAR, lf.AM_ITER, lf.AM_TIME, lf.AM_MFU,
}  # fmt: skip
OWN_MARKERS = (
    b"teration", b"Step Time", b"train_step_timing", b"tps", b"s/step", b"step/s",
    b"Max iter time", b"MFU:",
)  # fmt: skip


def test_the_anchor_search_order_is_the_hand_written_one():
    found = [(gate, [s.kind for s in shapes if s.kind in OWN_KINDS]) for gate, shapes in lf.GATES]
    assert [(g, kinds) for g, kinds in found if kinds] == [
        ("iteration", [lf.NEMO2, lf.MEGATRON, lf.MEMORY, lf.AM_SUMMARY]),
        ("Step Time", [lf.STEP_TIME]),
        ("train_step_timing in s=", [lf.NEMO_DELTA, lf.TQDM]),
        ("tps", [lf.AUTOMODEL, lf.TITAN]),
        ("s/step", [lf.AM_BAR]),
        ("step/s", [lf.AM_BAR]),
        ("Iteration", [lf.AM_ITER]),
        ("Max iter time", [lf.AM_TIME]),
        ("MFU:", [lf.AM_MFU, lf.AM_SUMMARY]),
    ]
    assert tuple(m for m in lf.MARKERS if m in OWN_MARKERS) == OWN_MARKERS


def test_the_registry_holds_every_format_in_tie_break_order():
    assert [f.name for f in lf.REGISTRY] == list(lf.FORMATS)
    assert tuple(name for name in lf.FORMATS if name in OWN_FORMATS) == OWN_FORMATS
    assert len(lf.FORMATS) == len(set(lf.FORMATS))


def test_only_the_kinds_every_rank_prints_are_capped_per_rank():
    capped = set(lf.ALL_RANK_KINDS) & OWN_KINDS
    assert capped == {lf.NEMO2, lf.NEMO_DELTA, lf.TQDM, lf.MEGATRON, lf.AUTOMODEL, lf.TITAN}
