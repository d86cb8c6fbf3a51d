"""The contract every hss-gym environment keeps under misuse.

* ``step()`` before ``reset()`` and after the episode ended (terminated or truncated) raises
  :class:`EpisodeStateError` (a ``RuntimeError``) saying which, and that ``reset()`` is needed.
* Actions are checked against the action space: type (an int, a NumPy integer or a 0-d integer
  array for ``Discrete``; an integer array of the right shape for ``MultiDiscrete``) and range.
  Nothing is cast silently: ``"0"``, ``1.5``, ``True`` or a float array are refused with a
  ``TypeError``; an out-of-range value with a ``ValueError``.
* Multi-agent action dicts must have exactly the episode's agents as keys; extra and missing keys
  are named (:class:`ActionKeysError`, both a ``KeyError`` and a ``ValueError``).
* Every numeric option is a finite number in its range, named in the error
  (:func:`check_real`, :func:`check_int`, :func:`check_reals`).
* Environments support ``copy.deepcopy`` and ``pickle`` (:class:`ReplayCopy`).

These helpers are shared by ``hss/Harmonia-v0`` (and its single-agent views), ``hss/FleetIO-v1``,
``hss/RLAlloc-v0`` and ``hss/LQoCo-v0`` so that the four problems fail the same way.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable

import numpy as np


class EpisodeStateError(RuntimeError):
    """``step()`` called before ``reset()`` or after the episode ended."""


class ActionKeysError(KeyError, ValueError):
    """A multi-agent action dict whose keys are not exactly the episode's agents."""

    def __str__(self) -> str:  # KeyError would print the message quoted, as a repr
        return str(self.args[0]) if self.args else ""


def not_reset(env_name: str) -> EpisodeStateError:
    """The error for ``step()`` before the first ``reset()``."""
    return EpisodeStateError(f"{env_name}: step() called before reset(); call reset() first")


def env_closed(env_name: str) -> EpisodeStateError:
    """The error for ``step()`` after ``close()`` (not "the episode ended": the env let go of its
    simulator and files)."""
    return EpisodeStateError(f"{env_name}: step() called after close(): the env is closed; call reset() "
                             f"to start a new episode")


def episode_over(env_name: str) -> EpisodeStateError:
    """The error for ``step()`` after the episode ended."""
    return EpisodeStateError(f"{env_name}: step() called after the episode ended (truncated or terminated); "
                             f"call reset() to start a new episode")


def _plain(v: Any) -> Any:
    """A NumPy scalar as the Python value it holds, for error texts."""
    return v.item() if isinstance(v, np.generic) else v


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{'(' if low_open or low is None else '['}{lo}, {hi}{')' if high_open or high is None else ']'}"


def check_real(name: str, v: Any, low: float | None = None, high: float | None = None, *,
               low_open: bool = False, high_open: bool = False, allow_inf: bool = False) -> float:
    """``v`` as a float if it is a real number (not a bool or a string), finite (unless
    ``allow_inf``; NaN never) and within [low, high] (open ends with ``low_open``/``high_open``);
    otherwise a ``ValueError`` naming ``name``, the valid range and the value."""
    where = _interval(low, high, low_open, high_open)
    if not _is_real(v):
        raise ValueError(f"{name} must be a finite number in {where}, got {_plain(v)!r} "
                         f"({type(v).__name__})")
    f = float(v)
    if math.isnan(f) or (math.isinf(f) and not allow_inf):
        raise ValueError(f"{name} must be a finite number in {where}, got {f!r}")
    if (low is not None and (f < low or (low_open and f == low))) or \
            (high is not None and (f > high or (high_open and f == high))):
        raise ValueError(f"{name} must be {'a number' if allow_inf else 'a finite number'} in {where}, "
                         f"got {_plain(v)!r}")
    return f


def check_int(name: str, v: Any, low: int | None = None, high: int | None = None) -> int:
    """``v`` as an int if it is an int or NumPy integer (not a bool, a float or a string) within
    [low, high]; otherwise a ``ValueError`` naming ``name``."""
    where = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in {where}, got {_plain(v)!r} ({type(v).__name__})")
    i = int(v)
    if (low is not None and i < low) or (high is not None and i > high):
        raise ValueError(f"{name} must be an integer in {where}, got {i}")
    return i


def check_reals(name: str, values: Any, n: int | None = None, **bounds: Any) -> tuple[float, ...]:
    """A sequence of ``n`` (any number if None) real numbers, each checked by :func:`check_real`
    (``bounds``: its keyword arguments); the error names the element, e.g. ``weights[1]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a sequence of {n if n is not None else ''} numbers, got {values!r}".replace("  ", " "))
    if n is not None and len(values) != n:
        raise ValueError(f"{name} must have {n} numbers, got {len(values)}: {list(map(_plain, values))!r}")
    return tuple(check_real(f"{name}[{i}]", x, **bounds) for i, x in enumerate(values))


def check_discrete_action(action: Any, n: int, who: str = "action") -> int:
    """``action`` of a ``Discrete(n)`` space as an int: an int, a NumPy integer or a 0-d integer
    array in [0, n). A bool, float, string or anything else: ``TypeError``; out of range:
    ``ValueError``."""
    a = action
    if isinstance(a, np.ndarray) and a.shape == ():
        a = a[()]
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
        raise TypeError(f"{who} must be an int in [0, {n}) (Discrete({n})), got {_plain(action)!r} "
                        f"({type(action).__name__}); no conversion is made")
    if not 0 <= a < n:
        raise ValueError(f"{who} must be an int in [0, {n}) (Discrete({n})), got {int(a)}")
    return int(a)


def check_multidiscrete_action(action: Any, nvec: Sequence[int], who: str = "action") -> np.ndarray:
    """``action`` of a ``MultiDiscrete(nvec)`` space as an int64 array: a sequence or array of
    ``len(nvec)`` integers (Python or NumPy ints; no floats, bools or strings), each in
    [0, nvec[i]). Wrong type: ``TypeError``; wrong shape or out of range: ``ValueError``."""
    nv = np.asarray(nvec, dtype=np.int64)
    if isinstance(action, np.ndarray):
        arr = action
    elif hasattr(action, "__array__") and not isinstance(action, np.generic):  # e.g. a torch tensor
        arr = np.asarray(action)
    elif isinstance(action, (list, tuple)):
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in action):
            raise TypeError(f"{who} must be {len(nv)} integers for MultiDiscrete({nv.tolist()}), got {action!r}; "
                            f"no conversion is made")
        arr = np.asarray(action, dtype=np.int64)
    else:
        raise TypeError(f"{who} must be an integer array of shape ({len(nv)},) for MultiDiscrete({nv.tolist()}), "
                        f"got {_plain(action)!r} ({type(action).__name__})")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{who} must be an integer array for MultiDiscrete({nv.tolist()}), got dtype {arr.dtype} "
                        f"({arr.tolist()!r}); no conversion is made")
    if arr.shape != nv.shape:
        raise ValueError(f"{who} must have shape {nv.shape} for MultiDiscrete({nv.tolist()}), got shape "
                         f"{arr.shape}")
    if ((arr < 0) | (arr >= nv)).any():
        raise ValueError(f"{who} must have each entry i in [0, nvec[i]) with nvec={nv.tolist()}, got {arr.tolist()}")
    return arr.astype(np.int64)


def check_agent_keys(actions: Any, agents: Sequence[str]) -> None:
    """``actions`` must be a dict with exactly the keys ``agents``; the error names the extra and
    the missing ones."""
    if not isinstance(actions, Mapping):
        raise TypeError(f"actions must be a dict keyed by agent ({list(agents)}), got {type(actions).__name__}")
    if len(actions) == len(agents) and all(a in actions for a in agents):
        return
    extra = sorted(map(str, set(actions) - set(agents)))
    missing = [a for a in agents if a not in actions]
    parts = ([f"unknown agent(s) {extra}"] if extra else []) + ([f"missing agent(s) {missing}"] if missing else [])
    raise ActionKeysError(f"actions must have exactly the keys {list(agents)}: {'; '.join(parts)}")


# ---------------------------------------------------------------------------------------------
# deepcopy and pickle by replay

def _rebuild(cls: type, args: tuple, kwargs: dict[str, Any], pre: dict[str, Any] | None,
             log: list[tuple[str, tuple, dict[str, Any]]], extra: dict[str, Any], fingerprint: Any) -> Any:
    """Re-create an environment from its constructor arguments and replay its episode; check
    that the replay reached the original's state (``fingerprint``)."""
    env = cls(*args, **kwargs)
    if pre is not None:
        env._replay_restore(pre)
    for name, call_args, call_kwargs in log:
        getattr(env, name)(*call_args, **call_kwargs)
    env.__dict__.update(extra)
    if fingerprint is not None and env._replay_fingerprint() != fingerprint:
        raise RuntimeError(f"{cls.__name__}: the copy replayed the original's calls but did not reach its state; "
                           f"the original was changed outside its recorded calls (e.g. through env.hss), so it "
                           f"cannot be copied or pickled")
    return env


class ReplayCopy:
    """``copy.deepcopy`` and ``pickle`` support by **re-creation and replay**.

    The native cores (the HSS core of ``backends/core``, the flash SSD model of
    ``backends/flash`` and the L-QoCo simulator) keep their state in C structures full of
    pointers (page-table chunks, LRU rings, block maps, event queues); exporting them would be a
    second serialisation format to keep in step with every change to the models. Every env is
    deterministic given its constructor arguments, the state of its random generator before
    ``reset`` and its actions, so a copy is made by constructing a new env with the same
    arguments, restoring that generator state, calling ``reset`` as the original did and
    replaying the calls that changed the episode (``step``, and the env's other mutating calls:
    ``step_rate``, ``set_allocation``, ``fast_step``). The copy is exact (bit for bit: the same
    code runs on the same inputs) and independent of the original. It costs the steps replayed,
    O(steps since the last reset) (about as long as the original took to get there), and the log
    holds one small record per step. :meth:`_replay_fingerprint` (e.g. the core's counters) is
    compared after the replay: a copy that would silently differ raises instead.

    A subclass lists in ``_replay_pre`` the attributes that decide the next ``reset`` (random
    generators, persistent reset options); it calls :meth:`_replay_reset` at the start of its
    ``reset`` (before anything changes) and :meth:`_replay_log` for each mutating call once its
    arguments are checked. ``_replay_extra`` names attributes set from outside that a copy keeps
    (e.g. Gymnasium's ``spec``).
    """

    _replay_pre: tuple[str, ...] = ()
    _replay_extra: tuple[str, ...] = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if "_replay_args" not in self.__dict__:  # the outermost constructor's arguments
                self.__dict__["_replay_args"] = (args, kwargs)
                self.__dict__["_replay_calls"] = []
                self.__dict__["_replay_before"] = None
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]

    def _replay_reset(self, **kwargs: Any) -> None:
        """Record the state a ``reset(**kwargs)`` starts from; call it before the reset changes
        anything."""
        self._replay_before = self._replay_snapshot()
        self._replay_calls = [("reset", (), copy.deepcopy(kwargs))]

    def _replay_snapshot(self) -> dict[str, Any]:
        """Copies of the ``_replay_pre`` attributes (a subclass may skip copying immutable ones)."""
        if "_np_random" in self._replay_pre and getattr(self, "_np_random", None) is None:
            # Gymnasium creates an unseeded generator on first use: create it now, so that the
            # copy replays reset(seed=None) with the same generator as the original
            self.np_random  # noqa: B018
        return {k: copy.deepcopy(getattr(self, k, None)) for k in self._replay_pre}

    def _replay_log(self, name: str, *args: Any) -> None:
        """Record a call ``self.name(*args)`` that changed the episode (arguments already checked,
        and not mutated later: pass copies of mutable ones)."""
        self._replay_calls.append((name, args, {}))

    def _replay_restore(self, pre: dict[str, Any]) -> None:
        """Set the attributes recorded by :meth:`_replay_snapshot` (already private copies)."""
        for k, v in pre.items():
            setattr(self, k, v)

    def _replay_tail(self) -> list[tuple[str, tuple, dict[str, Any]]]:
        """Calls to replay after the logged ones (a subclass keeping a compact log of its own)."""
        return []

    def _replay_kwargs(self) -> dict[str, Any]:
        """Constructor keyword overrides for the copy (e.g. a profiled value, to skip profiling)."""
        return {}

    def _replay_check(self) -> None:
        """Raise ``TypeError`` when this env cannot be copied (e.g. it drives real devices)."""

    def _replay_fingerprint(self) -> Any:
        """A picklable summary of the state (None: not checked), compared after a replay."""
        return None

    def __reduce__(self) -> tuple[Callable[..., Any], tuple]:
        self._replay_check()
        args, kwargs = self._replay_args
        kwargs = {**kwargs, **self._replay_kwargs()}
        extra = {k: self.__dict__[k] for k in self._replay_extra if k in self.__dict__}
        # never reset: the copy starts from the state the next reset would start from
        pre = self._replay_before if self._replay_calls else self._replay_snapshot()
        return (_rebuild, (type(self), args, kwargs, pre,
                           list(self._replay_calls) + self._replay_tail(), extra,
                           self._replay_fingerprint()))

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        fn, state = self.__reduce__()
        env = fn(*copy.deepcopy(state, memo))
        memo[id(self)] = env
        return env
