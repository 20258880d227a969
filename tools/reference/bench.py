"""Times the reference compile on the benchmark's cases: reads a JSON list of cases on stdin, prints a
JSON list of median milliseconds per compile."""

import json
import statistics
import sys
import time

from driver import compile_case  # noqa: E402  (sets up the reference quietly)


def median_ms(case, budget_s=0.3, min_runs=3, max_runs=200):
    samples = []
    started = time.perf_counter()
    while len(samples) < min_runs or (time.perf_counter() - started < budget_s and len(samples) < max_runs):
        t0 = time.perf_counter()
        outcome = compile_case(case)
        samples.append((time.perf_counter() - t0) * 1000)
        if "error" in outcome:
            raise SystemExit(f"reference failed on a benchmark case: {outcome['error']}")
    return statistics.median(samples)


def main():
    cases = json.load(sys.stdin)
    print(json.dumps([median_ms(case) for case in cases]))


if __name__ == "__main__":
    main()
