"""Trained models as HSS policies: ``make_policy("sb3:PATH.zip")``, ``make_policy("torch:PATH.pt")`` and
``make_policy("rllib:CHECKPOINT_DIR")``.

A researcher who trained a network on one of the package's envs puts it on a leaderboard with
``hss-gym bench --policies sb3:ppo.zip`` (or ``torch:agent.pt``): this module reads the model, finds
the env options that reproduce the spaces it was trained on, and plays its greedy action (what
``model.predict(obs, deterministic=True)`` answers) in the two-agent env the leaderboard runs.

Why NumPy: a per-step ``model.predict`` is mostly PyTorch's per-call overhead, for networks of a
few thousand weights; the weights are copied into NumPy and the forward runs there, once per
distinct observation (the HSS observations are binned features, so an episode sees few distinct
ones, and the argmax of a fixed network is memoised exactly). Speed and the action agreement with
``model.predict`` are measured in ``benchmarks/perf/bench_model_policy.py`` and docs/agents.md.

Why no unpickling: an SB3 ``.zip`` is read as its ``data`` JSON (spaces, ``policy_kwargs``) and its
``policy.pth`` with ``torch.load(weights_only=True)``, so loading a model runs none of its code and
``hss-gym validate`` may re-run such runs freely. A TorchScript module is code: ``validate`` runs it
only with ``--allow torch``. An RLlib checkpoint's pickles are read with no global imported but
NumPy's array constructors (:mod:`hss_gym.agents.rllib_models`): neither Ray nor PyTorch.

Which env: the *model card*, a JSON file beside the model (``PATH + ".json"``, written by
:func:`save_model_card`), names the env id and the options that shape the observation; without
one, Sibyl's six features (``Box(0, 1, (6,))`` or their raw bins) mean ``hss/Placement-v0``, the
only space that identifies its env (Harmonia's features are the same for ``hss/Migration-v0`` and
for a placement agent with ``features="harmonia"``: those need the card). The contract of each
format is in docs/agents.md ("Your trained model on the leaderboard").

The other problems: a model of ``hss/RLAlloc-v0`` or ``hss/LQoCo-v0`` (:data:`PROBLEM_ENVS`) is read
the same way by :func:`load_problem_model` and played by :class:`ProblemModel`, which those
problems' ``make_policy`` wrap (``"rlalloc/sb3:PATH.zip"``, ``"lqoco/sb3:PATH.zip"``; bare
``"sb3:PATH.zip"`` in their suites); an HSS spec of such a model is refused, naming its problem.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hss_gym.agents.protocol import MODEL_FORMATS, Policy, stay_action
# the networks and RLlib's checkpoint reading live in their own modules; their public names stay
# importable from here
from hss_gym.agents.model_networks import ACTIVATIONS, Greedy, NumpyMLP, ScriptedModule, linear_layers
from hss_gym.agents.rllib_models import RLLIB_DEFAULTS as RLLIB_DEFAULTS
from hss_gym.agents.rllib_models import RLLIB_ENCODERS as RLLIB_ENCODERS
from hss_gym.agents.rllib_models import RLLIB_HEADS as RLLIB_HEADS
from hss_gym.agents.rllib_models import RLLIB_MODULES, load_rllib_module, module_dirs, state_file
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.hss.features import feature_bins
from hss_gym.envs.hss.single import SingleAgentEnv
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv

CARD_FORMAT = "hss-gym-model-card/1"
#: the envs of the problems other than HSS a model may be trained on: the problem whose
#: ``make_policy`` plays it (``"rlalloc/sb3:PATH"``) and the env options its card records (those
#: that change what the policy observes or what its actions mean)
PROBLEM_ENVS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hss/RLAlloc-v0": ("rlalloc", ("action_mode", "demand_periods")),
    "hss/LQoCo-v0": ("lqoco", ("observation", "magnitudes", "w_bins", "p_tol", "b_band", "bdp_window")),
}
#: env ids a card may name: the single-agent envs, the two-agent env (``hss_v0.parallel_env``) and
#: the other problems' envs (:data:`PROBLEM_ENVS`)
ENV_IDS = ("hss/Placement-v0", "hss/Migration-v0", "hss_v0", *PROBLEM_ENVS)
#: env options a card records: those that change what the policy observes or who acts
CARD_OPTIONS = ("features", "raw_bins", "room_feature", "migration")
PLACEMENT_POLICIES = {"fast": 0, "slow": -1}

#: CleanRL's layouts: the state_dict prefix of the policy network and its activation
CLEANRL_PREFIXES = {"actor": "tanh", "network": "relu"}


def model_format(spec: Any) -> str | None:
    """The model format of a policy spec (``"sb3"`` for ``"sb3:ppo.zip"``), or None."""
    if not isinstance(spec, str):
        return None
    fmt, sep, _ = spec.partition(":")
    return fmt if sep and fmt in MODEL_FORMATS else None


def card_path(path: str | Path) -> Path:
    """Where the model card of the model file ``path`` lies: ``PATH.json`` (``ppo.zip.json``)."""
    return Path(f"{path}.json")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------------------------ the policy
@dataclass
class Card:
    """What a model card says: the env id, its observation options, the Migration-v0 placement
    policy, and for a PyTorch state_dict the network of each agent (prefix, activation)."""

    env_id: str
    env_options: dict[str, Any]
    placement_policy: str = "fast"
    networks: dict[str, dict[str, str]] | None = None


class ModelPolicy(Policy):
    """A trained network playing greedily in the two-agent env; made by :func:`load_model_policy`.

    ``nets`` maps each agent the model acts for to its scoring function. For ``hss/Placement-v0``
    the placement agent acts and the migration agent is off (``migration=False``), as in that env;
    for ``hss/Migration-v0`` placement follows the card's ``placement_policy`` (``fast``: device
    0; ``slow``: the last device), as in that env. An agent that is not acting gets the action the
    env ignores (placement 0, migration "stay")."""

    def __init__(self, spec: str, nets: dict[str, Callable[[np.ndarray], np.ndarray]], card: Card,
                 provenance: dict[str, Any]) -> None:
        self.name = spec  # type: ignore[misc]
        self.card = card
        self.greedy = {agent: Greedy(f) for agent, f in nets.items()}
        self.n_inputs = {agent: getattr(f, "n_inputs", None) for agent, f in nets.items()}
        self.n_outputs = {agent: getattr(f, "n_outputs", None) for agent, f in nets.items()}
        fixed = card.env_id == "hss/Migration-v0"
        self.agents = tuple(a for a in ("placement", "migration") if a in nets or (a == "placement" and fixed))  # type: ignore[misc]
        opts = dict(card.env_options)
        if card.env_id == "hss/Placement-v0":
            opts["migration"] = False
        self.env_options = opts  # type: ignore[misc]
        self.provenance = provenance
        self._placement_device = 0

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env, seed)
        n = env.action_space("placement").n
        for agent, greedy in self.greedy.items():
            dim = env.observation_space(agent).shape[0]
            if self.n_inputs[agent] is None:  # a TorchScript module: ask it
                self.n_inputs[agent] = dim
                self.n_outputs[agent] = int(np.asarray(greedy.scores(np.zeros(dim, np.float32))).size)
            if self.n_inputs[agent] != dim or self.n_outputs[agent] != n:
                raise ValueError(
                    f"policy {self.name!r}: the {agent} network takes {self.n_inputs[agent]} features and "
                    f"scores {self.n_outputs[agent]} devices, but this env ({env.cfg.name}, {env.cfg.n_devices} "
                    f"devices, features={env.kind!r}) observes {dim} features and has {n} devices: evaluate it on "
                    f"a configuration with as many devices as the one it was trained on")
        self._placement_device = PLACEMENT_POLICIES[self.card.placement_policy] % n

    def act(self, observations: dict[str, np.ndarray], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        place = self.greedy.get("placement")
        if place is not None:
            out["placement"] = place(observations["placement"]) if infos["placement"]["acting"] else 0
        elif "placement" in self.agents:
            out["placement"] = self._placement_device
        move = self.greedy.get("migration")
        if move is not None:
            out["migration"] = (move(observations["migration"]) if infos["migration"]["acting"]
                                else stay_action(infos))
        return out


# ------------------------------------------------------------------------------------ the card
def _problem_env_classes() -> dict[str, type]:
    """The env class of each of :data:`PROBLEM_ENVS`, by env id."""
    return {"hss/RLAlloc-v0": RLAllocEnv, "hss/LQoCo-v0": LQoCoEnv}


def _unwrap(env: Any) -> Any:
    """The package env under Gymnasium wrappers or an SB3/Gymnasium vector env."""
    if hasattr(env, "envs"):  # SB3's DummyVecEnv, Gymnasium's SyncVectorEnv
        env = env.envs[0]
    base = getattr(env, "unwrapped", env)
    if isinstance(base, (SingleAgentEnv, HSSParallelEnv, *_problem_env_classes().values())):
        return base
    raise TypeError(f"save_model_card needs the env the model was trained on: hss/Placement-v0, hss/Migration-v0, "
                    f"hss/RLAlloc-v0, hss/LQoCo-v0 (possibly wrapped, or a DummyVecEnv/SyncVectorEnv of them) or "
                    f"hss_v0.parallel_env; got {type(env).__name__} (a SubprocVecEnv: pass one env made with the "
                    f"same options)")


def _problem_env_options(env_id: str, base: Any) -> dict[str, Any]:
    """The options of :data:`PROBLEM_ENVS` ``env_id`` that ``base`` (its env) was made with, as JSON."""
    if env_id == "hss/RLAlloc-v0":
        return {"action_mode": base.action_mode, "demand_periods": base.demand_periods}
    return {"observation": base.obs_kind, "magnitudes": list(base.magnitudes), "w_bins": list(base.w_bins),
            "p_tol": base.p_tol, "b_band": list(base.b_band), "bdp_window": base.bdp_window}


def save_model_card(path: str | Path, env: Any, *, networks: dict[str, dict[str, str]] | None = None) -> Path:
    """Write the model card of the model file ``path`` (``PATH.json``) for a model trained on
    ``env``; return the card's path. ``networks`` (PyTorch state_dicts only): for each agent the
    model acts for, ``{"prefix": ..., "activation": ...}`` - the state_dict prefix of its numbered
    ``Linear`` layers (``"actor"`` for CleanRL's PPO ``Agent``) and the activation between them
    (``tanh``, ``relu``, ...). Needed for the two-agent env and for observations other than
    Sibyl's six features; harmless otherwise."""
    base = _unwrap(env)
    card: dict[str, Any] = {"format": CARD_FORMAT}
    problem_env = next((i for i, cls in _problem_env_classes().items() if isinstance(base, cls)), None)
    if problem_env is not None:  # hss/RLAlloc-v0, hss/LQoCo-v0: one policy, the env's own spaces
        card["env_id"] = problem_env
        card["env_options"] = _problem_env_options(problem_env, base)
        card["observation_space"] = repr(base.observation_space)
        card["action_space"] = repr(base.action_space)
        if networks:
            if len(networks) != 1:
                raise ValueError(f"a model of {problem_env} has one network; networks names {sorted(networks)}")
            card["networks"] = {a: {"prefix": str(n["prefix"]), "activation": str(n.get("activation", "relu"))}
                                for a, n in networks.items()}
        out = card_path(path)
        out.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        return out
    if isinstance(base, SingleAgentEnv):
        par = base.env
        card["env_id"] = f"hss/{base.agent.capitalize()}-v0"
        if base.agent == "migration":
            device = base.other_policy(None, {}) if callable(base.other_policy) else 0
            card["placement_policy"] = "fast" if device == 0 else "slow"
    else:
        par = base
        card["env_id"] = "hss_v0"
        if not networks:
            raise ValueError("a model of the two-agent env (hss_v0) needs networks={agent: {'prefix': ..., "
                             "'activation': ...}} for the agents it acts for")
    card["env_options"] = {"features": par.kind, "raw_bins": par.raw_bins, "room_feature": par.room_feature,
                           "migration": par.migration_enabled}
    card["observation_space"] = repr(par.observation_space("placement"))
    card["action_space"] = repr(par.action_space("placement"))
    if networks:
        card["networks"] = {a: {"prefix": str(n["prefix"]), "activation": str(n.get("activation", "relu"))}
                            for a, n in networks.items()}
    out = card_path(path)
    out.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    return out


def read_card(path: Path) -> Card | None:
    """The card beside the model file ``path`` (None if there is none), checked."""
    cp = card_path(path)
    if not cp.is_file():
        return None
    try:
        raw = json.loads(cp.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"model card {cp}: not readable JSON: {e}") from None
    if not isinstance(raw, dict) or raw.get("format") != CARD_FORMAT:
        raise ValueError(f"model card {cp}: 'format' must be {CARD_FORMAT!r} (write it with "
                         f"hss_gym.agents.save_model_card)")
    env_id = raw.get("env_id")
    if env_id not in ENV_IDS:
        raise ValueError(f"model card {cp}: env_id {env_id!r} is not one of {', '.join(ENV_IDS)}")
    opts = raw.get("env_options") or {}
    known = PROBLEM_ENVS[env_id][1] if env_id in PROBLEM_ENVS else CARD_OPTIONS
    unknown = sorted(set(opts) - set(known))
    if unknown:
        raise ValueError(f"model card {cp}: unknown env_options {unknown}; a card of {env_id} records "
                         f"{', '.join(known)}")
    placement = raw.get("placement_policy", "fast")
    if placement not in PLACEMENT_POLICIES:
        raise ValueError(f"model card {cp}: placement_policy {placement!r} is not one of {sorted(PLACEMENT_POLICIES)}")
    networks = raw.get("networks")
    if networks is not None and env_id in PROBLEM_ENVS:  # one network, whatever its key
        if not isinstance(networks, dict) or len(networks) != 1 or not all(
                isinstance(n, dict) and "prefix" in n for n in networks.values()):
            raise ValueError(f"model card {cp}: 'networks' of a {env_id} model must name one network, "
                             f"{{'policy': {{'prefix': ..., 'activation': ...}}}}")
    elif networks is not None:
        if not isinstance(networks, dict) or not set(networks) <= {"placement", "migration"} or not all(
                isinstance(n, dict) and "prefix" in n for n in networks.values()):
            raise ValueError(f"model card {cp}: 'networks' must map 'placement'/'migration' to "
                             f"{{'prefix': ..., 'activation': ...}}")
    return Card(env_id, dict(opts), placement, networks)


def card_from_spaces(obs: dict[str, Any], n_actions: int, where: str) -> Card:
    """The card that Sibyl's features imply (``hss/Placement-v0``), from the observation's kind
    (``box`` with a ``shape`` or ``multidiscrete`` with ``nvec``); anything else needs a card."""
    sibyl = feature_bins(n_actions, "sibyl")
    if obs["kind"] == "box" and tuple(obs["shape"]) == (len(sibyl),):
        return Card("hss/Placement-v0", {"features": "sibyl", "raw_bins": False})
    if obs["kind"] == "multidiscrete" and list(obs["nvec"]) == sibyl.tolist():
        return Card("hss/Placement-v0", {"features": "sibyl", "raw_bins": True})
    raise ValueError(f"{where}: observation {obs['repr']} with {n_actions} actions is not hss/Placement-v0's "
                     f"(Sibyl's six features), so its env cannot be told from its spaces (Harmonia's features are "
                     f"hss/Migration-v0's and a placement agent's with features='harmonia'): write its model card "
                     f"beside it with hss_gym.agents.save_model_card(path, env). A model of hss/RLAlloc-v0 or "
                     f"hss/LQoCo-v0 plays in its own problem: 'rlalloc/<spec>' or 'lqoco/<spec>' (make_policy), "
                     f"hss-gym bench --suite rlalloc-v1 or lqoco-v1 --policies <spec>")


# ------------------------------------------------------------------------------------ SB3
def _space(entry: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    """A space of an SB3 ``data`` JSON, read from its readable fields (never unpickled)."""
    kind = str(entry.get(":type:", ""))
    if kind.endswith("Box'>"):
        return {"kind": "box", "shape": tuple(entry["_shape"]), "repr": f"Box(shape={tuple(entry['_shape'])})"}
    if kind.endswith("MultiDiscrete'>"):
        nvec = [int(v) for v in re.findall(r"\d+", str(entry["nvec"]))]
        return {"kind": "multidiscrete", "nvec": nvec, "repr": f"MultiDiscrete({nvec})"}
    if kind.endswith(".Discrete'>"):
        return {"kind": "discrete", "n": int(entry["n"]), "start": int(entry.get("start", 0) or 0),
                "repr": f"Discrete({int(entry['n'])})"}
    raise ValueError(f"{where}: unsupported {name} {kind or '?'}: the package's HSS envs have Box or "
                     f"MultiDiscrete observations and Discrete actions")


def _activation_name(kwargs: Any, default: str) -> str:
    fn = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
    if fn is None:
        return default
    m = re.search(r"\.(\w+)'>$", str(fn))
    name = (m.group(1) if m else str(fn)).lower()
    if name not in ACTIVATIONS:
        raise ValueError(f"unsupported activation_fn {fn}; supported: {', '.join(ACTIVATIONS)}")
    return name


def load_sb3(path: Path, discrete_obs: bool = False) -> tuple[NumpyMLP, dict[str, Any], int]:
    """The policy network of an SB3 model file (PPO, A2C: the actor; DQN: the Q-network), its
    observation space (as :func:`_space` reads it) and its number of actions. ``discrete_obs``: a
    Discrete observation (``hss/LQoCo-v0``'s states) is read too, one-hot encoded as SB3 does."""
    import torch
    where = f"SB3 model {path}"
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
            state = torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu", weights_only=True)
    except (zipfile.BadZipFile, KeyError) as e:
        raise ValueError(f"{where}: not a Stable-Baselines3 model (.zip with 'data' and 'policy.pth'): {e}") from None
    obs = _space(data.get("observation_space") or {}, "observation space", where)
    act = _space(data.get("action_space") or {}, "action space", where)
    if (obs["kind"] == "discrete" and not (discrete_obs and obs["start"] == 0)) or act["kind"] != "discrete" \
            or act["start"] != 0:
        raise ValueError(f"{where}: spaces {obs['repr']} -> {act['repr']}: the HSS envs observe a Box or "
                         f"MultiDiscrete and act in Discrete(n devices)" + (
                             "; hss/RLAlloc-v0 and hss/LQoCo-v0 models need a Discrete action (RLAlloc's "
                             "action_mode='flat')" if discrete_obs else ""))
    if any(k.startswith(("features_extractor.", "pi_features_extractor.")) for k in state):
        raise ValueError(f"{where}: its features extractor has weights (a custom or CNN extractor): only MLP "
                         f"policies on flat observations are supported")
    if any(k == "log_std" for k in state):
        raise ValueError(f"{where}: a continuous (Gaussian) policy: the HSS envs have Discrete actions")
    kwargs = data.get("policy_kwargs") or {}
    if any(k.startswith("action_net.") for k in state):  # ActorCriticPolicy: PPO, A2C
        # SB3's MlpExtractor: the activation follows every layer of the policy net, then action_net
        layers = linear_layers(state, "mlp_extractor.shared_net") + linear_layers(state, "mlp_extractor.policy_net")
        w, b = state["action_net.weight"], state["action_net.bias"]
        layers.append((w.detach().cpu().numpy(), b.detach().cpu().numpy()))
        activation = _activation_name(kwargs, "tanh")
    elif any(k.startswith("q_net.q_net.") for k in state):  # DQNPolicy
        layers = linear_layers(state, "q_net.q_net")
        activation = _activation_name(kwargs, "relu")
    else:
        raise ValueError(f"{where}: policy weights {sorted(state)[:4]}... are neither an actor-critic MLP "
                         f"(PPO, A2C) nor a DQN Q-network")
    nvec = (np.asarray(obs["nvec"]) if obs["kind"] == "multidiscrete" else
            np.asarray([obs["n"]]) if obs["kind"] == "discrete" else None)
    return NumpyMLP(layers, activation, nvec), obs, act["n"]


# ------------------------------------------------------------------------------------ PyTorch
def _is_torchscript(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("/constants.pkl") or "/code/" in n for n in z.namelist())
    except zipfile.BadZipFile:
        return False


def model_code(spec: str) -> str | None:
    """The code that playing model ``spec`` runs, for ``hss-gym validate``'s ``--allow``: ``"torch"``
    for a TorchScript module, None for weights read as data (an SB3 zip, a state_dict) or a file
    that is not there (its re-run fails, saying so)."""
    path = Path(spec.partition(":")[2])
    return "torch" if model_format(spec) == "torch" and path.is_file() and _is_torchscript(path) else None


def _state_prefixes(state: dict[str, Any]) -> list[str]:
    """The prefixes of numbered layers in a state_dict (``actor`` for ``actor.0.weight``)."""
    return sorted({m.group(1) for k in state if (m := re.match(r"^(.*)\.\d+\.weight$", k))})


def load_torch(path: Path, card: Card | None) -> tuple[dict[str, Callable[[np.ndarray], np.ndarray]], Card]:
    """The networks of a PyTorch file: a state_dict of numbered ``Linear`` layers (CleanRL's
    ``torch.save(agent.state_dict(), path)``) or a TorchScript module (``torch.jit.save``)."""
    import torch
    where = f"PyTorch model {path}"
    if _is_torchscript(path):
        net = ScriptedModule(torch.jit.load(str(path), map_location="cpu"))
        card = card or Card("hss/Placement-v0", {"features": "sibyl", "raw_bins": False})
        agents = list((card.networks or {}).keys()) or (["migration"] if card.env_id == "hss/Migration-v0"
                                                          else ["placement"])
        if len(agents) != 1:
            raise ValueError(f"{where}: a TorchScript module acts for one agent; the card names {agents}")
        return {agents[0]: net}, card
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises many kinds for a file that is not its own
        raise ValueError(f"{where}: not a state_dict or TorchScript module torch can read with "
                         f"weights_only=True: {type(e).__name__}: {e}") from None
    if not isinstance(state, dict) or not all(hasattr(v, "shape") for v in state.values()):
        raise ValueError(f"{where}: holds a {type(state).__name__}, not a state_dict (save "
                         f"module.state_dict(), or a TorchScript module with torch.jit.save)")
    prefixes = _state_prefixes(state)
    if card is not None and card.networks:
        specs = card.networks
    else:
        known = [p for p in prefixes if p in CLEANRL_PREFIXES]
        if len(known) != 1:
            raise ValueError(f"{where}: cannot tell the policy network among the layer prefixes {prefixes} "
                             f"(CleanRL's are 'actor', tanh, and 'network', relu): name it in the model card, "
                             f"save_model_card(path, env, networks={{'placement': {{'prefix': ..., "
                             f"'activation': ...}}}})")
        agent = "migration" if card is not None and card.env_id == "hss/Migration-v0" else "placement"
        specs = {agent: {"prefix": known[0], "activation": CLEANRL_PREFIXES[known[0]]}}
    nets: dict[str, Callable[[np.ndarray], np.ndarray]] = {}
    for agent, net in specs.items():
        layers = linear_layers(state, net["prefix"])
        if not layers:
            raise ValueError(f"{where}: no layers '{net['prefix']}.<i>.weight' for the {agent} agent; "
                             f"prefixes found: {prefixes}")
        nets[agent] = NumpyMLP(layers, str(net.get("activation", "relu")).lower())
    if card is None:
        mlp = next(iter(nets.values()))
        card = card_from_spaces({"kind": "box", "shape": (mlp.n_inputs,), "repr": f"{mlp.n_inputs} inputs"},
                                mlp.n_outputs, where)
    return nets, card


# ------------------------------------------------------------------------------------ RLlib
def load_rllib(path: Path, card: Card | None) -> tuple[dict[str, Callable[[np.ndarray], np.ndarray]], Card, list[Path]]:
    """The networks of an RLlib checkpoint folder (new API stack) by agent, its card, and the files
    read (for the sha256). A module acts for the agent the card names it for (``networks``:
    ``{"placement": {"prefix": MODULE_ID}}``), or for the agent of its id (``placement``,
    ``migration``: the two-agent env's, which needs a card), or, alone, for the agent of the env its
    observation implies (Sibyl's six features: ``hss/Placement-v0``)."""
    where = f"RLlib checkpoint {path}"
    modules = module_dirs(path)
    if not modules:
        raise ValueError(f"{where}: no RLModule in it (an Algorithm checkpoint holds them in {RLLIB_MODULES}; a "
                         f"module's folder holds class_and_ctor_args.pkl and module_state.pkl)")
    if card is not None and card.networks:
        wanted = {agent: str(n["prefix"]) for agent, n in card.networks.items()}
    elif set(modules) & {"placement", "migration"}:
        if card is None:
            raise ValueError(f"{where}: modules {sorted(modules)} are the two-agent env's: write its card, "
                             f"save_model_card({str(path)!r}, env) with the env it was trained on")
        wanted = {a: a for a in ("placement", "migration") if a in modules}
    elif len(modules) == 1:
        agent = "migration" if card is not None and card.env_id == "hss/Migration-v0" else "placement"
        wanted = {agent: next(iter(modules))}
    else:
        raise ValueError(f"{where}: modules {sorted(modules)}: name the one of each agent in its card, "
                         f"save_model_card(path, env, networks={{'placement': {{'prefix': MODULE_ID}}}})")
    missing = sorted(m for m in wanted.values() if m not in modules)
    if missing:
        raise ValueError(f"{where}: no module {missing}; it holds {sorted(modules)}")
    nets: dict[str, Callable[[np.ndarray], np.ndarray]] = {a: load_rllib_module(modules[m]) for a, m in wanted.items()}
    if card is None:
        mlp = next(iter(nets.values()))
        card = card_from_spaces({"kind": "box", "shape": (mlp.n_inputs,), "repr": f"{mlp.n_inputs} inputs"},  # type: ignore[attr-defined]
                                mlp.n_outputs, where)  # type: ignore[attr-defined]
    files = [f for m in sorted(set(wanted.values())) for f in (modules[m] / "class_and_ctor_args.pkl",
                                                                state_file(modules[m]))]
    return nets, card, files


def load_model_policy(spec: str) -> ModelPolicy:
    """The policy of a model spec, ``"sb3:PATH.zip"`` or ``"torch:PATH.pt"`` (see the module
    docstring); a missing file, an unreadable model or spaces that no env of the package has are
    refused with what is wrong."""
    fmt = model_format(spec)
    if fmt is None:
        raise ValueError(f"{spec!r} is not a model spec: {', '.join(f'{f}:PATH' for f in MODEL_FORMATS)}")
    path = Path(spec.partition(":")[2])
    if fmt == "rllib":
        if not path.is_dir():
            raise ValueError(f"policy {spec!r}: checkpoint folder {path} not found (relative paths are from the "
                             f"current folder, {Path.cwd()})")
        card = read_card(path)
        nets, card, files = load_rllib(path, card)
        digest = hashlib.sha256()
        for f in files:  # the weights and the structure read, by their place in the checkpoint
            digest.update(f.relative_to(path).as_posix().encode() + b"\0" + file_sha256(f).encode())
        cp = card_path(path)
        prov = {"format": fmt, "file": str(path), "sha256": digest.hexdigest(), "env_id": card.env_id,
                "card_sha256": file_sha256(cp) if cp.is_file() else None}
        return ModelPolicy(spec, nets, card, prov)
    if not path.is_file():
        raise ValueError(f"policy {spec!r}: model file {path} not found (relative paths are from the current "
                         f"folder, {Path.cwd()})")
    _need_torch(spec, fmt)
    card = read_card(path)
    if card is not None and card.env_id in PROBLEM_ENVS:
        problem = PROBLEM_ENVS[card.env_id][0]
        raise ValueError(f"policy {spec!r}: its card names {card.env_id}, the {problem} problem's env: play it there, "
                         f"make_policy('{problem}/{spec}') or hss-gym bench --suite {problem}-v1 --policies {spec}")
    if fmt == "sb3":
        mlp, obs, n = load_sb3(path)
        if card is None:
            card = card_from_spaces(obs, n, f"SB3 model {path}")
        agent = "migration" if card.env_id == "hss/Migration-v0" else "placement"
        if card.env_id == "hss_v0":
            raise ValueError(f"SB3 model {path}: its card names the two-agent env; an SB3 model acts for one agent "
                             f"(hss/Placement-v0 or hss/Migration-v0)")
        nets: dict[str, Callable[[np.ndarray], np.ndarray]] = {agent: mlp}
    else:
        nets, card = load_torch(path, card)
    cp = card_path(path)
    prov = {"format": fmt, "file": str(path), "sha256": file_sha256(path), "env_id": card.env_id,
            "card_sha256": file_sha256(cp) if cp.is_file() else None}
    return ModelPolicy(spec, nets, card, prov)


# ------------------------------------------------------------------------------------ other problems
def load_problem_model(spec: str, env_id: str) -> tuple[Callable[[np.ndarray], np.ndarray], Card, dict[str, Any]]:
    """For a problem other than HSS (:data:`PROBLEM_ENVS`): the scoring network of the model spec
    (``"sb3:PATH.zip"``, ``"torch:PATH.pt"``, ``"rllib:DIR"``) trained on ``env_id``, its card (the
    file beside it, or one naming ``env_id`` and no option when there is none: the spaces are the
    env's, checked at reset) and its provenance (format, file, sha256, env id, card's sha256), as
    :func:`load_model_policy` reads them for the HSS envs."""
    fmt = model_format(spec)
    if fmt is None:
        raise ValueError(f"{spec!r} is not a model spec: {', '.join(f'{f}:PATH' for f in MODEL_FORMATS)}")
    problem = PROBLEM_ENVS[env_id][0]
    path = Path(spec.partition(":")[2])
    exists = path.is_dir() if fmt == "rllib" else path.is_file()
    if not exists:
        raise ValueError(f"policy {spec!r}: {'checkpoint folder' if fmt == 'rllib' else 'model file'} {path} not "
                         f"found (relative paths are from the current folder, {Path.cwd()})")
    card = read_card(path)
    if card is not None and card.env_id != env_id:
        raise ValueError(f"policy {spec!r}: its card names {card.env_id}, but the {problem} problem plays "
                         f"{env_id} models" + ("" if card.env_id in PROBLEM_ENVS else
                                              f" (an HSS model plays as {spec!r}, without '{problem}/')"))
    card = card or Card(env_id, {})
    # the loaders below name the one network "placement"
    as_hss = Card(env_id, {}, networks={"placement": next(iter(card.networks.values()))} if card.networks else None)
    files = [path]
    if fmt == "rllib":
        nets, _, files = load_rllib(path, as_hss)
    elif fmt == "sb3":
        _need_torch(spec, fmt)
        mlp, _, _ = load_sb3(path, discrete_obs=True)
        nets = {"placement": mlp}
    else:
        _need_torch(spec, fmt)
        nets, _ = load_torch(path, as_hss)
    if len(nets) != 1:
        raise ValueError(f"policy {spec!r}: a {env_id} model has one network; it names {sorted(nets)}")
    if fmt == "rllib":
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.relative_to(path).as_posix().encode() + b"\0" + file_sha256(f).encode())
        sha = digest.hexdigest()
    else:
        sha = file_sha256(path)
    cp = card_path(path)
    prov = {"format": fmt, "file": str(path), "sha256": sha, "env_id": env_id,
            "card_sha256": file_sha256(cp) if cp.is_file() else None}
    return next(iter(nets.values())), card, prov


def _need_torch(spec: str, fmt: str) -> None:
    try:
        import torch  # noqa: F401  (reads the weights)
    except ImportError:
        raise ValueError(f"policy {spec!r}: reading {fmt} models needs torch: pip install "
                         f"'hss-gym[{'sb3' if fmt == 'sb3' else 'agents'}]'") from None


class ProblemModel:
    """A trained network's greedy action in ``hss/RLAlloc-v0`` or ``hss/LQoCo-v0``: what the
    problems' model policies (``rlalloc/sb3:PATH``, ``lqoco/sb3:PATH``) play. Made from the spec;
    :meth:`attach` checks it against the episode's env (its observation size or number of states
    and its number of actions) at every reset; calling it on an observation gives the argmax of
    the network's scores (``model.predict(obs, deterministic=True)``'s action). A Discrete
    observation (L-QoCo's 36 states) is one-hot encoded, as SB3 does, and its actions memoised;
    Box observations (RLAlloc's, L-QoCo's ``observation="raw"``) are not: they seldom repeat.
    ``env_options``: the card's, which the problem's run applies to its env."""

    def __init__(self, spec: str, env_id: str) -> None:
        self.spec, self.env_id = spec, env_id
        self.net, self.card, self.provenance = load_problem_model(spec, env_id)
        self.env_options = dict(self.card.env_options)
        self._act: Callable[[np.ndarray], int] | None = None

    def attach(self, env: Any) -> None:
        """Check the network against ``env`` (unwrapped) and get ready to act in it."""
        import gymnasium as gym
        obs_space, act_space = env.observation_space, env.action_space
        if not isinstance(act_space, gym.spaces.Discrete):
            raise ValueError(f"policy {self.spec!r}: this env acts in {act_space}; a trained model plays a "
                             f"Discrete action only (hss/RLAlloc-v0: action_mode='flat')")
        net = self.net
        n_in, n_out = getattr(net, "n_inputs", None), getattr(net, "n_outputs", None)
        discrete = isinstance(obs_space, gym.spaces.Discrete)
        dim = int(obs_space.n) if discrete else int(np.prod(obs_space.shape))
        nvec = getattr(net, "nvec", None)
        scores: Callable[[np.ndarray], np.ndarray] = net
        if discrete and nvec is None:  # a plain network of the one-hot state (PyTorch, RLlib, TorchScript)
            eye = np.eye(dim, dtype=np.float32)

            def scores(obs: Any, net: Any = net) -> np.ndarray:
                return net(eye[int(obs)])
        if n_in is None:  # a TorchScript module: ask it
            n_in = dim
            n_out = int(np.asarray(scores(0 if discrete else np.zeros(dim, np.float32))).size)
        elif discrete and nvec is not None:
            n_in = int(nvec[0]) if len(nvec) == 1 else -1
        if n_in != dim or n_out != act_space.n:
            what = f"{dim} states" if discrete else f"{dim} features"
            raise ValueError(f"policy {self.spec!r}: the network takes {n_in} {'states' if discrete else 'inputs'} "
                             f"and scores {n_out} actions, but this {self.env_id} env observes {what} "
                             f"({obs_space}) and has {act_space.n} actions: evaluate it on the workload and "
                             f"options it was trained on (RLAlloc: as many streams)")
        if discrete:
            greedy = Greedy(scores)
            self._act = lambda obs: greedy(np.asarray(obs, np.int64))
        else:
            self._act = lambda obs: int(np.argmax(scores(obs)))

    def __call__(self, obs: Any) -> int:
        if self._act is None:
            raise RuntimeError(f"policy {self.spec!r}: reset it with the env before it acts")
        return self._act(obs)
