"""The conformance suite: real engines, forced rejection positions, token-by-token baselines."""
