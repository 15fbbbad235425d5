"""Validate a composed config before any work: types and ranges of the values every paper shares.

Hydra composes ``seed=abc`` or ``model.lr=-1`` without complaint; a run would then fail after loading
the data, or (worse) run something else than asked. The rules go by key name wherever the key sits
(model, its per-dataset tables, the paper's protocol, the scale), so a new paper's configs are checked
without registering anything. ``None`` always means "unset"; 0 is a value, checked like any other.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError

# Counts, sizes and budgets: a positive number (an integer where it counts something).
POSITIVE_INT = {"hidden", "emb_dim", "ff_dim", "dim", "steps", "batch_size", "heads", "layers", "K", "hops",
                "max_epochs", "patience", "num_experts", "ffn_hidden", "d_model", "seq_len", "block", "workers",
                "order", "negatives", "smoke_images", "smoke_eval_tokens", "smoke_eval_queries", "threads", "curve_points",
                "curve_valid_tokens", "khop", "step_batch"}
POSITIVE = {"lr", "prop_lr", "gamma", "clip_norm", "capacity_factor", "eval_capacity_factor"}
NON_NEGATIVE_INT = {"warmup_steps"}  # a count that may be 0
NON_NEGATIVE = {"wd", "prop_wd", "weight_decay", "regularization", "aux_weight"}
FRACTION = {"dropout", "input_drop", "val_ratio"}  # [0, 1): a dropout of 1 zeroes everything
NAME_MAPS = {"node_letters", "relations"}  # letters and edge-type ids, not numbers (PSHGCN's K is a node letter)
DEVICE = re.compile(r"^(cpu|cuda(:\d+)?|mps)$")


class ConfigError(ValueError):
    """A config choice or value that composes but makes no sense; the message says how to fix it."""


def one_line(exc: BaseException) -> str:
    """An error's message as the one line an entry point prints (a KeyError's without its quotes)."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def given(value: Any, default: Any) -> Any:
    """``value`` unless it is None: a 0 is a value (checked by validate), never "unset" as with ``or``."""
    return default if value is None else value


def _is_number(value: Any) -> bool:
    """A finite int or float: inf and nan pass every comparison test a rate or weight is given, and fail later."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_value(path: str, key: str, value: Any) -> None:
    if value is None:
        return
    if key in POSITIVE_INT:
        if not (_is_number(value) and value > 0 and isinstance(value, int)):  # 2.0 fails later in range(2.0)
            whole = _is_number(value) and value > 0 and float(value).is_integer()
            raise ConfigError(f"{path}={value!r} is invalid: it must be a positive integer"
                              f"{f' such as {int(value)}, not a float' if whole else ''}; fix the override "
                              f"or the config file")
    elif key in NON_NEGATIVE_INT:
        if not (_is_number(value) and value >= 0 and isinstance(value, int)):
            raise ConfigError(f"{path}={value!r} is invalid: it must be an integer >= 0; fix the override or the config file")
    elif key in POSITIVE:
        if not (_is_number(value) and value > 0):
            raise ConfigError(f"{path}={value!r} is invalid: it must be a number > 0; fix the override or the config file")
    elif key in NON_NEGATIVE:
        if not (_is_number(value) and value >= 0):
            raise ConfigError(f"{path}={value!r} is invalid: it must be a number >= 0; fix the override or the config file")
    elif key in FRACTION and not (_is_number(value) and 0 <= value < 1):
        raise ConfigError(f"{path}={value!r} is invalid: it must be a number in [0, 1); fix the override or the config file")


def walk(node: Any, path: str) -> None:
    """Check every value under `node` (named `path` in errors) by its key's rule. An interpolation left unresolved
    (a model file read on its own: ``${times:4,${paper.protocol.d_model}}``) is checked once composed."""
    for key in node.keys():
        if key in NAME_MAPS or (OmegaConf.is_interpolation(node, key) and not _resolvable(node, key)):
            continue
        child = node[key]
        if isinstance(child, DictConfig):
            walk(child, f"{path}.{key}")
        elif not isinstance(child, ListConfig):
            _check_value(f"{path}.{key}", str(key), child)


def _resolvable(node: DictConfig, key: Any) -> bool:
    try:
        node[key]
    except InterpolationResolutionError:
        return False
    return True


MAX_SEED = 2**32 - 1  # numpy's legacy seeding (np.random.seed) refuses anything larger


def is_seed(s: Any) -> bool:
    return isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED


def check_seeds(path: str, seeds: Any) -> None:
    """A seed list: non-empty, distinct integers in [0, 2**32 - 1] (numpy refuses others; a repeated seed
    would count one run several times and shrink the interval to nothing)."""
    if seeds is None:
        return
    if not isinstance(seeds, (list, ListConfig)) or len(seeds) == 0:
        raise ConfigError(f"{path}={seeds!r} is invalid: it must be a non-empty list of seeds, e.g. {path}=[1,2,3]")
    for s in seeds:
        if not is_seed(s):
            raise ConfigError(f"{path} holds {s!r}: every seed must be an integer in [0, {MAX_SEED}], "
                              f"e.g. {path}=[1,2,3]")
    repeated = sorted({s for s in seeds if list(seeds).count(s) > 1})
    if repeated:
        raise ConfigError(f"{path} repeats seed(s) {repeated}: each seed runs once; give distinct seeds, "
                          f"e.g. {path}=[1,2,3]")


def check_device(device: Any) -> None:
    """cpu, or an accelerator this machine has: say which exist rather than fail inside the first .to()."""
    import torch

    available = ["cpu"]
    if torch.cuda.is_available():
        available += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        available.append("mps")
    if not isinstance(device, str) or not DEVICE.match(device):
        raise ConfigError(f"device={device!r} is not a device name; this machine has: {', '.join(available)}")
    if device not in available:
        raise ConfigError(f"device={device} is not available on this machine (torch sees no such device); "
                          f"this machine has: {', '.join(available)}")


def validate(cfg: DictConfig) -> None:
    """Raise ConfigError naming the first invalid value of a composed config (before any data is loaded)."""
    seed = cfg.get("seed")
    if seed is not None and not is_seed(seed):
        raise ConfigError(f"seed={seed!r} is invalid: it must be an integer in [0, {MAX_SEED}] (e.g. seed=1), "
                          f"or unset for the protocol's seeds")
    check_seeds("scale.seeds", cfg.scale.get("seeds"))
    check_seeds("paper.protocol.seeds", cfg.paper.get("protocol", {}).get("seeds"))
    check_device(cfg.get("device", "cpu"))
    _check_value("threads", "threads", cfg.get("threads"))  # a positive integer, or null (torch's default)
    if cfg.get("tracker") is not None:
        check_tracker(cfg)  # a W&B mode or key that would fail (or hang) at the first seed
    for group in ("scale", "model"):
        walk(cfg[group], group)
    if cfg.paper.get("protocol") is not None:
        walk(cfg.paper.protocol, "paper.protocol")


def _paths(node: Any, prefix: str = "") -> list[str]:
    """Every key path of a config (dotted), without resolving interpolations."""
    if not isinstance(node, DictConfig):
        return []
    out = []
    for key in node.keys():
        path = f"{prefix}{key}"
        out.append(path)
        out += _paths(node._get_node(key), f"{path}.")
    return out


def check_added_keys(cfg: DictConfig, overrides: list[str]) -> None:
    """Refuse a ``+key=value`` override whose name already has a home elsewhere in the config (``+model.lr`` on
    a paper whose lr is ``paper.protocol.lr``) or is a near-miss of a sibling (``+model.alhpa``): the paper
    would never read the added key, and the run would silently be the default one. A new key with no home
    anywhere (an optional setting a paper reads with a default) stays allowed."""
    import difflib

    paths = _paths(cfg)
    for override in overrides:
        if not override.startswith("+") or override.startswith("++") or "=" not in override:
            continue
        key = override[1:].split("=", 1)[0]
        parent, _, leaf = key.rpartition(".")
        homes = [p for p in paths if p != key and p.rpartition(".")[2] == leaf]
        if homes:
            raise ConfigError(f"+{key} adds a key the paper never reads: '{leaf}' lives at {', '.join(homes)}; "
                              f"override it there ({homes[0]}=...)")
        siblings = [p.rpartition(".")[2] for p in paths if p.rpartition(".")[0] == parent and p != key]
        near = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.75)
        if near:
            raise ConfigError(f"+{key} adds a key the paper never reads; did you mean "
                              f"{f'{parent}.' if parent else ''}{near[0]}=...?")


# --- the tracker: W&B settings that would fail (or hang) at the first seed, refused before any work -------

MODES = ("offline", "online", "disabled", "dryrun", "run", "shared")  # what wandb.Settings(mode=) accepts
ONLINE = ("online", "run", "shared")  # modes that talk to the server: they need a key and network
OFFLINE_FIX = "or run offline (unset WANDB_MODE and WANDB_API_KEY; `wandb sync` later) or with tracker=none"
JWT = re.compile(r"[\w-]+\.[\w-]+\.[\w-]+")


def wandb_mode(mode: str | None) -> tuple[str, str]:
    """(mode, where it came from): the tracker config's mode, else WANDB_MODE, else online with a key, else offline."""
    if mode:
        return str(mode), "tracker.mode"
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"], "WANDB_MODE"
    return ("online", "WANDB_API_KEY is set, so the W&B mode") if os.environ.get("WANDB_API_KEY") else ("offline", "")


def key_problem(key: str) -> str | None:
    """What is wrong with a W&B API key's form, or None (wandb's own rule: 40+ letters, digits, underscores after
    an optional on-prem '<prefix>-', or a JWT). The key itself is never printed."""
    if JWT.fullmatch(key):
        return None
    secret = key.split("-", 1)[-1]
    if not re.fullmatch(r"[\w-]+", secret):
        return "it may hold only letters, digits and underscores (a space or quote pasted with it?)"
    if len(secret) < 40:
        return f"it has {len(secret)} characters, a W&B key has 40 or more"
    return None


def has_login() -> bool:
    """A key saved by `wandb login` (in ~/.netrc, or $NETRC, for the W&B host)."""
    import netrc

    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    try:
        return path.is_file() and netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def check_tracker(cfg: DictConfig) -> None:
    """Refuse a tracker that would fail (or hang) at the first seed: an unknown tracker, a W&B mode wandb refuses,
    an online mode without a key or with a malformed one. Never contacts W&B."""
    tracker = cfg.get("tracker") or {}
    kind = tracker.get("name", "none")
    if kind not in ("none", "wandb"):
        raise ConfigError(f"tracker={kind} is not a tracker; valid: none, wandb")
    if kind != "wandb":
        return
    mode, source = wandb_mode(tracker.get("mode"))
    if mode not in MODES:
        raise ConfigError(f"{source}={mode!r} is not a W&B mode; valid: {', '.join(MODES)} (offline is the default: "
                          f"unset {source}), or tracker=none")
    if mode not in ONLINE:
        return
    key = os.environ.get("WANDB_API_KEY")
    if key:
        problem = key_problem(key)
        if problem:
            raise ConfigError(f"WANDB_API_KEY is malformed: {problem}; copy it again from https://wandb.ai/authorize, "
                              f"{OFFLINE_FIX}")
    elif not has_login():
        raise ConfigError(f"{source}={mode} needs a W&B API key and network, and there is no key: set WANDB_API_KEY "
                          f"(https://wandb.ai/authorize) or run `wandb login`, {OFFLINE_FIX}")
