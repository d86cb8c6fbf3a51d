"""Storage backends behind the HSS core: the simulated device model (default) and, later, the
io_uring backend for real files and block devices. Installed as ``hss_gym.backends``."""
from hss_gym.backends.base import Backend
from hss_gym.backends.sim import DeviceProfile, SimBackend, builtin_profiles, load_profile

__all__ = ["Backend", "DeviceProfile", "SimBackend", "builtin_profiles", "load_profile"]
