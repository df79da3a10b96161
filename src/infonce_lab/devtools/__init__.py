"""Tools that edit the repository (not the study's math): dvc.lock pruning."""
