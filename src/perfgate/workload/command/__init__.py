"""Backend "command": any command on every rank; rank 0's log becomes the steps.

job (the run in the container).
"""
