"""PP-PicoDet layout detection as PP-StructureV2's inference runs it (ppstructure/layout/predict_layout.py and
ppocr/postprocess/picodet_postprocess.py at the PP-StructureV2 release, read side by side):

- input: the BGR page resized (no aspect ratio kept) to 800 x 608 (h x w), x/255, ImageNet mean/std, CHW;
- the head has one (scores, distributions) pair per FPN level, strides 8, 16, 32, 64; each location predicts
  per-class sigmoid scores and, per box side, a distribution over reg_max + 1 = 8 bins (DFL): the side's distance
  is the softmax-expected bin times the stride, from the cell centre ((i + 0.5) * stride);
- per level the 1,000 locations with the highest best-class score are kept; per class, scores above the
  threshold go through hard NMS (200 highest candidates, IoU > 0.5 suppressed, at most 100 kept);
- boxes are mapped back to the page by the two resize factors and clipped.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from replications.ocr.preprocess import IMAGENET_MEAN, IMAGENET_STD

STRIDES = (8, 16, 32, 64)
INPUT_HW = (800, 608)


def preprocess(img: np.ndarray, size: tuple[int, int] = INPUT_HW) -> np.ndarray:
    x = cv2.resize(img, (size[1], size[0])).astype(np.float32) / 255.0
    x = (x - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def centers(input_hw: tuple[int, int], stride: int) -> np.ndarray:
    """(n, 2) x, y centres of one level's cells, row-major; a partial last row/column counts (ceil)."""
    h, w = (int(np.ceil(s / stride)) for s in input_hw)
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(xs.ravel() + 0.5) * stride, (ys.ravel() + 0.5) * stride], axis=1)


def dfl_distances(dist: np.ndarray, stride: int) -> np.ndarray:
    """(n, 4 * (reg_max + 1)) logits -> (n, 4) distances left, top, right, bottom in input pixels."""
    bins = dist.shape[1] // 4
    p = softmax(dist.reshape(-1, 4, bins), axis=2)
    return (p * np.arange(bins)).sum(axis=2) * stride


def iou_one(boxes: np.ndarray, box: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    lt = np.maximum(boxes[:, :2], box[:2])
    rb = np.minimum(boxes[:, 2:], box[2:])
    inter = np.clip(rb - lt, 0, None).prod(axis=1)
    area = np.clip(boxes[:, 2:] - boxes[:, :2], 0, None).prod(axis=1)
    area0 = np.clip(box[2:] - box[:2], 0, None).prod()
    return inter / (area + area0 - inter + eps)


def hard_nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, keep_top_k: int = 100,
             candidates: int = 200) -> np.ndarray:
    """Indices kept: highest score first, suppressing IoU > iou_threshold, among the `candidates` best."""
    order = list(np.argsort(scores, kind="stable")[-candidates:])
    keep = []
    while order:
        cur = order.pop()
        keep.append(cur)
        if len(keep) == keep_top_k or not order:
            break
        rest = np.asarray(order)
        order = list(rest[iou_one(boxes[rest], boxes[cur]) <= iou_threshold])
    return np.asarray(keep, int)


@dataclass
class Detection:
    label: str
    score: float
    box: tuple[float, float, float, float]  # x1 y1 x2 y2, page pixels


def decode(outputs: list[np.ndarray], input_hw: tuple[int, int], page_hw: tuple[int, int], labels: list[str],
           score_threshold: float, nms_threshold: float, nms_top_k: int = 1000, keep_top_k: int = 100
           ) -> list[Detection]:
    """PicoDet post-processing of one image: outputs = per-level scores then per-level distributions."""
    levels = len(outputs) // 2
    all_boxes, all_scores = [], []
    for lvl in range(levels):
        stride = STRIDES[lvl]
        score = outputs[lvl][0]
        dist = outputs[lvl + levels][0]
        ctr = centers(input_hw, stride)
        if len(ctr) != len(score):
            raise ValueError(f"level {lvl}: {len(score)} predictions for {len(ctr)} cells of stride {stride}")
        top = np.argsort(score.max(axis=1), kind="stable")[::-1][:nms_top_k]
        d = dfl_distances(dist[top], stride)
        c = ctr[top]
        all_boxes.append(np.concatenate([c - d[:, :2], c + d[:, 2:]], axis=1))
        all_scores.append(score[top])
    boxes, scores = np.concatenate(all_boxes), np.concatenate(all_scores)
    sy, sx = input_hw[0] / page_hw[0], input_hw[1] / page_hw[1]
    out = []
    for cls in range(scores.shape[1]):
        mask = scores[:, cls] > score_threshold
        if not mask.any():
            continue
        b, s = boxes[mask], scores[mask, cls]
        for i in hard_nms(b, s, nms_threshold, keep_top_k):
            x1, y1, x2, y2 = np.clip(b[i], 0, [input_hw[1], input_hw[0]] * 2) / [sx, sy, sx, sy]
            out.append(Detection(labels[cls], float(s[i]), (float(x1), float(y1), float(x2), float(y2))))
    return out


class PicoDet:
    def __init__(self, model_path: str, threads: int, score_threshold: float, nms_threshold: float):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
        self.labels = self.session.get_modelmeta().custom_metadata_map["character"].split("\n")
        self.input_hw = tuple(self.session.get_inputs()[0].shape[2:])
        self.score_threshold, self.nms_threshold = score_threshold, nms_threshold

    def __call__(self, img: np.ndarray) -> tuple[list[Detection], float]:
        t0 = time.perf_counter()
        outs = self.session.run(None, {self.session.get_inputs()[0].name: preprocess(img, self.input_hw)})
        dets = decode(outs, self.input_hw, img.shape[:2], self.labels, self.score_threshold, self.nms_threshold)
        return dets, time.perf_counter() - t0


def architecture(model_path: Path) -> dict:
    """What the released ONNX graph says about the model (checked against the fact sheet in the report)."""
    import onnx
    import onnxruntime as ort

    graph = onnx.load(str(model_path)).graph
    ops = Counter(n.op_type for n in graph.node)
    convs = Counter()
    for n in graph.node:
        if n.op_type == "Conv":
            a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
            convs[f"{'dw' if a.get('group', 1) > 1 else 'conv'}{a['kernel_shape'][0]}x{a['kernel_shape'][1]}"] += 1
    params = 0  # paddle2onnx stores the weights as Constant nodes
    for n in graph.node:
        if n.op_type == "Constant":
            t = onnx.helper.get_attribute_value(n.attribute[0])
            if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) > 0:
                params += int(np.prod(t.dims))
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    outs = sess.get_outputs()
    levels = len(outs) // 2
    return {
        "input_hw": list(sess.get_inputs()[0].shape[2:]),
        "fpn_levels": levels,
        "cells_per_level": [int(o.shape[1]) for o in outs[:levels]],
        "classes": int(outs[0].shape[2]),
        "reg_max": int(outs[levels].shape[2]) // 4 - 1,
        "labels": sess.get_modelmeta().custom_metadata_map["character"].split("\n"),
        "conv_kinds": dict(convs),
        # H-Swish (x * clip(x + 3, 0, 6) / 6) appears as Clip + Mul + Div; SE blocks as GlobalAveragePool + HardSigmoid
        "hardswish": ops.get("Clip", 0),
        "se_blocks": min(ops.get("GlobalAveragePool", 0), ops.get("HardSigmoid", 0)),
        "parameters": params,
        "file_bytes": model_path.stat().st_size,
    }
