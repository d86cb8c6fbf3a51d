"""RLAlloc's environment (:mod:`hss_gym.rlalloc_v0`, ``hss/RLAlloc-v0``) in :mod:`.env`, its Table I
I/O streams in :mod:`.workloads`."""
