"""Engines under conformance testing: the protocol, built-in engines and tiny models."""
