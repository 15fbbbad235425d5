"""Text-detection and end-to-end scoring under the ICDAR 2015 (RRC) protocol, reused for FUNSD words.

Follows the RRC evaluation scripts for Challenge 4 (Task 4.1 "IoU" and Task 4.4 end-to-end, generic, no lexicon):
- a ground-truth region whose transcription is "###" is "don't care": never counted, never matched;
- a detection whose area lies more than 0.5 inside a don't-care region is dropped before matching;
- matching is one-to-one and greedy in (ground truth, detection) order, a pair needs IoU > 0.5 (the RRC
  scripts use a strict ">"; equality at exactly 0.5 is the only case where this differs from ">=");
- end-to-end: the box matching above is made first; a matched pair counts only if the transcriptions agree;
- precision/recall/Hmean are computed from counts summed over all images (not averaged per image).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein
from shapely.geometry import Polygon

from replications.ocr.regions import Regions

# RRC Task 4.4 SPECIAL_CHARACTERS: at most one of these may be dropped from each end of the ground truth.
RRC_SPECIAL = "!?.:,*\"()·[]/'"


@dataclass
class Counts:
    """Summed over images; ratios come from these, so they can be added across images."""

    gt_care: int = 0
    det_care: int = 0
    det_matched: int = 0  # box matches (detection protocol)
    e2e_matched: int = 0  # box matches whose transcription also agrees
    edit_distance: int = 0  # over box-matched pairs, against the ground-truth text
    edit_distance_caseless: int = 0  # the same after case folding (separates case errors from others)
    gt_chars: int = 0

    def __iadd__(self, other: Counts) -> Counts:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


def to_polygon(points: np.ndarray | Sequence[Sequence[float]]) -> Polygon:
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(pts) < 3:
        raise ValueError(f"a polygon needs at least 3 points, got {len(pts)}")
    poly = Polygon(pts)
    # Self-intersecting quads occur in IC15 ground truth; buffer(0) is shapely's standard repair.
    return poly if poly.is_valid else poly.buffer(0)


def iou_matrix(gt: list[Polygon], det: list[Polygon]) -> np.ndarray:
    """IoU of every (gt, det) pair; bounding boxes that do not overlap are skipped (IoU 0)."""
    out = np.zeros((len(gt), len(det)))
    if not gt or not det:
        return out
    gb = np.array([p.bounds for p in gt])
    db = np.array([p.bounds for p in det])
    overlap = ((gb[:, None, 0] < db[None, :, 2]) & (db[None, :, 0] < gb[:, None, 2])
               & (gb[:, None, 1] < db[None, :, 3]) & (db[None, :, 1] < gb[:, None, 3]))
    for i, j in zip(*np.nonzero(overlap)):
        inter = gt[i].intersection(det[j]).area
        union = gt[i].area + det[j].area - inter
        out[i, j] = inter / union if union > 0 else 0.0
    return out


def greedy_match(iou: np.ndarray, gt_ignore: Sequence[bool], det_ignore: Sequence[bool],
                 threshold: float = 0.5) -> list[tuple[int, int]]:
    """RRC one-to-one matching: for each gt in order, the first free detection with IoU > threshold."""
    gt_used = np.zeros(iou.shape[0], bool)
    det_used = np.zeros(iou.shape[1], bool)
    pairs = []
    for g in range(iou.shape[0]):
        if gt_ignore[g]:
            continue
        for d in range(iou.shape[1]):
            if not gt_used[g] and not det_used[d] and not det_ignore[d] and iou[g, d] > threshold:
                gt_used[g] = det_used[d] = True
                pairs.append((g, d))
    return pairs


def rrc_text_match(gt: str, det: str) -> bool:
    """RRC Task 4.4 end-to-end rule: case-insensitive; the ground truth may lose one special
    character (RRC_SPECIAL) at its start and/or its end; the detection is compared as is."""
    gt, det = gt.upper(), det.upper()
    if not gt:
        return False
    if gt == det:
        return True
    first, last = gt[0] in RRC_SPECIAL, gt[-1] in RRC_SPECIAL
    return ((first and gt[1:] == det) or (last and gt[:-1] == det)
            or (first and last and gt[1:-1] == det))


def exact_text_match(gt: str, det: str) -> bool:
    """Strict document rule (used for FUNSD): equal after Unicode NFKC and trimming surrounding spaces;
    case and punctuation count, because on a printed form they are part of the content."""
    norm = lambda s: unicodedata.normalize("NFKC", s).strip()  # noqa: E731
    return bool(norm(gt)) and norm(gt) == norm(det)


def score_image(gt: Regions, det: Regions, text_match: Callable[[str, str], bool],
                iou_threshold: float = 0.5, area_precision: float = 0.5) -> Counts:
    gt_polys = [to_polygon(p) for p in gt.polygons]
    det_polys = [to_polygon(p) for p in det.polygons]
    # A detection mostly inside a don't-care region is ignored (RRC AREA_PRECISION_CONSTRAINT).
    det_ignore = []
    care_free = [p for p, dc in zip(gt_polys, gt.dont_care) if dc]
    for d in det_polys:
        inside = max((d.intersection(p).area for p in care_free), default=0.0)
        det_ignore.append(d.area > 0 and inside / d.area > area_precision)
    pairs = greedy_match(iou_matrix(gt_polys, det_polys), gt.dont_care, det_ignore, iou_threshold)
    counts = Counts(gt_care=sum(not x for x in gt.dont_care), det_care=sum(not x for x in det_ignore),
                    det_matched=len(pairs))
    for g, d in pairs:
        counts.e2e_matched += bool(text_match(gt.texts[g], det.texts[d]))
        counts.edit_distance += Levenshtein.distance(gt.texts[g], det.texts[d])
        counts.edit_distance_caseless += Levenshtein.distance(gt.texts[g].casefold(), det.texts[d].casefold())
        counts.gt_chars += len(gt.texts[g])
    return counts


def prf(matched: int, n_gt: int, n_det: int) -> tuple[float, float, float]:
    """Precision, recall, Hmean as fractions; 0 where a denominator is 0 (RRC method-level rule)."""
    recall = matched / n_gt if n_gt else 0.0
    precision = matched / n_det if n_det else 0.0
    hmean = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, hmean


def summarise(counts: Counts) -> dict[str, float]:
    """Metrics in percent, as the field reports them."""
    dp, dr, dh = prf(counts.det_matched, counts.gt_care, counts.det_care)
    ep, er, eh = prf(counts.e2e_matched, counts.gt_care, counts.det_care)
    nan = float("nan")
    cer = counts.edit_distance / counts.gt_chars if counts.gt_chars else nan
    cer_caseless = counts.edit_distance_caseless / counts.gt_chars if counts.gt_chars else nan
    return {"test_det_precision": 100 * dp, "test_det_recall": 100 * dr, "test_det_hmean": 100 * dh,
            "test_e2e_precision": 100 * ep, "test_e2e_recall": 100 * er, "test_e2e_hmean": 100 * eh,
            "test_cer": 100 * cer, "test_cer_caseless": 100 * cer_caseless}
