"""Ring-memory inference: bit-identical to the resident model, each section loaded once per pass, slots
reused round-robin, loads overlapping the compute of the step before their own, k >= S resident."""

from __future__ import annotations

import pytest
import torch

from replications.moesys.model import MoEStack
from replications.moesys.ring import FileStore, HostStore, RingMemory, layout_of

S, PASSES = 6, 3


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    torch.manual_seed(0)
    model = MoEStack(vocab=64, d_model=32, heads=4, layers=S, sections=S, hidden=64, experts=4, seq_len=16).eval()
    path = tmp_path_factory.mktemp("ring") / "sections.bin"
    layout = FileStore.write(path, list(model.sections))
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 64, (2, 16), generator=g) for _ in range(PASSES)]
    with torch.no_grad():
        resident = [model(b)[0] for b in batches]
    return model, path, layout, batches, resident


def ring_run(setup, k, drop=False):
    model, path, layout, batches, _ = setup
    store = FileStore(path, layout, S, drop_after_read=drop)
    ring = RingMemory(model, store, k)
    try:
        return ring.run(batches), ring.log
    finally:
        ring.close()
        store.close()


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6, 9])
def test_outputs_bit_identical_to_resident(setup, k):
    outs, _ = ring_run(setup, k, drop=(k == 2))
    for got, want in zip(outs, setup[4], strict=True):
        assert torch.equal(got, want)


def test_a_corrupted_section_changes_the_output(setup, tmp_path):
    """The test above can fail: one flipped weight in storage shows in the logits."""
    model, path, layout, batches, resident = setup
    bad = tmp_path / "bad.bin"
    data = bytearray(path.read_bytes())
    entry = next(e for e in layout.entries if e.name.endswith("qkv.weight"))
    data[3 * layout.stride + entry.offset + 3] ^= 0x40  # section 3, one byte of its attention weight
    bad.write_bytes(bytes(data))
    store = FileStore(bad, layout, S)
    ring = RingMemory(model, store, 2)
    outs = ring.run(batches)
    ring.close()
    assert not torch.equal(outs[0], resident[0])


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_each_section_loaded_once_per_pass_into_round_robin_slots(setup, k):
    _, log = ring_run(setup, k)
    loads = [e for e in log if e["op"] == "load"]
    assert [(e["pass"], e["section"]) for e in loads] == [(p, s) for p in range(PASSES) for s in range(S)]
    assert [e["slot"] for e in loads] == [g % k for g in range(PASSES * S)]
    computes = [e for e in log if e["op"] == "compute"]
    assert [(e["section"], e["slot"]) for e in computes] == [(g % S, g % k) for g in range(PASSES * S)]


@pytest.mark.parametrize("k", [2, 3, 4])
def test_load_of_step_g_plus_k_minus_1_is_issued_after_step_g_minus_1_and_before_step_g(setup, k):
    """The slot a load overwrites was last computed at step g - 1 (finished), and the load runs
    while step g computes."""
    _, log = ring_run(setup, k)
    order = [(e["op"], e["g"]) for e in log]
    for g in range(1, PASSES * S - k + 1):
        load = order.index(("load", g + k - 1))
        assert order.index(("compute", g - 1)) < load < order.index(("compute", g))
    first = [e["g"] for e in log[:k - 1]]
    assert first == list(range(k - 1)) and all(e["op"] == "load" for e in log[:k - 1])  # the ring is filled first
    loads = {e["g"]: e for e in log if e["op"] == "load"}
    computes = {e["g"]: e for e in log if e["op"] == "compute"}
    assert all(loads[g]["t1"] <= computes[g]["t0"] for g in loads)  # a section computes only once loaded


@pytest.mark.parametrize("k", [S, S + 3])
def test_k_at_least_S_loads_each_section_once_then_stays_resident(setup, k):
    _, log = ring_run(setup, k)
    loads = [e for e in log if e["op"] == "load"]
    assert [(e["pass"], e["section"], e["slot"]) for e in loads] == [(0, s, s) for s in range(S)]


def test_host_store_matches_file_store(setup):
    model, _, layout, batches, resident = setup
    store = HostStore(list(model.sections))
    assert store.layout == layout
    ring = RingMemory(model, store, 2)
    outs = ring.run(batches)
    ring.close()
    assert all(torch.equal(a, b) for a, b in zip(outs, resident, strict=True))


def test_store_of_another_model_is_refused(setup, tmp_path):
    model, path, layout, _, _ = setup
    small = MoEStack(64, 16, 4, S, S, 32, 4, 16)
    with pytest.raises(ValueError, match="sections of"):
        FileStore(path, layout_of(small.sections[0]), S)
