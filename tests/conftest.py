"""Shared fixtures. Real traces live in ../shared/traces (never copied into the repository);
tests that need them skip with a clear message when that folder is absent (e.g. a user's clone)."""
from __future__ import annotations

from pathlib import Path

import pytest

SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """Path of ../shared/traces; skips the test when it is not there."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real sample traces not found at {SHARED_TRACES} "
                    "(they ship with the development workspace, not with the repository)")
    return SHARED_TRACES


@pytest.fixture(autouse=True, scope="session")
def _real_backend_state_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Records of real-backend files (hss_gym.backends.leftovers) in a temporary directory, not in
    the user's ~/.local/state."""
    import os
    os.environ.setdefault("HSS_GYM_STATE_DIR", str(tmp_path_factory.mktemp("hss-gym-state")))
