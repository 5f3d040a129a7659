"""--nemo2 --cpu: NeMo 2's own callbacks on a real Lightning trainer, with a stand-in model.

    python -m gpucheck.nemo2_cpu SPEC.json          (NeMo's Python; stdout is rank 0's log)

NeMo cannot take a training step without CUDA (gpucheck.nemo2.BOUNDARY), but the code that
times a step, counts its FLOPs and prints its line is NeMo's and runs anywhere: this builds the
row's recipe with the installed NeMo (perfgate.workload.nemo2.recipe, as the job does), takes
the FLOPsMeasurementCallback the recipe configured for the GPU row (llama32_1b at seq 4096,
gbs 4) and trains a small torch module for spec.steps steps with NeMo's TimingCallback, that
FLOPs callback, NeMo's ProgressPrinter and perfgate's step callback, in the order NeMo's
recipes put them. The stand-ins: the model, and a Lightning strategy that also answers
`current_epoch_step` (MegatronStrategy's definition, which the printer and the FLOPs
callback read). What comes out is what a GPU run leaves: steps.json, device_clock.json
(CLOCK_REALTIME here) and NeMo's printed lines, read back by gpucheck.nemo2 like a launch's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Run the callbacks; write steps.json, device_clock.json and nemo2_cpu.json beside SPEC."""
    args = sys.argv[1:] if argv is None else argv
    # NeMo, Lightning and torch load here only: this module runs in NeMo's Python.
    import fiddle as fdl
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.strategies import SingleDeviceStrategy
    from nemo.lightning.pytorch.callbacks.progress_printer import ProgressPrinter
    from nemo.utils.exp_manager import TimingCallback

    from perfgate.logs.stepfile import StepRecord
    from perfgate.workload.nemo2.callback import PerfgateStepCallback
    from perfgate.workload.nemo2.paths import find_callback
    from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe
    from perfgate.workload.runtime import Recorder
    from perfgate.workload.spec import WorkloadSpec

    spec = WorkloadSpec.read(args[0])
    row, out = spec.row, Path(spec.output_dir)
    recipe = build_recipe(row, RecipeInputs(steps=spec.steps, overrides=spec.overrides))
    flops_callback = fdl.build(find_callback(recipe, "FLOPsMeasurementCallback"))

    class StandInStrategy(SingleDeviceStrategy):
        """Lightning's single-device strategy, plus MegatronStrategy's current_epoch_step."""

        @property
        def current_epoch_step(self) -> int:
            loop = self.lightning_module.trainer.fit_loop.epoch_loop
            return max(
                loop.automatic_optimization.optim_progress.optimizer.step.current.completed,
                loop.manual_optimization.optim_step_progress.current.completed,
            )

    class StandIn(pl.LightningModule):
        """A few ms of matmuls per step on random data."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(64, 64)

        def training_step(self, batch: Any, idx: int) -> Any:
            x = batch[0]
            for _ in range(20):
                x = torch.tanh(self.layer(x))
            return x.pow(2).mean()

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01)

        def train_dataloader(self) -> Any:
            data = torch.utils.data.TensorDataset(torch.randn(spec.steps, 32, 64))
            return torch.utils.data.DataLoader(data, batch_size=None)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = torch.distributed.TCPStore("127.0.0.1", port, 1, True)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    try:
        recorder = Recorder(out / "steps.json", StepRecord(row_id=row.id, backend="nemo2"))
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=1,
            strategy=StandInStrategy(device=torch.device("cpu")),
            max_steps=spec.steps,
            # NeMo's recipes: TimingCallback first, the FLOPs callback after it
            callbacks=[
                TimingCallback(),
                flops_callback,
                ProgressPrinter(log_interval=1),
                PerfgateStepCallback(recorder, row.gbs, row.seq_len, 1),
            ],
            log_every_n_steps=1,
            logger=False,
            enable_checkpointing=False,
            enable_model_summary=False,  # the ProgressPrinter is the progress bar
        )
        trainer.fit(StandIn())
        recorder.update(status="completed")
    finally:
        torch.distributed.destroy_process_group()
    facts = {
        "flops_model_name": flops_callback.model,
        "flops_config": {k: v for k, v in vars(flops_callback.flops_config).items()},
        "flops_step_at_1s": flops_callback.eval_tflops_per_sec_per_gpu(1.0)[1],
    }
    (out / "nemo2_cpu.json").write_text(json.dumps(facts, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
