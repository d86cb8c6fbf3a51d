"""RLlib checkpoints (new API stack) read without Ray or PyTorch: the RLModule folders of a
checkpoint (:func:`module_dirs`) and one module's greedy policy network (:func:`load_rllib_module`).

A module's pickles are read with no global imported but NumPy's array constructors
(:class:`_ArraysOnly`) or none at all (:class:`_NamesOnly`), so reading a checkpoint runs none of
its code. Which module acts for which agent is :func:`hss_gym.agents.models.load_rllib`'s choice.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from hss_gym.agents.model_networks import NumpyMLP, linear_layers

#: where an RLlib Algorithm checkpoint (``algo.save_to_path(DIR)``) keeps its RLModules
RLLIB_MODULES = Path("learner_group") / "learner" / "rl_module"
#: RLlib's default modules (new API stack): the state-dict prefix of the MLP encoder the policy
#: reads (PPO, APPO, IMPALA: the actor's, or the one shared with the value function; DQN: its
#: encoder), and of the head that scores the actions (PPO...: ``pi``, logits; DQN: ``af``, the
#: advantages, whose argmax is the Q-values' also with a dueling value head)
RLLIB_ENCODERS = ("encoder.actor_encoder.net.mlp", "encoder.encoder.net.mlp", "encoder.net.mlp")
RLLIB_HEADS = ("pi.net.mlp", "af.net.mlp")
#: Ray's DefaultModelConfig values (Ray >= 2.40) for what a module's model_config leaves out
RLLIB_DEFAULTS = {"fcnet_activation": "tanh", "head_fcnet_activation": "relu"}
#: the globals a module's state file may name: NumPy arrays and their dtypes, nothing else
#: (pickle protocols 2-4 rebuild an array with ``_reconstruct``, protocol 5 with ``_frombuffer``)
_ARRAY_GLOBALS = {(f"numpy.{core}.{m}", n) for core in ("core", "_core")
                  for m, n in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))} | {
    ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict")}


class _ArraysOnly(pickle.Unpickler):
    """Unpickles a dict of NumPy arrays (an RLModule's ``module_state.pkl``: ``convert_to_numpy`` of its
    state_dict) and refuses any other global, so reading weights runs no code of the file's."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ARRAY_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it names {module}.{name}; a module state holds NumPy arrays only")


class _Named:
    """A global of a pickle, by name only: what :class:`_NamesOnly` builds instead of importing it.
    Calls and state are recorded, never run."""

    qualname = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.state = args, {}

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _NamesOnly(pickle.Unpickler):
    """Reads an RLModule's ``class_and_ctor_args.pkl`` (its class and its ``model_config``) without
    importing anything: every global becomes a :class:`_Named` subclass named after it."""

    def find_class(self, module: str, name: str) -> Any:
        return type(name, (_Named,), {"qualname": f"{module}.{name}"})


def _model_config(ctor: Any) -> dict[str, Any]:
    """The ``model_config`` of an RLModule's constructor arguments, as a dict (Ray's
    DefaultModelConfig dataclass is read from its recorded state)."""
    kwargs = ctor[1] if isinstance(ctor, tuple) and len(ctor) == 2 and isinstance(ctor[1], dict) else {}
    config = kwargs.get("model_config")
    if isinstance(config, _Named):
        config = config.state if isinstance(config.state, dict) else {}
    return dict(config) if isinstance(config, dict) else {}


def module_dirs(path: Path) -> dict[str, Path]:
    """The RLModule folders of an RLlib checkpoint, by module id: an Algorithm checkpoint (its
    learner's modules), a MultiRLModule's folder (one per module id) or one RLModule's folder."""
    root = path / RLLIB_MODULES if (path / RLLIB_MODULES).is_dir() else path
    inner = {d.name: d for d in sorted(root.iterdir()) if d.is_dir() and state_file(d) is not None}
    if inner:  # a MultiRLModule (also what an Algorithm keeps): a folder per module
        return inner
    return {root.name: root} if state_file(root) is not None else {}


def state_file(folder: Path) -> Path | None:
    """An RLModule folder's state file (``module_state.pkl``; ``.msgpack`` with ``use_msgpack``),
    or None when ``folder`` is no RLModule's (it needs ``class_and_ctor_args.pkl`` too)."""
    if not (folder / "class_and_ctor_args.pkl").is_file():
        return None
    return next((f for f in (folder / f"module_state.{ext}" for ext in ("pkl", "msgpack")) if f.is_file()), None)


def load_rllib_module(folder: Path) -> NumpyMLP:
    """The greedy policy network of one RLModule folder (``save_to_path``) of RLlib's default
    module layouts, in NumPy: its MLP encoder, then its action head (see :data:`RLLIB_ENCODERS`).
    Neither Ray nor PyTorch is imported: the weights are a pickle of NumPy arrays, read with only
    NumPy's globals allowed, and the activations are read from the constructor arguments'
    pickle by name, nothing imported (:class:`_NamesOnly`)."""
    where = f"RLlib module {folder}"
    state_path = state_file(folder)
    if state_path is None or state_path.suffix == ".msgpack":
        raise ValueError(f"{where}: no module_state.pkl (a msgpack checkpoint, use_msgpack=True, is not read: save "
                         f"it without msgpack, the default)")
    try:
        with open(state_path, "rb") as f:
            state = _ArraysOnly(f).load()
        with open(folder / "class_and_ctor_args.pkl", "rb") as f:
            meta = _NamesOnly(f).load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: not an RLModule checkpoint hss-gym can read: {e}") from None
    if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise ValueError(f"{where}: its state is not a dict of arrays (a torch RLModule's state)")
    cls = getattr(meta.get("class") if isinstance(meta, dict) else None, "qualname", "?")
    config = {**RLLIB_DEFAULTS, **_model_config(meta.get("ctor_args_and_kwargs") if isinstance(meta, dict) else None)}
    encoder = next((p for p in RLLIB_ENCODERS if f"{p}.0.weight" in state), None)
    head = next((p for p in RLLIB_HEADS if f"{p}.0.weight" in state), None)
    if encoder is None or head is None:
        raise ValueError(f"{where}: {cls} has no MLP encoder and action head of RLlib's default modules (PPO, APPO, "
                         f"IMPALA, DQN); weights found: {sorted(state)[:6]}...")
    if config.get("fcnet_use_layernorm") or config.get("head_fcnet_use_layernorm"):
        raise ValueError(f"{where}: layer normalisation (fcnet_use_layernorm) is not supported")
    if (config.get("num_atoms") or 1) > 1:
        raise ValueError(f"{where}: a distributional Q-network (num_atoms={config['num_atoms']}) is not supported")
    enc, hd = linear_layers(state, encoder), linear_layers(state, head)
    acts = [str(config["fcnet_activation"]).lower()] * len(enc) + [str(config["head_fcnet_activation"]).lower()] * (len(hd) - 1)
    return NumpyMLP(enc + hd, [{"swish": "silu", "linear": "identity"}.get(a, a) for a in acts])
