"""Ring-memory inference on one GPU: sections in pinned host memory, copied into k GPU slots on a second CUDA
stream while the compute stream runs the section before (the same ring as on CPU: ring.RingMemory).

    python -m replications.moesys.gpu_ring                       # one H200: ~3-5 min, writes the JSON below
    python -m replications.moesys.gpu_ring --device cpu --size tiny --out-dir outputs/ring   # CPU smoke test

Writes <out-dir>/ring_<gpu>.json (default out-dir: outputs/results/moesys/gpu; to commit a measurement, pass
--out-dir results/moesys/gpu, where the page's report() reads it): per setting, fully resident vs
load-then-compute (k = 1) vs ring k = 2..4, measured tokens/s (CUDA-synchronised wall time, median of the
repeats) beside the modelled sum_i max(compute_i, load_i+k-1) from CUDA-event per-section times, the achieved
host -> GPU bandwidth, and whether every ring output was bit-identical to the resident model's. No network, no extra packages.
NOT RUN in this repository yet (no GPU in the session that wrote it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from replications.moesys import ringbench
from shared.atomic import write_json_atomic
from shared.paths import HAND_RUNS
from shared.runinfo import environment

OUT_DIR = HAND_RUNS / "moesys" / "gpu"  # a run by hand; the committed one goes to results/moesys/gpu

SIZES = {
    # 8 blocks of d_model 2048 with 8 experts of hidden 4096: 0.60 GB per section in fp32 (4.8 GB in all, kept
    # resident too for the baseline). Settings span load-bound to compute-bound for a PCIe host link.
    "h200": {"d_model": 2048, "heads": 16, "layers": 8, "sections": 8, "ffn_hidden": 4096, "num_experts": 8,
             "vocab": 32000, "settings": [[1, 1024], [4, 1024], [16, 1024]], "passes": 4, "repeats": 3,
             "ks": [1, 2, 3, 4]},
    "tiny": {"d_model": 32, "heads": 4, "layers": 4, "sections": 4, "ffn_hidden": 64, "num_experts": 4,
             "vocab": 64, "settings": [[1, 16]], "passes": 2, "repeats": 1, "ks": [1, 2]},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (the measurement) or cpu (a smoke test of the script)")
    parser.add_argument("--size", default="h200", choices=sorted(SIZES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR,
                        help=f"folder of ring_<device name>.json (default: {OUT_DIR})")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no GPU (a CPU smoke test: --device cpu --size tiny)",
              file=sys.stderr)
        return 2
    p = {**SIZES[args.size], "gate": "switch"}
    t0 = time.perf_counter()
    model = ringbench.build_model(p, args.seed, str(device))
    stores = ringbench.gpu_stores(model)
    print(f"model built and packed in {time.perf_counter() - t0:.1f} s; section "
          f"{stores['host'][0].layout.stride / 1e9:.2f} GB, {p['sections']} sections")
    out = ringbench.bench(p, model, stores, device, args.seed)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    pinned = bool(stores["host"][0].host.is_pinned()) if torch.cuda.is_available() else False
    record = {"what": "ring-memory inference, host memory -> GPU slots on a second CUDA stream", "device": name,
              "pinned_host_memory": pinned, "params": p, "section_bytes": stores["host"][0].layout.stride,
              "wall_seconds": round(time.perf_counter() - t0, 1), "environment": environment(), **out}
    slug = "".join(ch if ch.isalnum() else "_" for ch in name.lower()).strip("_")
    path = args.out_dir / f"ring_{slug}.json"
    write_json_atomic(path, record)
    for s in out["settings"]:
        print(f"batch {s['batch']} x {s['seq_len']}:")
        for r in s["rows"]:
            model_s = "-" if r["modelled_tokens_per_s"] is None else f"{r['modelled_tokens_per_s']:.0f}"
            print(f"  {r['config']:<18} measured {r['tokens_per_s']:>10.0f} tok/s   modelled {model_s:>10} tok/s")
    print(f"outputs bit-identical to resident: {out['exact']}; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
