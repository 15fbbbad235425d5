"""MoESys / SE-MoE (arXiv 2205.10034): ring-memory inference and elastic expert-parallel training (mechanisms)."""
