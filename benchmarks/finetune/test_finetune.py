"""Fine-tuning rows (SFT and LoRA) of baselines/*.json: one test per row, id = row id.

Same pipeline as benchmarks/pretrain: the plugin runs, plans or replays the row in the
`perfgate_evaluation` fixture; the verdict is asserted here. Fine-tuning needs data:
--finetune-data DIR (llmb layout) or --mock-finetune-data.
"""

from perfgate.suite.outcome import assert_verdict

ROW_TASKS = ("sft", "lora")


def test_finetune(perfgate_row, perfgate_evaluation, perfgate_strict):
    assert_verdict(perfgate_evaluation, strict=perfgate_strict)
