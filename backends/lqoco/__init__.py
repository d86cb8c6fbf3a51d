"""L-QoCo's cache tier and storage tier (SPEC section 13): the batched simulator behind
``hss/LQoCo-v0`` (:mod:`.model`, per-slot queues in C: ``lqoco_sim.c``, module
``hss_gym.backends._lqoco``)."""
