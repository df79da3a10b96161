"""The training loop and what it needs: batch sources, optimizers, resume state, runtime."""
