"""Tuning: K sweeps, the best K per pair, plain-decode baselines and A/B comparisons (no Qt)."""
