"""The benchmarks behind ``python -m mxpatch_bind bench`` (private; one module per benchmark)."""
