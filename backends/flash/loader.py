"""Where a flash profile comes from: :func:`load_profile` reads a built-in name, a ``.json``
profile or an MQSim ``ssdconfig.xml`` (:mod:`.mqsim_xml`) into a
:class:`~.profile.FlashProfile`.

It is a module of its own because it names both readers: the XML reader builds a
:class:`~.profile.FlashProfile`, so :mod:`.profile` cannot name it back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hss_gym.backends.flash.mqsim_xml import load_ssdconfig
from hss_gym.backends.flash.profile import (BUILTIN, PROFILE_DIR, FlashProfile, FlashProfileError,
                                            profile_from_dict)


def load_profile(spec: "str | os.PathLike[str] | FlashProfile", scale: float | None = None) -> FlashProfile:
    """A built-in profile name, a .json profile path or an MQSim ssdconfig.xml path (or a
    FlashProfile), optionally scaled (see :meth:`FlashProfile.scaled`)."""
    if isinstance(spec, FlashProfile):
        prof = spec
    elif isinstance(spec, str) and spec in BUILTIN:
        path = PROFILE_DIR / f"{spec}.json"
        prof = profile_from_dict(json.loads(path.read_text()), f"profile {spec!r} ({path})")
    else:
        path = Path(os.fspath(spec))
        if not path.is_file():
            raise FlashProfileError(f"no flash profile {os.fspath(spec)!r}: not a built-in name {list(BUILTIN)} "
                                    "nor an existing .json or ssdconfig .xml file")
        if path.suffix.lower() == ".xml":
            prof = load_ssdconfig(path)
        else:
            try:
                d = json.loads(path.read_text())
            except json.JSONDecodeError as e:
                raise FlashProfileError(f"{path}: line {e.lineno}: invalid JSON: {e.msg}") from None
            d.setdefault("name", path.stem)
            prof = profile_from_dict(d, str(path))
    return prof if scale is None else prof.scaled(scale)
