"""Timings of the book: each chapter in each run mode, and each chapter's fast kernels against their
naive references. Run ``python -m benchmarks --help``; results go to ``benchmarks/results.json``, which the
book's status page renders. Timing lives here, never in a timed test."""
