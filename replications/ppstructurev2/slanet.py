"""SLANet table recognition as PP-StructureV2's inference pipeline runs it, and the cell matcher.

Written to the official protocol (PaddleOCR ppstructure/table/predict_structure.py, predict_table.py, matcher.py
and ppocr/postprocess/table_postprocess.py, read side by side):
- input: the BGR image scaled so its long side is 488 (up or down), x/255, ImageNet mean/std per channel, then
  zero-padded (after normalisation) to 488 x 488, CHW;
- structure decoding: greedy argmax per step; the dictionary is the model's own (ONNX metadata `character`)
  with MergeToken applied (`<td>` removed, `<td></td>` added) and `sos` / `eos` around it; stop at the first
  `eos` after step 0, skip `sos`; at most 500 structure tokens (the head's 501 steps, the first being `sos`);
- cell boxes: one per `<td>`, `<td` or `<td></td>` token, predicted normalised to the original image (x1 y1 x2 y2);
- end to end: OCR boxes (made axis-aligned, 1 px margin) whose bottom lies above every cell box are dropped
  (filter_ocr_result), each remaining OCR box goes to the cell with the highest IoU, ties broken by the
  smallest L1 corner distance, and a cell's texts are joined with single spaces in OCR order.
`<thead>` / `<tbody>` are kept, as in the ground truth.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from replications.ocr.preprocess import IMAGENET_MEAN, IMAGENET_STD

TD_TOKENS = ("<td>", "<td", "<td></td>")  # structure tokens that open a cell (and carry a box)
MAX_LEN = 488


def merged_dictionary(character: str) -> list[str]:
    """sos + the model's tokens with MergeToken applied + eos (PaddleOCR TableLabelDecode, merge_no_span_structure)."""
    tokens = [t for t in character.split("\n") if t != ""]
    if "<td></td>" not in tokens:
        tokens.append("<td></td>")
    if "<td>" in tokens:
        tokens.remove("<td>")
    return ["sos", *tokens, "eos"]


def preprocess(img: np.ndarray, max_len: int = MAX_LEN) -> tuple[np.ndarray, tuple[int, int]]:
    """(1, 3, max_len, max_len) input and the original (h, w)."""
    h, w = img.shape[:2]
    ratio = max_len / float(max(h, w))
    resized = cv2.resize(img, (int(w * ratio), int(h * ratio))).astype(np.float32) / 255.0
    resized = (resized - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    padded = np.zeros((max_len, max_len, 3), np.float32)
    padded[: resized.shape[0], : resized.shape[1]] = resized
    return padded.transpose(2, 0, 1)[None], (h, w)


def decode(probs: np.ndarray, locs: np.ndarray, dictionary: list[str], shape: tuple[int, int]
           ) -> tuple[list[str], np.ndarray]:
    """Structure tokens and cell boxes (n, 4: x1 y1 x2 y2 in original pixels) of one table.

    probs: (steps, classes) softmax outputs; locs: (steps, 4) boxes normalised to the original image."""
    end, start = dictionary.index("eos"), dictionary.index("sos")
    h, w = shape
    tokens, boxes = [], []
    for step, idx in enumerate(probs.argmax(axis=1)):
        if step > 0 and idx == end:
            break
        if idx in (start, end):
            continue
        token = dictionary[int(idx)]
        if token in TD_TOKENS:
            boxes.append(locs[step] * np.array([w, h, w, h], np.float64))
        tokens.append(token)
    return tokens, np.asarray(boxes, np.float64).reshape(-1, 4)


@dataclass
class Structure:
    tokens: list[str]  # without <html><body><table>
    boxes: np.ndarray  # (cells, 4)
    seconds: float = 0.0


class SLANet:
    def __init__(self, model_path: str, threads: int):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
        self.dictionary = merged_dictionary(self.session.get_modelmeta().custom_metadata_map["character"])
        classes = self.session.get_outputs()[1].shape[-1]
        if classes != len(self.dictionary):
            raise RuntimeError(f"SLANet outputs {classes} classes but the merged dictionary has {len(self.dictionary)}")

    def __call__(self, img: np.ndarray) -> Structure:
        t0 = time.perf_counter()
        x, shape = preprocess(img)
        locs, probs = self.session.run(None, {self.session.get_inputs()[0].name: x})
        tokens, boxes = decode(probs[0], locs[0], self.dictionary, shape)
        return Structure(tokens, boxes, time.perf_counter() - t0)


# ---- ground truth -------------------------------------------------------------------------------------------

def merge_tokens(tokens: list[str]) -> list[str]:
    """PubTabNet structure tokens with MergeToken: `<td>` `</td>` -> `<td></td>`."""
    out: list[str] = []
    for tok in tokens:
        if tok == "</td>" and out and out[-1] == "<td>":
            out[-1] = "<td></td>"
        else:
            out.append(tok)
    return out


_TAG = re.compile(r"<(/?)([A-Za-z]\w*)([^<>]*)>")  # a tag name starts with a letter: cell text "<0.001" is text
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def structure_of_html(markup: str) -> tuple[list[str], list[str]]:
    """Merged structure tokens and the inner HTML of each cell, from a PubTabNet HTML string.

    Tags other than the table's own (thead/tbody/tr/td) are cell content; span attributes become
    ` colspan="n"` / ` rowspan="n"` tokens in their written order, as in PubTabNet's structure tokens."""
    body = markup.split("<table>", 1)[1].rsplit("</table>", 1)[0] if "<table>" in markup else markup
    tokens: list[str] = []
    cells: list[str] = []
    cell_start = None
    for m in _TAG.finditer(body):
        closing, tag, attrs = m.group(1) == "/", m.group(2), m.group(3)
        if tag not in ("thead", "tbody", "tr", "td"):
            continue
        if tag == "td" and not closing:
            spans = _ATTR.findall(attrs)
            if spans:
                tokens += ["<td", *(f' {k}="{v}"' for k, v in spans), ">"]
            else:
                tokens.append("<td>")
            cell_start = m.end()
        elif tag == "td":
            cells.append(body[cell_start:m.start()])
            tokens.append("</td>")
            cell_start = None
        elif cell_start is None:
            tokens.append(f"<{'/' if closing else ''}{tag}>")
    return merge_tokens(tokens), cells


def to_html(tokens: list[str], contents: list[str] | None = None) -> str:
    """Full HTML of a structure with each cell's content (by cell order; None: empty cells)."""
    out, cell = [], 0
    for tok in tokens:
        if "</td>" in tok:
            text = contents[cell] if contents is not None and cell < len(contents) else ""
            out.append(f"<td>{text}</td>" if tok == "<td></td>" else f"{text}</td>")
            cell += 1
        else:
            out.append(tok)
    return "<html><body><table>" + "".join(out) + "</table></body></html>"


def is_complex(tokens: list[str]) -> bool:
    """PubTabNet's `complex`: any spanning cell."""
    return any("span" in t for t in tokens)


def grid(tokens: list[str]) -> list[tuple[int, int, int, int]]:
    """(row, col, rowspan, colspan) of each cell of a structure, in cell order (occupied slots skipped)."""
    cells, taken, row, col, span = [], set(), -1, 0, {"colspan": 1, "rowspan": 1}
    for tok in tokens:
        if tok == "<tr>":
            row, col = row + 1, 0
        elif tok in ("<td></td>", "<td", "<td>"):
            span = {"colspan": 1, "rowspan": 1}
        elif "span=" in tok:
            k, v = tok.strip().split("=")
            span[k] = int(v.strip('"'))
        if tok in ("<td></td>", "</td>"):
            while (row, col) in taken:
                col += 1
            cells.append((row, col, span["rowspan"], span["colspan"]))
            for r in range(row, row + span["rowspan"]):
                for c in range(col, col + span["colspan"]):
                    taken.add((r, c))
            col += span["colspan"]
    return cells


# ---- cell matching (TableMatch) -----------------------------------------------------------------------------

def l1_distance(a: np.ndarray, b: np.ndarray) -> float:
    """matcher.distance: the summed corner L1 distance plus the smaller of the two corners' distances."""
    d_tl = abs(b[0] - a[0]) + abs(b[1] - a[1])
    d_br = abs(b[2] - a[2]) + abs(b[3] - a[3])
    return d_tl + d_br + min(d_tl, d_br)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    left, right = max(a[0], b[0]), min(a[2], b[2])
    top, bottom = max(a[1], b[1]), min(a[3], b[3])
    if left >= right or top >= bottom:
        return 0.0
    inter = (right - left) * (bottom - top)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def match_cells(ocr_boxes: np.ndarray, cell_boxes: np.ndarray) -> dict[int, list[int]]:
    """cell index -> the OCR boxes (in OCR order) assigned to it: highest IoU, then smallest L1 distance."""
    matched: dict[int, list[int]] = {}
    if len(cell_boxes) == 0:
        return matched
    for i, box in enumerate(ocr_boxes):
        keys = [(1.0 - iou(box, c), l1_distance(box, c)) for c in cell_boxes]
        best = min(range(len(keys)), key=lambda j: (keys[j], j))  # first of equal keys, as list.index does
        matched.setdefault(best, []).append(i)
    return matched


def filter_above(ocr_boxes: np.ndarray, texts: list[str], cell_boxes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Drop OCR boxes lying wholly above the topmost cell box (the table's caption, usually)."""
    if len(cell_boxes) == 0:
        return ocr_boxes, texts
    top = cell_boxes[:, 1::2].min()
    keep = [i for i, b in enumerate(ocr_boxes) if max(b[1], b[3]) >= top]
    return ocr_boxes[keep].reshape(-1, 4), [texts[i] for i in keep]


def cell_text(parts: list[str]) -> str:
    """Several OCR texts in one cell: a leading space and any <b>/</b> dropped, joined with one space."""
    if len(parts) == 1:
        return parts[0]
    out = []
    for k, text in enumerate(parts):
        if text.startswith(" "):
            text = text[1:]
        if "<b>" in text:
            text = text[3:]
        if "</b>" in text:
            text = text[:-4]
        if not text:
            continue
        if k != len(parts) - 1 and not text.endswith(" "):
            text += " "
        out.append(text)
    return "".join(out)


def fill(structure: Structure, ocr_boxes: np.ndarray, texts: list[str]) -> str:
    """Predicted HTML with OCR text placed into the cells (TableMatch with filter_ocr_result=True)."""
    boxes, kept = filter_above(np.asarray(ocr_boxes, np.float64).reshape(-1, 4), texts, structure.boxes)
    matched = match_cells(boxes, structure.boxes)
    n_cells = sum("</td>" in t for t in structure.tokens)
    contents = [cell_text([kept[i] for i in matched[c]]) if c in matched else "" for c in range(n_cells)]
    return to_html(structure.tokens, contents)


@dataclass
class OCRResult:
    boxes: np.ndarray  # (n, 4) axis-aligned
    texts: list[str]
    seconds: dict[str, float] = field(default_factory=dict)


def table_ocr(engine, img: np.ndarray) -> OCRResult:
    """PP-OCR on a table image as TableSystem._ocr runs it: DB boxes (sorted), made axis-aligned with a 1 px
    margin, crops widened by 2 px, recognised without the direction classifier and without a score filter."""
    t0 = time.perf_counter()
    quads = engine.detect(img)
    t1 = time.perf_counter()
    h, w = img.shape[:2]
    boxes = []
    for q in quads:
        q = np.asarray(q, np.float64)
        boxes.append([max(0, q[:, 0].min() - 1), max(0, q[:, 1].min() - 1),
                      min(w, q[:, 0].max() + 1), min(h, q[:, 1].max() + 1)])
    boxes_np = np.asarray(boxes, np.float64).reshape(-1, 4)
    crops = []
    for x0, y0, x1, y1 in boxes_np:
        x0, y0, x1, y1 = max(0, x0 - 2), max(0, y0 - 2), min(w, x1 + 2), min(h, y1 + 2)
        crops.append(img[int(y0):int(y1), int(x0):int(x1), :])
    texts: list[str] = []
    if crops:
        rec, _ = engine.ocr.text_rec(crops, False)
        texts = [r[0] for r in rec]
    t2 = time.perf_counter()
    return OCRResult(boxes_np, texts, {"det": t1 - t0, "rec": t2 - t1})
