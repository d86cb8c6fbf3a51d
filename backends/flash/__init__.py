"""The flash SSD model shared by FleetIO and RLAlloc (SPEC section 10): SSD internals at the
flash-transaction level (channels, chips, dies, planes; page-level FTL with per-stream write
allocation over (channel, chip) units in MQSim's CWDP order; greedy GC; per-chip priority queues),
simulated by a C core (``hss_gym.backends._flash``) and driven in windows from Python::

    from hss_gym.backends.flash import load_profile, FlashSSD
    ssd = FlashSSD(load_profile("rlalloc", scale=1/64), n_streams=4, queue_depth=16, precondition=0.7)
    ssd.set_units(0, [0, 1, 2, 3])
    ssd.submit(time_us, stream, offset, size, is_write)
    ws = ssd.run_until(10_000.0)          # WindowStats of (0, 10 ms]

Profiles: ``mqsim-default``, ``rlalloc``, ``fleetio`` (profiles/*.json), any .json file, or an MQSim
ssdconfig.xml. Validation against MQSim and the modelling choices: docs/flash-model.md.
"""

from hss_gym.backends.flash.loader import load_profile
from hss_gym.backends.flash.profile import BUILTIN, FlashProfile, FlashProfileError
from hss_gym.backends.flash.ssd import FlashSSD, WindowStats
from hss_gym.backends.flash.traces import stream_map, submit_trace

__all__ = ["BUILTIN", "FlashProfile", "FlashProfileError", "FlashSSD", "WindowStats", "load_profile",
           "stream_map", "submit_trace"]
