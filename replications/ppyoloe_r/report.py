"""PP-YOLOE-R's page as data (``build``): the loss / angle-head ablation on procedural rotated objects with its
two claims (paper.yaml's specs judged by shared.claims: paired difference of test mAP by seed, alternative minus the
paper's setting), the learning curve, the DOTA example figure, and the architecture table (ours vs the README) from
the architecture.json that ``python -m replications.ppyoloe_r.architecture`` writes beside the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from replications.ppyoloe_r.architecture import FILE_NAME as ARCHITECTURE_FILE
from replications.ppyoloe_r.model import PPYOLOER
from replications.ppyoloe_r.train import weights_path
from shared.claims import load_claims, paper_claims
from shared.data import DataError
from shared.report.blocks import commit_text, interval, pyplot
from shared.report.figures import Panel, Plot, curve_series, draw
from shared.report.paper_hook import Block, Claim, Figure, PaperReport, PaperResults, Table
from shared.stats import summarize

PAPER = Path(__file__).with_name("paper.yaml")
DATASET, BASE = "synthetic_rotated", "ppyoloe_r"
ABLATION_MODELS = (BASE, "ppyoloe_r_smoothl1", "ppyoloe_r_direct_angle")
LABELS = {"ppyoloe_r": "ProbIoU + DFL angle (paper)", "ppyoloe_r_smoothl1": "smooth-L1 (x,y,w,h,θ) + DFL angle",
          "ppyoloe_r_direct_angle": "ProbIoU + direct angle"}
DOTA_FIGURE = "dota_examples.png"


def by_alternative(claims: list[Claim]) -> dict[str, tuple[Claim, dict[str, Any]]]:
    """Each ablated model's verdict with its spec's judge: {alternative arm: (claim, judge)}."""
    judges = {s.id: s.judge for s in load_claims(PAPER, "ppyoloe_r")}
    return {judges[c.id]["arms"][0]: (c, judges[c.id]) for c in claims}


def ablation(recs: dict[str, dict], verdicts: dict[str, tuple[Claim, dict[str, Any]]]) -> tuple[Table, dict[str, Any]]:
    """One row per setting: mean ± std over seeds, the seeds' values, its claim's paired difference, wall time."""
    rows, data = [], {}
    for name in (m for m in ABLATION_MODELS if m in recs):
        per = {r["seed"]: r["metrics"]["test_map"] for r in recs[name]["runs"]}
        s = summarize(list(per.values()))
        claim = verdicts.get(name, (None,))[0]
        diff = None if claim is None or claim.interval is None else \
            {"mean": claim.effect, "low": claim.interval[0], "high": claim.interval[1], "n": claim.n}
        wall = float(np.mean([r["wall_seconds"] for r in recs[name]["runs"]]))
        rows.append([f"{LABELS[name]} (`{name}`)", f"{s['mean']:.2f} ± {s['std']:.2f}", s["n"],
                     ", ".join(f"{v:.2f}" for v in per.values()),
                     "" if diff is None else f"{diff['mean']:+.2f} {interval(diff['low'], diff['high'], signed=True)}",
                     f"{wall:.0f}"])
        data[name] = {"per_seed": per, "mean": s["mean"], "std": s["std"], "n": s["n"], "paired_diff": diff,
                      "wall_s_per_seed": wall}
    header = ["setting", "test mAP mean ± std", "seeds", "per seed", "paired diff vs paper's setting [95% CI]",
              "wall s / seed"]
    return Table(header, rows), data


def noise_floor(base: dict[int, float], verdicts: dict[str, tuple[Claim, dict[str, Any]]]) -> str:
    """The paper's setting's seed spread, and whether the README's DFL-angle gain is within this run's resolution."""
    text = (f"Noise floor: the paper's setting varies by {np.std(list(base.values()), ddof=1):.2f} mAP (std over "
            f"{len(base)} seeds); a paired difference is resolved only when its 95% interval excludes 0.")
    claim, judge = verdicts.get("ppyoloe_r_direct_angle", (None, {}))
    gain = (judge.get("options") or {}).get("published_gain")
    if claim is None or claim.interval is None or gain is None:
        return text
    half = claim.interval[1] - claim.effect
    return text + (f" The paper's DFL-angle gain (+{gain} mAP on DOTA, README appendix) is "
                   + (f"below this run's resolution (± {half:.2f}): it is neither confirmed nor refuted here."
                      if half > gain else f"within this run's resolution (± {half:.2f})."))


def architecture_blocks(arch: dict | None) -> list[Block]:
    head = "## Architecture: ours vs the official README"
    if arch is None:
        return [head, f"No {ARCHITECTURE_FILE} beside these results: `python -m replications.ppyoloe_r.architecture "
                      "<this folder>` counts it (seconds, on the meta device)."]
    intro = ("Trainable parameters after re-parameterisation (every RepVGG block folded into one 3x3 conv; BN running "
             "statistics and the fixed angle projection are not trainable) and FLOPs at 1024 x 1024 = 2 x multiply-adds "
             "of convolutions and matrix products (`torch.utils.flop_counter`; BN, activations, pooling and adds are not "
             "counted). Built from `replications/ppyoloe_r/model.py`, counted on the meta device. README: "
             "`configs/rotate/ppyoloe_r/README.md` model zoo; Paddle: the official code (paddledet 2.6.0) counted the same "
             f"way (fact sheet). Written to {ARCHITECTURE_FILE} by `python -m replications.ppyoloe_r.architecture`.")
    header = ["model", "params train form (M)", "params deploy (M)", "README params (M)", "equal at 0.01 M",
              "FLOPs ours (G)", "README FLOPs (G)", "ours vs README", "Paddle conv FLOPs (G)"]
    rows = [[r["model"], f"{r['params_train_m']:.2f}", f"{r['params_m']:.4f}", r["readme_params_m"],
             "yes" if r["params_equal"] else "NO", f"{r['flops_g']:.2f}", r["readme_flops_g"],
             "" if r["flops_rel_diff"] is None else f"{100 * r['flops_rel_diff']:+.2f} %", r["paddle_flops_g"]]
            for r in arch["rows"]]
    env = arch["environment"]
    note = f"{commit_text(env).capitalize()}, torch {env['versions'].get('torch')}, {arch['seconds']} s."
    return [head, intro, Table(header, rows, note=note)]


def plot_curve(curves: list[tuple[int, list[dict]]]) -> Plot:
    return Plot([Panel("PP-YOLOE-R-s from scratch, procedural data", "optimizer step (batch 8)", "val mAP (%)",
                       [curve_series(f"val mAP, seed {seed}", curve, "step", "map", "o-") for seed, curve in curves],
                       twin=[curve_series("seconds", curve, "step", "seconds", "s--", "grey") for _, curve in curves],
                       twin_ylabel="training seconds (one core)", legend=10, legend_loc="lower right")], panel_size=(5.5, 3.4))


def plot_dota_examples(weights: Path, images: dict[str, Path], labels: dict[str, Any]) -> Any:
    """Detections of the synthetic-trained model on the two real DOTA example images, through the devkit path
    (patches of the training image size, merge with polygon NMS): a picture of the pipeline, not a metric."""
    from PIL import Image

    from replications.ppyoloe_r.dota_protocol import detect_large
    from replications.ppyoloe_r.synthetic import CLASS_NAMES

    plt = pyplot()
    saved = torch.load(weights, map_location="cpu")
    model = PPYOLOER(saved["size"], num_classes=len(CLASS_NAMES), angle=saved["angle"])
    model.load_state_dict(saved["state_dict"])
    size = saved["image_size"]
    dets = detect_large(model.eval(), images, CLASS_NAMES, size=size, gap=size // 4, score_threshold=0.5)
    fig, axes = plt.subplots(1, len(images), figsize=(6 * len(images), 6), dpi=90)
    colours = plt.cm.tab10(np.arange(len(CLASS_NAMES)))
    dropped = 0
    for ax, (stem, p) in zip(np.atleast_1d(axes), images.items()):
        with Image.open(p) as im:
            arr = np.asarray(im.convert("RGB"))
        ax.imshow(arr)
        for poly in labels[stem].polys:
            ax.fill(poly[0::2], poly[1::2], fill=False, edgecolor="white", linewidth=0.6)
        for k, c in enumerate(CLASS_NAMES):
            for image, _score, poly in dets.get(c, []):
                if image != stem:
                    continue
                pts = poly.reshape(4, 2)
                if max(np.linalg.norm(pts[1] - pts[0]), np.linalg.norm(pts[2] - pts[1])) > size:
                    dropped += 1  # larger than a whole training image: out of the training distribution
                    continue
                ax.fill(poly[0::2], poly[1::2], fill=False, edgecolor=colours[k], linewidth=1.0)
        ax.set_xlim(0, arr.shape[1])
        ax.set_ylim(arr.shape[0], 0)
        ax.set_title(f"{stem}: white = DOTA labels, colour = detections (score > 0.5)", fontsize=9)
        ax.axis("off")
    handles = [plt.Line2D([], [], color=colours[k], label=c) for k, c in enumerate(CLASS_NAMES)]
    fig.legend(handles=handles, loc="lower center", ncol=len(CLASS_NAMES), fontsize=8)
    fig.suptitle("Synthetic-trained PP-YOLOE-R-s on real DOTA example images: the split / merge path, not a metric\n"
                 f"({size}-px patches, gap {size // 4}; {dropped} detections longer than a patch not drawn)", fontsize=10)
    return fig


def dota_block(folder: Path, scale: str, seed: int) -> Block | None:
    """The DOTA example figure: drawn from the curve run's weights (outputs/, never committed) at full scale when
    they and the example images are here (hundreds of patches: a smoke run leaves it out); else the figure
    already beside the results, as it is; else nothing."""
    weights = weights_path(DATASET, scale, seed)
    if scale == "full" and weights.exists():
        from replications.ppyoloe_r import dota_data

        try:
            images, labels = dota_data.example_images(), dota_data.example_labels()
        except DataError as exc:  # an illustration: say why it is not redrawn, keep the rest of the page
            print(f"note: DOTA example figure not redrawn: {exc}")
        else:
            return Figure(DOTA_FIGURE, draw=lambda: plot_dota_examples(weights, images, labels), caption="dota_examples")
    if (folder / DOTA_FIGURE).exists():
        return f"![dota_examples]({DOTA_FIGURE})"
    return None


def build(results: PaperResults) -> PaperReport | None:
    """The page from the synthetic_rotated records of the ablation; None without any of them."""
    recs = {m: r for m, r in results.models(DATASET).items() if m in ABLATION_MODELS}
    if not recs:
        return None
    claims = paper_claims(PAPER, results)
    verdicts = by_alternative(claims)
    table, data = ablation(recs, verdicts)
    first = recs[next(m for m in ABLATION_MODELS if m in recs)]
    d, m, scale = first["config"]["dataset"], first["config"]["model"], first.get("scale", "full")
    protocol = first["config"].get("paper", {}).get("protocol", {})
    blocks: list[Block] = [
        "# PP-YOLOE-R: loss / angle-head ablation on procedural rotated objects, architecture vs the release",
        "## Ablation on procedural rotated objects (s model, from scratch, CPU)",
        f"Data: `synthetic_rotated` ({d['n_train']} training images of {d['image_size']} px, test {d['n_test']} images, "
        f"5 classes, two near-square), {m['steps']} AdamW steps of batch {m['batch_size']}; metric: DOTA Task-1 mAP "
        "(polygon IoU > 0.5, VOC-07 11-point AP, mean over classes) by `replications/ppyoloe_r/dota_eval.py`. Paired "
        "difference: same seed (same batch order and augmentation), minus the paper's setting; interval: Student t "
        "over seeds.", table]
    base = data.get(BASE, {}).get("per_seed", {})
    if len(base) > 1:
        blocks.append(noise_floor(base, verdicts))
    curves = [(r["seed"], r["train"]["curve"]) for r in recs.get(BASE, {}).get("runs", []) if r["train"].get("curve")]
    if curves:
        seed, curve = curves[0]
        points = ", ".join(f"{c['step']}: {c['map']:.1f}" for c in curve)
        blocks.append(f"Learning curve (`ppyoloe_r`, seed {seed}, val mAP on {d['n_val']} images, step: mAP): {points}; "
                      "the cosine schedule ends at the last step, so the curve says where this budget stops, not where "
                      "the model would converge (learning_curve.png).")
    secs = [r["train"]["train_seconds"] for rec in recs.values() for r in rec["runs"]]
    blocks.append(f"Cost: {np.mean(secs):.0f} s of training per run on average ({min(secs):.0f}-{max(secs):.0f} s, one "
                  f"thread, shared machine), {m['steps'] / np.mean(secs):.2f} steps/s; the whole grid "
                  f"{sum(rec['wall_seconds'] for rec in recs.values()) / 60:.1f} min.")
    if curves:
        blocks.append(Figure("learning_curve.png", draw=lambda: draw(plot_curve(curves)), caption="learning_curve"))
    if (dota := dota_block(results.folder, scale, int(protocol.get("curve_seed", 1)))) is not None:
        blocks.append(dota)
    arch = results.side_file(ARCHITECTURE_FILE)
    blocks += architecture_blocks(arch)
    return PaperReport(blocks=blocks, claims=claims,
                       data={"ablation": data, "curve": curves[0][1] if curves else [],
                             "architecture": arch["rows"] if arch else None})
