"""`numaguard compare`: canary against control, judged as automated canary analysis judges.

Pure: no I/O. `stats` is the judge (rank test, classification, score), `metrics` what is
measured and how it is asked of Prometheus, `selector` PromQL label matchers, `series` samples
from series (coverage, gaps, counters sampled directly from node agents), `comparison` the
whole judgement of one canary against its control. The Prometheus HTTP API client and the
agents' scraper are in `numaguard.lint.cluster`; the reports in `numaguard.lint.report`.
"""
