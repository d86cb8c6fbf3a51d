"""Reference agents and baselines (Harmonia, Sibyl, CDE, ...). Installed as ``hss_gym.agents``."""
