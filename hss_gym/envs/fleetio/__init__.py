"""FleetIO's environment (:mod:`hss_gym.fleetio_v1`): the multi-vSSD PettingZoo env (:mod:`.env`),
its ghost superblocks and admission control (:mod:`.gsb`), its SSD, the flash model driven
with one stream per vSSD (:mod:`.flash`), its tenants and Table 5 mixes (:mod:`.workloads`) and
the §3.4 workload classes (``clusters.json``, written by :mod:`.cluster`)."""
