"""Skips for tests of what the core install (``pip install hss-gym``: NumPy, Gymnasium, PettingZoo,
the C extensions) does not have: PyTorch, scikit-learn and matplotlib come with the ``agents``
extra. A skipped test says which extra it needs, the way ``make_policy`` does."""

from __future__ import annotations

import importlib.util

import pytest

from hss_gym.agents.base import EXTRAS, load_factory, missing_extra, make_policy


def requires(*modules: str) -> pytest.MarkDecorator:
    """Skip unless every module is importable (``requires("torch")``)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    extras = sorted({EXTRAS.get(m, m) for m in missing})
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}: pip install "
                              f"'hss-gym[{','.join(extras)}]'")


def policy_param(name: str) -> object:
    """``name`` as a test parameter, skipped (with make_policy's reason) when its module cannot be
    imported on this install (or it needs an extra that is missing: ``NEEDS``, e.g. a combination
    whose parts import theirs when made). Another problem's policy (``"rlalloc/rlalloc_dqn"``) is
    made to find out: its problem's ``make_policy`` imports the module."""
    why = missing_extra(name)
    if why is not None:
        return pytest.param(name, marks=pytest.mark.skip(reason=f"policy {name!r} {why}"))
    try:
        if "/" in name:
            make_policy(name)
        else:
            load_factory(name)
    except ValueError as e:
        return pytest.param(name, marks=pytest.mark.skip(reason=str(e)))
    return name
