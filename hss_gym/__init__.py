"""hss-gym: reinforcement-learning environments for hybrid storage systems."""
__version__ = "0.1.0"
