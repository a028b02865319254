"""Statistics with declared error rates: constants, planning, goodness-of-fit tests."""
