"""SLANet structure decoding, ground-truth structure tokens, TableMatch cell matching (planted cases), and the
released model on the authors' 20 tables when it is in the store."""

from __future__ import annotations

import numpy as np
import pytest

from replications.ppstructurev2 import slanet

CHARACTER = "\n".join(["<thead>", "<tr>", "<td>", "</td>", "</tr>", "</thead>", "<tbody>", "</tbody>", "<td",
                       ' colspan="2"', ">"])


def test_merged_dictionary_drops_td_and_adds_the_merged_token():
    d = slanet.merged_dictionary(CHARACTER)
    assert d[0] == "sos" and d[-1] == "eos" and "<td>" not in d and d[-2] == "<td></td>"
    assert len(d) == 10 + 1 + 2


def test_decode_stops_at_eos_skips_sos_and_scales_boxes_per_cell_token():
    d = slanet.merged_dictionary(CHARACTER)
    seq = ["sos", "<tr>", "<td></td>", "<td", ' colspan="2"', ">", "</td>", "</tr>", "eos", "<tr>"]
    probs = np.zeros((len(seq), len(d)))
    for i, tok in enumerate(seq):
        probs[i, d.index(tok)] = 1.0
    locs = np.tile(np.array([0.1, 0.2, 0.5, 0.6]), (len(seq), 1))
    tokens, boxes = slanet.decode(probs, locs, d, (100, 200))  # h=100, w=200
    assert tokens == ["<tr>", "<td></td>", "<td", ' colspan="2"', ">", "</td>", "</tr>"]
    assert boxes.shape == (2, 4)  # one per <td></td> and <td
    assert boxes[0].tolist() == pytest.approx([20, 20, 100, 60])


def test_preprocess_scales_long_side_to_488_and_pads_with_zeros():
    img = np.full((100, 244, 3), 255, np.uint8)
    x, shape = slanet.preprocess(img)
    assert x.shape == (1, 3, 488, 488) and shape == (100, 244)
    assert x[0, :, 199, 0].round(3).tolist() == pytest.approx([2.249, 2.429, 2.64], abs=1e-3)  # white, normalised
    assert np.all(x[0, :, 200:, :] == 0)  # 100 * 2 = 200 rows of image, the rest padding


def test_ground_truth_structure_keeps_thead_tbody_and_text_with_angle_brackets():
    html = ('<html><body><table><thead><tr><td><b>A</b></td><td colspan="2">B</td></tr></thead>'
            "<tbody><tr><td><0.001</td><td></td><td>c</td></tr></tbody></table></body></html>")
    tokens, cells = slanet.structure_of_html(html)
    assert tokens == ["<thead>", "<tr>", "<td></td>", "<td", ' colspan="2"', ">", "</td>", "</tr>", "</thead>",
                      "<tbody>", "<tr>", "<td></td>", "<td></td>", "<td></td>", "</tr>", "</tbody>"]
    assert cells == ["<b>A</b>", "B", "<0.001", "", "c"]
    assert slanet.to_html(tokens, cells) == html
    assert slanet.is_complex(tokens)


def test_match_prefers_iou_then_l1_and_drops_boxes_above_the_table():
    cells = np.array([[0, 10, 50, 20], [50, 10, 100, 20]], float)
    structure = slanet.Structure(["<tr>", "<td></td>", "<td></td>", "</tr>"], cells)
    ocr = np.array([[0, 0, 100, 8],      # caption above every cell: dropped
                    [2, 11, 20, 19],     # inside cell 0
                    [22, 11, 45, 19],    # also cell 0, joined with a space
                    [60, 11, 90, 19]], float)
    html = slanet.fill(structure, ocr, ["Caption", "ab", "cd", "ef"])
    assert html == "<html><body><table><tr><td>ab cd</td><td>ef</td></tr></table></body></html>"
    # no overlap with any cell: IoU ties at 0, the L1 corner distance decides
    assert slanet.match_cells(np.array([[101, 10, 120, 20]], float), cells) == {1: [0]}


def test_l1_distance_adds_the_nearer_corner():
    assert slanet.l1_distance(np.array([0, 0, 10, 10.]), np.array([1, 1, 14, 14.])) == 2 + 8 + 2


@pytest.mark.slow
def test_released_slanet_on_the_mini_set(tmp_path):
    import os

    from replications.ocr import models
    from replications.ppstructurev2 import data, run
    from replications.ppstructurev2.teds import teds

    if not models.available("slanet_en") or not os.environ.get("REPLICATIONS_MIRROR"):
        pytest.skip("SLANet is not in the store (python -m replications.ocr.models) or no mirror")
    rows = data.load_table_mini()
    wrong = [r for r in rows if r["image_id"] == "PMC2915972_003_00.png"]  # a complex table the model gets wrong
    rows = rows[:2] + wrong
    net = slanet.SLANet(str(models.model_path("slanet_en")), 1)
    exact, scores = [], []
    for r in rows:
        s = net(run.read_image(r["image_path"]))
        exact.append(s.tokens == r["structure"])
        scores.append(teds(slanet.to_html(s.tokens), r["html"], structure_only=True))
    assert exact == [True, True, False]
    assert scores[:2] == [1.0, 1.0] and 0.9 < scores[2] < 1.0
