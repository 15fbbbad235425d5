"""OCR engines with one interface: image -> what the engine outputs (lines for PP-OCR, words for Tesseract),
the same cut into words, the raw detector boxes, and stage timings.

PP-OCR v2/v3/v4 run as PaddleOCR's inference pipeline does (tools/infer/predict_system.py): our detector input
(preprocess.DetInput, each release's settings from the config), then rapidocr-onnxruntime 1.4.4's components
(onnxruntime sessions, PaddleOCR's DB post-processing, direction classifier, CTC decoding, ported from PaddleOCR
by that package) with the model files from our store. Tesseract 5 runs through its CLI (TSV output, word level),
as pytesseract would call it.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from replications.ocr.models import MODEL_SETS, model_files
from replications.ocr.preprocess import DetInput
from replications.ocr.regions import Regions
from shared.config_check import ConfigError


@dataclass
class Output:
    words: Regions  # the output cut into words (PP-OCR: split_words, not part of the released pipeline)
    lines: Regions  # what the engine outputs (PP-OCR: recognised lines scoring >= drop_score; Tesseract: words)
    seconds: dict[str, float] = field(default_factory=dict)  # det, cls, rec, pipeline
    detector: Regions | None = None  # every box the detector returned, before recognition (None: same as lines)


def split_words(text: str, char_boxes: list, line_box: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Whitespace-separated words of a recognised line with their quads.

    rapidocr returns one box per decoded character (from the CTC column positions, PaddleOCR's
    `return_word_box` method); a word's quad runs from its first character's left edge to its last
    character's right edge. If the character boxes do not line up with the text, the line quad is cut
    in proportion to character counts instead.
    """
    tokens, start = [], None
    for i, ch in enumerate(text + " "):
        if ch.isspace():
            if start is not None:
                tokens.append((start, i))
            start = None
        elif start is None:
            start = i
    quads = []
    for s, e in tokens:
        if len(char_boxes) == len(text):
            first, last = np.asarray(char_boxes[s], float), np.asarray(char_boxes[e - 1], float)
            quads.append(np.array([first[0], last[1], last[2], first[3]]))
        else:
            tl, tr, br, bl = np.asarray(line_box, float)
            a, b = s / max(len(text), 1), e / max(len(text), 1)
            quads.append(np.array([tl + a * (tr - tl), tl + b * (tr - tl), bl + b * (br - bl), bl + a * (br - bl)]))
    return quads, [text[s:e] for s, e in tokens]


class PPOCREngine:
    """det -> direction classifier -> rec, PaddleOCR's pipeline order, timed per stage."""

    def __init__(self, version: str, det: dict[str, Any], text_score: float, use_cls: bool, threads: int):
        from rapidocr_onnxruntime import RapidOCR  # heavy import (onnxruntime, cv2): only when used

        files = model_files(version)
        kwargs: dict[str, Any] = {
            "det_model_path": str(files["det"]), "cls_model_path": str(files["cls"]),
            "rec_model_path": str(files["rec"]), "rec_img_shape": list(MODEL_SETS[version].rec_img_shape),
            "intra_op_num_threads": threads, "inter_op_num_threads": 1,
            "det_thresh": det["thresh"], "det_box_thresh": det["box_thresh"],
            "det_unclip_ratio": det["unclip_ratio"], "det_use_dilation": det["use_dilation"],
            "det_score_mode": det["score_mode"],
        }
        if "keys" in files:  # PP-OCRv2's ONNX export carries no character list in its metadata
            kwargs["rec_keys_path"] = str(files["keys"])
        self.ocr = RapidOCR(**kwargs)
        post = self.ocr.text_det.postprocess_op
        applied = (post.thresh, post.box_thresh, post.unclip_ratio, post.score_mode, post.dilation_kernel is not None)
        wanted = (det["thresh"], det["box_thresh"], det["unclip_ratio"], det["score_mode"], det["use_dilation"])
        if applied != wanted:  # rapidocr's keyword parsing has changed between releases: check it took
            raise RuntimeError(f"rapidocr did not apply the detector settings: wanted {wanted}, got {applied}")
        # rapidocr's own resize/normalisation is bypassed: the detector gets the release's input (see preprocess.py)
        self.det_input = DetInput(int(det["limit_side_len"]), det["limit_type"], tuple(det["mean"]), tuple(det["std"]))
        self.text_score, self.use_cls = text_score, use_cls

    def detect(self, img: np.ndarray) -> np.ndarray:
        """Quads (n, 4, 2) from the DB detector, as PaddleOCR's TextDetector returns them (sorted top-down)."""
        det, shape = self.ocr.text_det, img.shape[:2]
        boxes, _ = det.postprocess_op(det.infer(self.det_input(img))[0], shape)
        boxes = det.filter_tag_det_res(boxes, shape)
        return np.asarray(self.ocr.sorted_boxes(boxes)) if len(boxes) else np.zeros((0, 4, 2), np.float32)

    def __call__(self, img: np.ndarray) -> Output:
        ocr = self.ocr
        t0 = time.perf_counter()
        boxes = self.detect(img)
        t1 = time.perf_counter()
        words, lines = Regions([], []), Regions([], [])
        detector = Regions([np.asarray(b, float) for b in boxes], [""] * len(boxes), [False] * len(boxes))
        t2 = t3 = t1
        if len(boxes):
            crops = ocr.get_crop_img_list(img, boxes)
            if self.use_cls:
                crops, _, _ = ocr.text_cls(crops)
            t2 = time.perf_counter()
            rec, _ = ocr.text_rec(crops, True)
            rec = ocr.cal_rec_boxes(crops, boxes, rec)
            t3 = time.perf_counter()
            for box, (text, score, char_boxes, *_rest) in zip(boxes, rec):
                if score < self.text_score:  # PaddleOCR drop_score: low-confidence lines are not output
                    continue
                lines.polygons.append(np.asarray(box, float))
                lines.texts.append(text)
                lines.dont_care.append(False)
                quads, texts = split_words(text, char_boxes, box)
                words.polygons += quads
                words.texts += texts
                words.dont_care += [False] * len(texts)
        return Output(words, lines, {"det": t1 - t0, "cls": t2 - t1, "rec": t3 - t2, "pipeline": t3 - t0}, detector)


class TesseractEngine:
    """`tesseract <png> stdout --psm N -l eng tsv`; words with non-empty text are the predictions."""

    def __init__(self, psm: int, lang: str, threads: int):
        self.binary = shutil.which("tesseract")
        if self.binary is None:
            # A ConfigError: the entry points print it as one line (exit 2), before any image is read.
            raise ConfigError("model=tesseract needs the tesseract binary, which is not installed. "
                              "Fix: apt-get install -y tesseract-ocr tesseract-ocr-eng")
        self.psm, self.lang = psm, lang
        self.env = {**os.environ, "OMP_THREAD_LIMIT": str(threads)}

    def version(self) -> str:
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return (out.stdout or out.stderr).splitlines()[0]

    def __call__(self, img: np.ndarray) -> Output:
        ok, png = cv2.imencode(".png", img)  # lossless hand-over through stdin; the image is decoded once
        if not ok:
            raise ValueError("could not encode the image for tesseract")
        t0 = time.perf_counter()
        proc = subprocess.run([self.binary, "stdin", "stdout", "--psm", str(self.psm), "-l", self.lang, "tsv"],
                              input=png.tobytes(), capture_output=True, env=self.env)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"tesseract failed: {proc.stderr.decode(errors='replace')[-500:]}")
        words = Regions([], [])
        reader = csv.DictReader(io.StringIO(proc.stdout.decode("utf-8")), delimiter="\t", quoting=csv.QUOTE_NONE)
        for row in reader:
            text = (row.get("text") or "").strip()
            if row["level"] != "5" or not text:
                continue
            x, y, bw, bh = (float(row[k]) for k in ("left", "top", "width", "height"))
            words.polygons.append(np.array([[x, y], [x + bw, y], [x + bw, y + bh], [x, y + bh]]))
            words.texts.append(text)
            words.dont_care.append(False)
        return Output(words, words, {"pipeline": elapsed}, words)  # Tesseract outputs words: all views coincide


def build(model_cfg: Any, threads: int) -> PPOCREngine | TesseractEngine:
    if model_cfg.engine == "ppocr":
        return PPOCREngine(model_cfg.version, dict(model_cfg.det), model_cfg.text_score, model_cfg.use_cls, threads)
    if model_cfg.engine == "tesseract":
        return TesseractEngine(model_cfg.psm, model_cfg.lang, threads)
    raise ValueError(f"unknown engine '{model_cfg.engine}'; valid: ppocr, tesseract")
