"""The release-settings check reads argparse defaults and the DB normalisation from a release's code,
and reports a config that differs from them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from replications.ppocrv3.release_settings import argparse_defaults, compare, db_normalize

UTILITY = '''
import argparse
def init_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--det_limit_side_len", type=float, default=960)
    parser.add_argument("--det_limit_type", type=str, default='max')
    parser.add_argument("--det_db_thresh", type=float, default=0.3)
    parser.add_argument("--det_db_box_thresh", type=float, default=0.6)
    parser.add_argument("--det_db_unclip_ratio", type=float, default=1.5)
    parser.add_argument("--use_dilation", type=str2bool, default=False)
    parser.add_argument("--det_db_score_mode", type=str, default="fast")
    parser.add_argument("--drop_score", type=float, default=0.5)
    parser.add_argument("--vis_font_path", type=str, default=os.path.join("a", "b"))
    return parser
'''
PREDICT_DET = '''
pre_process_list = [{'DetResizeForTest': {'limit_side_len': 960}},
                    {'NormalizeImage': {'std': [0.229, 0.224, 0.225], 'mean': [0.485, 0.456, 0.406],
                                        'scale': '1./255.', 'order': 'hwc'}}]
'''
CONFIG = """det:
  limit_side_len: 960
  limit_type: max
  mean: [0.485, 0.456, 0.406]
  std: [0.229, 0.224, 0.225]
  thresh: 0.3
  box_thresh: {box}
  unclip_ratio: 1.5
  use_dilation: false
  score_mode: fast
text_score: 0.5
"""


def test_argparse_defaults_reads_literals_and_skips_computed_ones() -> None:
    d = argparse_defaults(UTILITY)
    assert d["det_db_box_thresh"] == 0.6 and d["det_limit_type"] == "max" and d["use_dilation"] is False
    assert "vis_font_path" not in d


def test_db_normalize_reads_mean_and_std() -> None:
    assert db_normalize(PREDICT_DET) == {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    with pytest.raises(ValueError, match="NormalizeImage"):
        db_normalize("x = 1")


@pytest.mark.parametrize("box, all_same", [(0.6, True), (0.5, False)])
def test_compare_flags_a_config_that_differs(tmp_path: Path, box: float, all_same: bool) -> None:
    wheel = tmp_path / "paddleocr-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("paddleocr/tools/infer/utility.py", UTILITY)
        z.writestr("paddleocr/tools/infer/predict_det.py", PREDICT_DET)
    (tmp_path / "model").mkdir()
    config = tmp_path / "model" / "x.yaml"
    config.write_text(CONFIG.format(box=box))
    rows = compare("v3", wheel, config)
    assert len(rows) == 10
    assert all(r[-1] for r in rows) == all_same
    if not all_same:
        assert [r[2] for r in rows if not r[-1]] == ["det.box_thresh"]
