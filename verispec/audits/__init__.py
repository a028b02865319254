"""Black-box audits of third-party chain and tree verifiers (see :mod:`verispec.audits.runner`)."""
