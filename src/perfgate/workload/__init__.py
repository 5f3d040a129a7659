"""What runs inside the container on every rank: build the training run from a row, run N
steps, and have rank 0 record them. Imports nothing the NeMo container lacks."""
