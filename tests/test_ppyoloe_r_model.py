"""PP-YOLOE-R architecture: parameter counts equal the README's, re-parameterisation keeps outputs, FLOPs
within 1 % of the README, angle decoding on hand-computed cases."""

from __future__ import annotations

import json
import math

import pytest
import torch

from replications.ppyoloe_r import architecture
from replications.ppyoloe_r.architecture import count
from replications.ppyoloe_r.loss import angle_dfl
from replications.ppyoloe_r.model import PPYOLOER, RepVGGBlock, reparameterize, trainable_parameters
from shared.paths import RESULTS

README = {"s": (8.09, 43.46), "m": (23.96, 127.00), "l": (53.29, 281.65), "x": (100.27, 529.82)}


@pytest.mark.parametrize("size", list(README))
def test_deploy_parameters_equal_readme(size):
    with torch.device("meta"):  # shapes only: the x model's 100 M parameters cost no memory
        model = PPYOLOER(size).eval()
        before = trainable_parameters(model)
        reparameterize(model)
    assert round(trainable_parameters(model) / 1e6, 2) == README[size][0]
    assert before > trainable_parameters(model)  # the 1x1 branches and their BN are gone


@pytest.mark.parametrize("size", ["s", "x"])
def test_flops_within_one_percent_of_readme(size):
    flops = count(size)["flops_g"]  # meta-device forward at 1024 x 1024: no arithmetic is done
    assert abs(flops / README[size][1] - 1) < 0.01


def test_committed_architecture_file_is_what_the_tool_counts():
    """results/ppyoloe_r/architecture.json (read by the page) holds today's counts of model.py, every size."""
    committed = json.loads((RESULTS / "ppyoloe_r" / architecture.FILE_NAME).read_text())
    assert committed["rows"] == architecture.rows()
    assert [r["model"] for r in committed["rows"]] == [f"ppyoloe_r_{s}" for s in README]
    assert all(r["params_equal"] and abs(r["flops_rel_diff"]) < 0.01 for r in committed["rows"])


def test_architecture_tool_writes_the_sizes_asked_to_the_folder_given(tmp_path, capsys):
    assert architecture.main([str(tmp_path), "--sizes", "s"]) == 0
    written = json.loads((tmp_path / architecture.FILE_NAME).read_text())
    assert [r["model"] for r in written["rows"]] == ["ppyoloe_r_s"] and written["rows"][0]["readme_params_m"] == 8.09
    assert written["image"] == 1024 and "git_commit" in written["environment"]
    with pytest.raises(SystemExit):
        architecture.main([str(tmp_path), "--sizes", "xl"])
    assert "--sizes must name some of s, m, l, x" in capsys.readouterr().err


def _randomise_bn(model: torch.nn.Module, gen: torch.Generator) -> None:
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
        if isinstance(m, RepVGGBlock) and m.alpha is not None:
            m.alpha.data.fill_(0.37)  # a gate away from its initial 1: the fold must scale the 1x1 branch


def test_reparameterized_model_gives_the_same_outputs():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = PPYOLOER("s", num_classes=3)
    _randomise_bn(model, gen)
    model.eval()
    x = torch.randn(2, 3, 64, 64, generator=gen)
    with torch.no_grad():
        before = model(x)
        reparameterize(model)
        after = model(x)
    assert not any(isinstance(m, RepVGGBlock) and m.deploy is None for m in model.modules())
    for key in ("cls_logits", "reg", "angle_logits"):
        torch.testing.assert_close(after[key], before[key], rtol=1e-4, atol=1e-4)


def test_output_shapes_cover_three_strides():
    model = PPYOLOER("s", num_classes=4).eval()
    with torch.no_grad():
        out = model(torch.zeros(1, 3, 64, 64))
    n = (64 // 8) ** 2 + (64 // 16) ** 2 + (64 // 32) ** 2
    assert out["cls_logits"].shape == (1, n, 4) and out["angle_logits"].shape == (1, n, 91)
    assert sorted(set(out["strides"].flatten().tolist())) == [8.0, 16.0, 32.0]


def test_dfl_angle_decoding_hand_cases():
    head = PPYOLOER("s", num_classes=1).head
    one_hot = torch.full((3, 91), -1e4)
    one_hot[0, 45] = 0.0  # all mass on bin 45 -> pi/4
    one_hot[1, 10] = one_hot[1, 11] = 0.0  # half on bins 10 and 11 -> 10.5 degrees
    one_hot[2, 90] = 0.0  # the last bin is pi/2
    got = head.decode_angle(one_hot)
    torch.testing.assert_close(got, torch.tensor([math.pi / 4, math.radians(10.5), math.pi / 2]))
    # the official initial bias [10, 1, ..., 1]: e^10 / (e^10 + 90 e) of the mass on bin 0
    init = torch.tensor([10.0] + [1.0] * 90)
    expected = (math.e * sum(range(91)) * math.pi / 180) / (math.exp(10) + 90 * math.e)
    assert abs(float(head.decode_angle(init)) - expected) < 1e-6


def test_box_decoding_at_zero_offsets():
    head = PPYOLOER("s", num_classes=1).head
    out = {"reg": torch.zeros(1, 2, 4), "points": torch.tensor([[4.0, 4.0], [16.0, 48.0]]),
           "strides": torch.tensor([[8.0], [32.0]]), "angle_logits": torch.zeros(1, 2, 91)}
    boxes = head.decode(out)[0]
    # xy = point, wh = (elu(0) + 1) * stride = stride, uniform bins -> mean angle pi/4
    torch.testing.assert_close(boxes, torch.tensor([[4.0, 4.0, 8.0, 8.0, math.pi / 4], [16.0, 48.0, 32.0, 32.0, math.pi / 4]]))


def test_angle_dfl_targets_the_two_neighbouring_bins():
    theta = torch.tensor([math.radians(10.3)])
    best = torch.full((1, 91), -1e4)
    best[0, 10], best[0, 11] = math.log(0.7), math.log(0.3)  # the target distribution itself
    expected = -(0.7 * math.log(0.7) + 0.3 * math.log(0.3))  # its entropy: the minimum of the loss
    assert abs(float(angle_dfl(best, theta)) - expected) < 1e-3
    worse = best.clone()
    worse[0, 10], worse[0, 11] = math.log(0.5), math.log(0.5)
    assert float(angle_dfl(worse, theta)) > float(angle_dfl(best, theta))
    # theta = pi/2 is clipped to 89.99 bins (official), not sent past the last bin
    assert torch.isfinite(angle_dfl(torch.zeros(1, 91), torch.tensor([math.pi / 2])))
