"""Unit pooling and fusion (shapes and values), the windows each arm sees, and equal parameters across arms."""

from __future__ import annotations

import pytest
import torch

from replications.mmlayout import backbone, encode
from replications.mmlayout.data import LABEL_ID, LABELS, Form
from replications.mmlayout.model import Tagger, broadcast_units, count_parameters, pool_units
from tests.conftest import compose_cfg


class FakeTokenizer:
    """Word -> as many pieces as the word has '+'-separated parts (ids 100+), like a WordPiece split."""

    cls_token_id, sep_token_id, unk_token_id = 101, 102, 100

    def __call__(self, words, add_special_tokens=False):
        return {"input_ids": [[1000 + i for i, _ in enumerate(w.split("+"))] for w in words]}


def form() -> Form:
    # "Name:" (question, 2 words, line 1) "John+ny" (answer, 1 word of 2 pieces, line 1), "Date" (other, line 2)
    boxes = ((10, 10, 60, 30), (62, 10, 70, 30), (74, 10, 140, 30), (10, 60, 50, 80))
    tags = (LABEL_ID["B-QUESTION"], LABEL_ID["I-QUESTION"], LABEL_ID["B-ANSWER"], LABEL_ID["O"])
    return Form("doc", 1000, 1000, ("Name", ":", "John+ny", "Date"), boxes, tags, (0, 0, 1, 2))


def test_pool_is_the_member_mean_and_fusion_broadcasts_it_back():
    hidden = torch.arange(2 * 5 * 3, dtype=torch.float).reshape(2, 5, 3)
    units = torch.tensor([[-1, 0, 0, 1, -1], [-1, 0, 1, 2, 2]])
    bbox = torch.tensor([[[0, 0, 0, 0], [10, 20, 30, 40], [5, 25, 35, 30], [50, 50, 60, 60], [0, 0, 0, 0]]] * 2)
    pooled, mask, boxes = pool_units(hidden, units, bbox)
    assert pooled.shape == (2, 3, 3) and mask.shape == (2, 3) and boxes.shape == (2, 3, 4)
    assert torch.equal(pooled[0, 0], (hidden[0, 1] + hidden[0, 2]) / 2)
    assert torch.equal(pooled[1, 2], (hidden[1, 3] + hidden[1, 4]) / 2)
    assert mask.tolist() == [[True, True, False], [True, True, True]]  # the first window has 2 units
    assert boxes[0, 0].tolist() == [5, 20, 35, 40]  # union of the member boxes
    assert boxes[0, 2].tolist() == [0, 0, 0, 0]  # padding unit
    back = broadcast_units(pooled, units)
    assert back.shape == hidden.shape
    assert torch.equal(back[0, 1], pooled[0, 0]) and torch.equal(back[0, 2], pooled[0, 0])
    assert torch.equal(back[0, 0], torch.zeros(3)) and torch.equal(back[0, 4], torch.zeros(3))  # no unit: nothing


@pytest.mark.parametrize("units,expected", [("tokens", [-1, 0, 1, 2, 3, 4, -1]), ("lines", [-1, 0, 0, 0, 0, 1, -1]),
                                             ("segments", [-1, 0, 0, 1, 1, 2, -1])])
def test_window_units_per_arm(units, expected):
    (w,) = encode.encode_form(form(), 0, FakeTokenizer(), units, max_len=16)
    assert w.units == expected
    assert w.input_ids == [101, 1000, 1000, 1000, 1001, 1000, 102]
    assert w.labels == [-100, LABEL_ID["B-QUESTION"], LABEL_ID["I-QUESTION"], LABEL_ID["B-ANSWER"], -100,
                        LABEL_ID["O"], -100]  # only a word's first piece is labelled
    assert w.word_index == [-1, 0, 1, 2, 2, 3, -1]
    assert w.boxes[3] == w.boxes[4] == (74, 10, 140, 30)  # pieces share their word's box


def test_long_forms_are_cut_at_word_boundaries_and_units_renumbered():
    windows = encode.encode_form(form(), 0, FakeTokenizer(), "segments", max_len=5)  # 3 pieces per window
    assert [w.word_index for w in windows] == [[-1, 0, 1, -1], [-1, 2, 2, 3, -1]]
    assert [w.units for w in windows] == [[-1, 0, 0, -1], [-1, 0, 0, 1, -1]]
    batch = encode.collate(windows)
    assert batch["input_ids"].shape == (2, 5) and batch["attention_mask"].tolist() == [[1, 1, 1, 1, 0], [1] * 5]
    assert batch["units"][0, 4] == -1 and batch["labels"][0, 4] == -100


def tagger(cfg) -> Tagger:
    return Tagger(backbone.tiny(hidden=32, layers=1, heads=2), len(LABELS), unit_layers=int(cfg.model.unit_layers),
                  unit_heads=2, unit_ff_dim=64)


def test_control_and_mmlayout_arms_have_the_same_parameters():
    cfgs = {m: compose_cfg("paper=mmlayout", "dataset=funsd", f"model={c}")
            for m, c in (("mmlayout", "mmlayout/funsd"), ("control", "mmlayout_control"), ("oracle", "mmlayout_oracle"))}
    assert {c.model.units for c in cfgs.values()} == {"lines", "tokens", "segments"}
    for key in ("unit_layers", "epochs", "batch_size", "lr", "new_lr", "max_len", "precision"):  # equal budget
        assert len({str(c.model[key]) for c in cfgs.values()}) == 1, key
    counts = {m: count_parameters(tagger(c)) for m, c in cfgs.items()}
    assert len(set(counts.values())) == 1
    torch.manual_seed(0)
    model = tagger(cfgs["mmlayout"])
    batch = encode.collate(encode.encode_form(form(), 0, FakeTokenizer(), "lines", max_len=16))
    logits = model(batch["input_ids"], batch["bbox"], batch["attention_mask"], batch["units"])
    assert logits.shape == (1, 7, len(LABELS))
    logits.sum().backward()
    assert model.units.encoder.layers[0].linear1.weight.grad.abs().sum() > 0  # the unit layers are in the graph


def test_tagger_learns_a_planted_layout_signal():
    """Labels depend only on the box (left half: question, right half: answer): the 2D embeddings must carry it."""
    torch.manual_seed(0)
    model = Tagger(backbone.tiny(hidden=32, layers=1, heads=2), len(LABELS), unit_layers=1, unit_heads=2,
                   unit_ff_dim=64, dropout=0.0)
    g = torch.Generator().manual_seed(0)
    n, t = 8, 12
    x0 = torch.randint(0, 900, (n, t), generator=g)
    bbox = torch.stack([x0, torch.full_like(x0, 100), x0 + 50, torch.full_like(x0, 120)], -1)
    labels = torch.where(x0 < 450, LABEL_ID["B-QUESTION"], LABEL_ID["B-ANSWER"])
    ids = torch.full((n, t), 1000)  # the same word everywhere: text carries nothing
    mask, units = torch.ones(n, t, dtype=torch.long), torch.arange(t).repeat(n, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(model(ids, bbox, mask, units).reshape(-1, len(LABELS)), labels.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    accuracy = (model(ids, bbox, mask, units).argmax(-1) == labels).float().mean()
    assert accuracy > 0.9


def test_same_seed_same_training():
    from replications.mmlayout.train import fit, per_doc_counts, predict

    windows = encode.encode_split([form()] * 4, FakeTokenizer(), "lines", max_len=16)

    def run(seed: int) -> tuple[list[float], list[list[int]]]:
        torch.manual_seed(seed)
        model = Tagger(backbone.tiny(hidden=32, layers=1, heads=2), len(LABELS), unit_layers=1, unit_heads=2,
                       unit_ff_dim=64)
        summary = fit(model, windows, epochs=2, batch_size=2, lr=1e-3, new_lr=1e-3, weight_decay=0.01,
                      warmup_frac=0.1, clip_norm=1.0, seed=seed)
        pred = predict(model, windows, [form()] * 4)
        return [p["train_loss"] for p in summary["curve"]], per_doc_counts([form()] * 4, pred)

    assert run(3) == run(3)
    assert run(3)[0] != run(4)[0]
