"""PettingZoo-style entry point of FleetIO (``hss/FleetIO-v0``), as ``pettingzoo.butterfly.pistonball_v6``:

    from hss_gym import fleetio_v0
    env = fleetio_v0.parallel_env(mix="mix4")

See :mod:`hss_gym.envs.fleetio` for the spaces, rewards and arguments.
"""

from hss_gym.envs.fleetio import FleetIOEnv, parallel_env

__all__ = ["FleetIOEnv", "parallel_env"]
