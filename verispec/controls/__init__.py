"""Negative controls: the catalog of planted bugs, the runner that shows each one caught."""
