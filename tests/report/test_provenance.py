"""A baseline from another container is shown as a cross-version reference, never silently."""

from __future__ import annotations

from html.parser import HTMLParser

from perfgate.report import extras, provenance, signoff


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def _text(html: str) -> str:
    p = _Text()
    p.feed(html)
    return "".join(p.parts)


def _rec(container, image, notes=None):
    return {
        "row_id": "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20",
        "verdict": "INCONCLUSIVE",
        "message": "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20: INCONCLUSIVE: ...",
        "baseline": {
            "step_time_s": 9.118,
            "source": "llmb v25.04 llama3/finetuning README_70b.md, LoRA BF16 8x H100",
            "container": container,
            "notes": notes,
        },
        "runs": [{"label": "baseline", "image": image, "steps": []}],
        "comparison": {"delta": 0.13, "ci_low": 0.01, "ci_high": 0.25, "tolerance": 0.05},
        "measured": {"step_time_s": 10.3},
    }


def test_release_tags_of_images():
    assert provenance.release_tag("nvcr.io/nvidia/nemo:24.12") == "24.12"
    assert provenance.release_tag("/lustre/images/nemo-25.07.01.sqsh") == "25.07.01"
    assert provenance.release_tag("./nemo.sqsh") is None and provenance.release_tag(None) is None


def test_other_container_is_flagged_on_the_row_and_counted_in_the_summary():
    rec = _rec("nvcr.io/nvidia/nemo:24.12", "/images/nemo-25.07.sqsh")
    why = provenance.cross_version(rec)
    assert (
        why
        == "baseline published for nvcr.io/nvidia/nemo:24.12, measured with /images/nemo-25.07.sqsh"
    )
    block = _text(extras.detail_html(rec))
    assert "Cross-version reference, not a same-container regression check: baseline " in block
    assert (
        "Baseline 9.118 s from llmb v25.04" in block
        and "container nvcr.io/nvidia/nemo:24.12" in block
    )
    summary = signoff.containers_text([rec], {"mode": "live"})
    assert summary == (
        "Measured with: /images/nemo-25.07.sqsh. Baselines: 1 of 1 rows, from "
        "nvcr.io/nvidia/nemo:24.12; 1 of them from another container (cross-version reference)."
    )
    assert "cross-version baseline" in signoff.short_detail(rec)


def test_same_tag_or_unknown_image_is_not_flagged_unless_the_notes_say_so():
    assert provenance.cross_version(_rec("nvcr.io/nvidia/nemo:25.07", "/i/nemo-25.07.sqsh")) is None
    assert provenance.cross_version(_rec("nvcr.io/nvidia/nemo:24.12", None)) is None
    note = "cross-version reference: published for nemo:24.12, the row runs nemo:25.07"
    assert provenance.cross_version(_rec("nvcr.io/nvidia/nemo:24.12", None, note)) == note


def test_a_step_time_derived_from_published_throughput_says_so():
    rec = _rec("nvcr.io/nvidia/nemo:26.04.01", None, "step_time_s derived from tokens/s/GPU: ...")
    assert provenance.provenance_text(rec).startswith(
        "Baseline 9.118 s (derived from the published tokens/s/GPU) from llmb"
    )
