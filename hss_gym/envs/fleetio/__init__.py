"""FleetIO's environment (:mod:`hss_gym.fleetio_v1`): the multi-vSSD PettingZoo env (:mod:`.env`),
its ghost superblocks and admission control (:mod:`.gsb`) and its SSD, the flash model driven
with one stream per vSSD (:mod:`.flash`)."""
