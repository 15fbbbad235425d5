"""FUNSD forms (official split: 149 training, 50 test) as word sequences with boxes, BIO labels and segments.

The files are declared once for every paper, with their sha256, in shared.data.funsd (copied from the mirror's
SHA256SUMS, whose PROVENANCE.md cross-checks them against an independent upstream copy) and fetched through shared.data.

Word order is the annotation's (entity by entity, words in reading order within each), as every FUNSD labelling
benchmark (LayoutLM's preprocessing included) uses it. Words with empty text are dropped (LayoutLM does the same):
they carry no token.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from shared.data import DataError, DatasetSpec, fetch, funsd
from shared.data.funsd import SPLITS, URL

ENTITY_TYPES = ("header", "question", "answer")  # FUNSD's fourth label, "other", is tagged O
LABELS = ("O", *(f"{p}-{t.upper()}" for t in ENTITY_TYPES for p in ("B", "I")))
LABEL_ID = {name: i for i, name in enumerate(LABELS)}


@dataclass(frozen=True)
class Form:
    """One annotated form: per word its text, box (image pixels, x0 y0 x1 y1), BIO tag id and segment id."""

    doc_id: str
    width: int  # image size in pixels (the box normalisation's frame)
    height: int
    words: tuple[str, ...]
    boxes: tuple[tuple[float, float, float, float], ...]
    tags: tuple[int, ...]  # index into LABELS
    segments: tuple[int, ...]  # the annotated entity (FUNSD "segment") each word belongs to: the oracle's units
    image_path: str = ""


def spec() -> DatasetSpec:
    return funsd.spec(tuple(SPLITS))


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG header, without decoding the image."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise DataError(f"{path} is not a PNG file; fetch FUNSD again ({URL})")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def parse_form(doc_id: str, annotation: dict, width: int, height: int, image_path: str = "") -> Form:
    """Words of one FUNSD annotation, BIO-tagged: the first word of a header/question/answer entity is B-, the
    rest I-; words of "other" entities are O."""
    if "form" not in annotation:
        raise DataError(f"FUNSD annotation {doc_id} has no 'form' list; is it a FUNSD JSON file?")
    words, boxes, tags, segments = [], [], [], []
    for seg, entity in enumerate(annotation["form"]):
        label = entity.get("label")
        if label not in (*ENTITY_TYPES, "other"):
            raise DataError(f"FUNSD annotation {doc_id}: entity {entity.get('id')} has label {label!r}; "
                            f"expected one of {', '.join((*ENTITY_TYPES, 'other'))}")
        kept = [w for w in entity["words"] if w["text"].strip()]
        for i, word in enumerate(kept):
            words.append(word["text"])
            boxes.append(tuple(float(v) for v in word["box"]))
            tags.append(LABEL_ID["O"] if label == "other" else LABEL_ID[f"{'B' if i == 0 else 'I'}-{label.upper()}"])
            segments.append(seg)
    return Form(doc_id, width, height, tuple(words), tuple(boxes), tuple(tags), tuple(segments), image_path)


def load(limit: int | None = None) -> dict[str, list[Form]]:
    """Both official splits, forms sorted by id; `limit` keeps the first forms of each (smoke runs only)."""
    paths = fetch(spec())
    out: dict[str, list[Form]] = {}
    for split in SPLITS:
        forms = [parse_form(doc_id, annotation, *png_size(image), str(image))
                 for doc_id, annotation, image in funsd.annotations(paths, split)]
        out[split] = forms[:limit] if limit else forms
    return out
