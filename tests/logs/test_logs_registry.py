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


def test_the_anchor_search_order_is_the_hand_written_one():
    found = [(gate, [s.kind for s in shapes]) for gate, shapes in lf.GATES]
    assert found == [
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
    assert lf.MARKERS == (
        b"teration",
        b"Step Time",
        b"train_step_timing",
        b"tps",
        b"s/step",
        b"step/s",
        b"Max iter time",
        b"MFU:",
    )


def test_the_registry_holds_every_format_in_tie_break_order():
    assert [f.name for f in lf.REGISTRY] == list(lf.FORMATS)
    tie_break = "megatron_bridge megatron nemo2 nemo_delta_timing nemo1_tqdm automodel"
    assert (*tie_break.split(), "automodel_benchmark", "torchtitan") == lf.FORMATS


def test_only_the_kinds_every_rank_prints_are_capped_per_rank():
    capped = set(lf.ALL_RANK_KINDS)
    assert capped == {lf.NEMO2, lf.NEMO_DELTA, lf.TQDM, lf.MEGATRON, lf.AUTOMODEL, lf.TITAN}
