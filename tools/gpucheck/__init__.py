"""scripts/gpu-check's modules: perfgate's measurement chain checked on one GPU (or on CPU).

prepare   the carried wheels, the interpreter, torch and the GPU (standard library)
runs      which row, the product path (pytest), direct launches, their files read back
measure   the child process: GEMM peak, FlopCounterMode on one step, B's cost
stages    the stages in order, within the budget
cpustages --cpu: after the product run, one runner launch for the other runs
runner    --cpu: several runs in one process per rank (torch and Megatron-Core load once)
checks    the chain against the independent measurements, each with its tolerance
pairs     A/A and A/B pairs through the A/B gate's rule, and their noise
report    gpu-check.json, the text summary, the README section
"""
