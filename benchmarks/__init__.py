"""The side-by-side benchmarks behind ``python -m benchmarks`` (run from a checkout; not shipped in the wheel)."""
