"""Forms -> WordPiece windows with 2D boxes, first-subtoken labels and the unit each token pools into.

Each word's sub-tokens share its normalised box; only the first sub-token carries the word's label (the rest are
-100, ignored by the loss and by prediction), as in LayoutLM's FUNSD fine-tuning. A form longer than `max_len`
(incl. [CLS] and [SEP]) is cut at word boundaries into consecutive windows that do not overlap (3 of 199 FUNSD
forms exceed 512 tokens); every word is predicted exactly once.

Units (the coarse-grained nodes) per arm:
- ``tokens``: every sub-token its own unit (the control: the same layers, no grouping);
- ``lines``: the label-free text lines of replications.mmlayout.boxes.group_lines (mmLayout);
- ``segments``: FUNSD's annotated segments, which coincide with the entities (the oracle: leaks label structure).
[CLS], [SEP] and padding belong to no unit (-1). Unit ids are renumbered 0..M-1 within each window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from replications.mmlayout.boxes import group_lines, normalise
from replications.mmlayout.data import Form

UNIT_KINDS = ("tokens", "lines", "segments")
IGNORE = -100


@dataclass
class Window:
    doc: int  # index of the form in its split
    input_ids: list[int]
    boxes: list[tuple[int, int, int, int]]
    labels: list[int]  # -100 except on each word's first sub-token
    word_index: list[int]  # the form's word index per token (-1 for [CLS]/[SEP])
    units: list[int]  # unit per token, -1 for none


def word_units(form: Form, kind: str, line_overlap: float, line_gap: float) -> np.ndarray | None:
    """Unit id per word for `lines` / `segments`; None for `tokens` (assigned per sub-token)."""
    if kind == "tokens":
        return None
    if kind == "lines":
        return group_lines(np.asarray(form.boxes, dtype=np.float64), line_overlap, line_gap)
    if kind == "segments":
        return np.asarray(form.segments, dtype=np.int64)
    raise ValueError(f"unknown unit kind '{kind}'; valid: {', '.join(UNIT_KINDS)}")


def renumber(units: list[int]) -> list[int]:
    """Ids 0..M-1 in order of first appearance; -1 stays -1."""
    seen: dict[int, int] = {}
    return [-1 if u < 0 else seen.setdefault(u, len(seen)) for u in units]


def encode_form(form: Form, doc: int, tokenizer, units: str, max_len: int, line_overlap: float = 0.5,
                line_gap: float = 1.0) -> list[Window]:
    if max_len < 3:
        raise ValueError(f"max_len={max_len} leaves no room for a token besides [CLS] and [SEP]")
    per_word = word_units(form, units, line_overlap, line_gap)
    pieces = tokenizer(list(form.words), add_special_tokens=False)["input_ids"]
    unk = tokenizer.unk_token_id
    windows, cur = [], None
    budget = max_len - 2
    for w, ids in enumerate(pieces):
        ids = ids or [unk]  # a word the tokenizer drops entirely (e.g. a control character) still gets a token
        ids = ids[:budget]
        if cur is None or len(cur["ids"]) + len(ids) > budget:
            cur = {"ids": [], "boxes": [], "labels": [], "words": [], "units": []}
            windows.append(cur)
        box = normalise(form.boxes[w], form.width, form.height)
        for k, tid in enumerate(ids):
            cur["ids"].append(tid)
            cur["boxes"].append(box)
            cur["labels"].append(form.tags[w] if k == 0 else IGNORE)
            cur["words"].append(w)
            cur["units"].append(int(per_word[w]) if per_word is not None else len(cur["units"]))
    out = []
    cls_box, sep_box = (0, 0, 0, 0), (1000, 1000, 1000, 1000)  # LayoutLM's boxes for the special tokens
    for c in windows:
        out.append(Window(doc=doc, input_ids=[tokenizer.cls_token_id, *c["ids"], tokenizer.sep_token_id],
                          boxes=[cls_box, *c["boxes"], sep_box], labels=[IGNORE, *c["labels"], IGNORE],
                          word_index=[-1, *c["words"], -1], units=[-1, *renumber(c["units"]), -1]))
    return out


def encode_split(forms: list[Form], tokenizer, units: str, max_len: int, line_overlap: float = 0.5,
                 line_gap: float = 1.0) -> list[Window]:
    return [w for i, f in enumerate(forms) for w in encode_form(f, i, tokenizer, units, max_len, line_overlap, line_gap)]


def collate(windows: list[Window], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad a batch to its longest window."""
    n, t = len(windows), max(len(w.input_ids) for w in windows)
    ids = torch.full((n, t), pad_id, dtype=torch.long)
    boxes = torch.zeros((n, t, 4), dtype=torch.long)
    labels = torch.full((n, t), IGNORE, dtype=torch.long)
    units = torch.full((n, t), -1, dtype=torch.long)
    mask = torch.zeros((n, t), dtype=torch.long)
    for i, w in enumerate(windows):
        k = len(w.input_ids)
        ids[i, :k] = torch.tensor(w.input_ids)
        boxes[i, :k] = torch.tensor(w.boxes)
        labels[i, :k] = torch.tensor(w.labels)
        units[i, :k] = torch.tensor(w.units)
        mask[i, :k] = 1
    return {"input_ids": ids, "bbox": boxes, "labels": labels, "units": units, "attention_mask": mask}
