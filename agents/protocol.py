"""The policy protocol every problem shares: :class:`BasePolicy` (``reset``, ``act``,
``observe``), the HSS policy class :class:`Policy` and its helpers, and the trained models'
formats. :mod:`hss_gym.agents.base` (the registry and the episode loops) and
:mod:`hss_gym.agents.models` (trained models as policies) both build on it; ``hss_gym.agents.base``
re-exports every name here."""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np

from hss_gym.envs.hss.env import AGENTS, HSSParallelEnv

Obs = dict[str, np.ndarray]
Infos = dict[str, dict[str, Any]]


#: The protocol's methods and the arguments the episode loops pass them, by position.
PROTOCOL: dict[str, tuple[str, ...]] = {"reset": ("env", "seed"), "act": ("observations", "infos"),
                                        "observe": ("observations", "rewards", "infos")}


class BasePolicy:
    """The base of every problem's policy class: the ``reset``/``act``/``observe`` protocol of the
    module docstring, with ``name`` (results files report it) and ``learns``."""

    #: registry name (also used in results files)
    name: ClassVar[str] = "policy"
    #: True if the policy learns from rewards (the loops call ``observe`` only then)
    learns: ClassVar[bool] = False
    #: the training set the policy declares (recorded with its runs as ``trained_on``, shown by the
    #: report): None, not declared; ``"none"``, nothing outside the episode it plays; ``"train"``,
    #: the package's training split (:mod:`hss_gym.workloads.training`); else a description
    #: (``"train-* seeds 1000-1999"``, ``"MSR src1_0, hm_0"``). ``hss-gym bench --trained-on``
    #: declares it for the ``--policies`` instead.
    trained_on: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass whose ``reset``, ``act`` or ``observe`` the loops cannot call."""
        super().__init_subclass__(**kwargs)
        for method, args in PROTOCOL.items():
            func = cls.__dict__.get(method)
            if not inspect.isfunction(func):
                continue
            sig = inspect.signature(func)
            try:
                sig.bind(cls, *args)
            except TypeError:
                raise TypeError(
                    f"{cls.__module__}.{cls.__qualname__}.{method}{sig} cannot be called as "
                    f"{method}({', '.join(args)}): every policy follows the protocol of "
                    f"hss_gym.agents.base.BasePolicy (FleetIO's act(obs) is now act(observations, "
                    f"infos); RLAlloc's observe(obs, action, reward, next_obs, done) is now "
                    f"observe(observations, rewards, infos), the previous observation and action "
                    f"kept by the policy from its act)") from None

    def reset(self, env: Any, seed: int | None = None) -> None:
        """A new episode of ``env`` starts (after ``env.reset(seed=seed)``); ``seed`` drives the
        policy's own randomness for it. Learned state persists by default."""
        self.env = env

    def act(self, observations: Any, infos: Any) -> Any:
        """The actions for the env's latest ``observations`` and ``infos``."""
        raise NotImplementedError

    def observe(self, observations: Any, rewards: Any, infos: Any) -> None:
        """The outcome of the last ``act``: next observations, rewards and infos (called when
        :attr:`learns`)."""


class Policy(BasePolicy):
    """Base class of every HSS policy; see the module docstring."""

    #: the agents this policy acts for
    agents: ClassVar[tuple[str, ...]] = tuple(AGENTS)
    #: environment options the policy needs (merged into the env's keyword arguments)
    env_options: ClassVar[dict[str, Any]] = {}

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        """Called after ``env.reset``: a new episode starts. Learned state persists by default."""
        self.env = env

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        """Actions for the agents in :attr:`agents` (ignored for agents not ``acting``)."""
        raise NotImplementedError

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        """The outcome of the last ``act``: next observations, rewards and infos."""

    def run_fast(self, env: HSSParallelEnv, observations: Obs, infos: Infos,
                 callback: Callable[[int], None] | None = None) -> int | None:
        """Optional: run the rest of the episode (after ``env.reset`` and :meth:`reset`, from
        their ``observations`` and ``infos``) in the policy's own loop, on
        :meth:`HSSParallelEnv.fast_step`, exactly as :func:`run_hss_episode`'s ``act``/``step``/
        ``observe`` loop would; return the number of steps. ``None`` (the default): no such loop."""
        return None

    def close(self) -> None:
        """Release resources."""


def overridden(obj: object, base: type, names: tuple[str, ...]) -> bool:
    """Whether ``obj``'s class replaces any of ``base``'s methods ``names`` (a fast loop that
    reproduces them must then not run)."""
    return any(getattr(type(obj), n) is not getattr(base, n) for n in names)


def stay_action(infos: Infos) -> int:
    """The migration action that moves nothing: the candidate's current device."""
    d = infos["migration"].get("device", -1)
    return d if d >= 0 else 0


#: The trained models' formats make_policy reads, as a spec's prefix (``"sb3:ppo.zip"``,
#: ``"torch:agent.pt"``, ``"rllib:CHECKPOINT_DIR"``): hss_gym.agents.models.
MODEL_FORMATS = ("sb3", "torch", "rllib")
