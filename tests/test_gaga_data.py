"""GAGA's data layer: official splits, Tolokers from the mirror, clear offline errors for YelpChi/Amazon."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from replications.gaga import data as gdata
from shared.data import DataError
from shared.data.fetch import git_blob_id

MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data")


def test_official_split_sizes_and_amazon_exclusion():
    train, val, test = gdata.official_split(11944, seed=717, start=3305)
    labelled = 11944 - 3305
    assert (len(train), len(val)) == (int(0.4 * labelled), int(0.1 * labelled))
    assert len(train) + len(val) + len(test) == labelled
    allidx = np.concatenate([train, val, test])
    assert allidx.min() == 3305 and len(np.unique(allidx)) == labelled
    again = gdata.official_split(11944, seed=717, start=3305)
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again))


def test_row_normalize_is_the_official_rule():
    x = np.array([[1.0, 3.0], [0.0, 0.0]])
    np.testing.assert_allclose(gdata.row_normalize(x), [[1 / 4.01, 3 / 4.01], [0, 0]], rtol=1e-6)


def test_git_blob_id(tmp_path):
    f = tmp_path / "hello"
    f.write_bytes(b"hello\n")
    assert git_blob_id(f) == "ce013625030ba8dba906f756967f9e9ca394464a"  # `git hash-object`


def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(MIRROR))
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("no network (test)")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)


@pytest.mark.parametrize("name,spec", [("yelpchi", gdata.YELPCHI), ("amazon", gdata.AMAZON)])
def test_offline_paper_datasets_name_url_and_file(monkeypatch, tmp_path, name, spec):
    _offline(monkeypatch, tmp_path)
    with pytest.raises(DataError) as err:
        gdata.load(name)
    msg = str(err.value)
    assert spec.archive.url in msg and spec.archive.name in msg and spec.archive.git_blob in msg
    assert str(tmp_path / "downloads" / spec.folder / spec.archive.name) in msg


def test_corrupt_download_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    monkeypatch.delenv("REPLICATIONS_MIRROR", raising=False)
    bad = tmp_path / "downloads" / "YelpChi" / "YelpChi.zip"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"<html>not the zip</html>")
    with pytest.raises(DataError, match="not the official file"):
        gdata.load("yelpchi")


def test_tfinance_says_it_is_not_a_gaga_dataset(monkeypatch, tmp_path):
    _offline(monkeypatch, tmp_path)
    with pytest.raises(DataError, match="NOT a dataset of the GAGA paper"):
        gdata.load("tfinance")


def test_replicate_yelpchi_offline_stops_with_a_clear_message(monkeypatch, tmp_path, capsys):
    from replications import replicate

    _offline(monkeypatch, tmp_path)
    assert replicate.main(["gaga", "dataset=yelpchi", "tracker=none", "scale=smoke", f"paths.results_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert "YelpChi.zip" in err and gdata.YELPCHI.archive.url in err


@pytest.mark.skipif(not (MIRROR / "tolokers" / "tolokers.npz").exists(),
                    reason=f"{MIRROR}/tolokers/tolokers.npz is absent: set REPLICATIONS_MIRROR to a data mirror")
def test_tolokers_from_the_mirror(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(MIRROR))
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    g = gdata.load("tolokers")
    assert g.x.shape == (11758, 10) and len(g.splits) == 10
    assert g.y.mean() == pytest.approx(0.2182, abs=1e-3)
    adj = g.relations["worker-task-worker"]
    assert adj.nnz == 2 * 519000 and (adj != adj.T).nnz == 0 and adj.diagonal().sum() == 0
    train, val, test = g.split(3)
    assert len(set(train) & set(test)) == 0 and len(train) == 5879
    with pytest.raises(ValueError, match="0..9"):
        g.split(10)
