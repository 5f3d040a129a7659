"""scripts/gpu-check's package: perfgate's measurement chain checked on one GPU (or on CPU).

Not part of the installed product: it runs the product (pytest --executor local) as a user
does and checks its figures. docs/gpu-check.md explains the checks and the budget.

wheels    the wheel sets carried to a GPU machine, fetched, checked, installed (standard library)
prepare   the interpreter, torch and the GPU (standard library)
runs      which row, the product path (pytest), direct launches, their files read back
follow    the parent's clock: when each of rank 0's step lines appeared in its log
measure   the child process: GEMM peak, FlopCounterMode on one step, B's cost, clock loops
nemo2     --nemo2: the NeMo 2 row (GPU: product path; CPU: to its CUDA boundary, callbacks)
nemo2_cpu --nemo2 --cpu: NeMo's own callbacks on a Lightning trainer with a stand-in model
stages    the stages in order, within the budget; a stage that raises leaves its reason
cpustages --cpu: after the product run, one runner launch for the other runs
runner    --cpu: several runs in one process per rank (torch and Megatron-Core load once)
checks    the chain against the independent measurements, each with its tolerance
controls  negative controls: each check fed a known fault must fail
pairs     A/A and A/B pairs through the A/B gate's rule, and their noise
verdict   overall: every required check ran and passed; what a CPU proves only the plumbing of
report    gpu-check.json, the text summary, the README section
"""
