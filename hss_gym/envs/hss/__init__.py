"""The HSS problem's environments (:mod:`hss_gym.hss_v0`): the two-agent PettingZoo env
(:mod:`.env`), its observation features (:mod:`.features`), the single-agent Gymnasium views
``hss/Placement-v0`` and ``hss/Migration-v0`` (:mod:`.single`), the native vector envs
(:mod:`.vector`) and Stable-Baselines3's ``VecEnv`` over them (:mod:`.sb3`, the ``sb3`` extra)."""
