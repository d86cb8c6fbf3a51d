"""L-QoCo's environment (:mod:`hss_gym.lqoco_v0`, ``hss/LQoCo-v0``) in :mod:`.env`, its Table 4
workloads in :mod:`.workloads`."""
