"""The hss-gym leaderboard harness (``hss_gym.benchmarks``; the repository's ``benchmarks/``).

* :mod:`~hss_gym.benchmarks.problems` — the registry of problems (HSS, FleetIO, RLAlloc,
  L-QoCo, ...): what a job runs, its metrics, references and the papers' claims; one module each;
* :mod:`~hss_gym.benchmarks.suites` — suite definitions (JSON data in ``suites/``): ``quick``,
  ``hss-bench-v1``, ``real``; loading, validation, command-line overrides;
* :mod:`~hss_gym.benchmarks.runner` — jobs (one fresh policy + one episode each), run in a local
  process pool or on Ray;
* :mod:`~hss_gym.benchmarks.results` — the results file: one atomic JSON line per run, with
  provenance; resume;
* :mod:`~hss_gym.benchmarks.report` — Markdown leaderboard and self-contained HTML page with
  figures, 95% confidence intervals (:mod:`~hss_gym.benchmarks.stats`) and the papers'
  published numbers beside ours with an agree/disagree mark;
* :mod:`~hss_gym.benchmarks.report_model` — the report's data model: a track's runs and each
  policy's numbers over them, read by the report and by the claims;
* :mod:`~hss_gym.benchmarks.claims` — the papers' claims, one data format for every problem
  (``published/<problem>.json``) and the one evaluator that judges them;
* :mod:`~hss_gym.benchmarks.validate` — replay validation of a results file.
* :mod:`~hss_gym.benchmarks.flash_validation` — the flash SSD model (``hss_gym.backends.flash``)
  against MQSim on the same workloads (``python -m hss_gym.benchmarks.flash_validation``).

The command line is ``hss-gym bench | report | validate | list`` (:mod:`hss_gym.cli`); how to
submit a policy is in ``benchmarks/SUBMISSION.md``. ``benchmarks/perf/`` holds performance
scripts that are not part of the package.
"""
