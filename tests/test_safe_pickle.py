"""The restricted unpickler: plain containers load, a pickle naming any other class is refused before it runs."""

from __future__ import annotations

import pickle
from collections import defaultdict

import pytest

from shared import safe_pickle


class _Payload:
    """Unpickling this calls os.system (a classic pickle attack)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_containers_round_trip():
    table = defaultdict(dict, {(1, 2, 3, "head-batch"): {"M_rt": 0, "M_hrt": 3}})
    out = safe_pickle.loads(pickle.dumps(table))
    assert out == table and isinstance(out, defaultdict) and out.default_factory is dict
    assert safe_pickle.loads(pickle.dumps({(1, 2): [1.5, 2], "s": {3}})) == {(1, 2): [1.5, 2], "s": {3}}


def test_code_execution_payload_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "TransE_rank"
    path.write_bytes(pickle.dumps({"ranks": _Payload(str(marker))}))
    with pytest.raises(safe_pickle.UnsafePickleError, match=r"refused to load '(posix|os|nt)\.system'"):
        safe_pickle.load(path)
    assert not marker.exists()
    assert str(path) in _message(path)  # the error names the file


@pytest.mark.parametrize("module, name", [("builtins", "eval"), ("builtins", "getattr"), ("subprocess", "Popen"),
                                          ("torch", "load"), ("collections", "namedtuple")])
def test_any_global_outside_the_allow_list_is_refused(module, name):
    # Protocol-0 GLOBAL opcode naming module.name, then an empty-tuple call: what a crafted file would do.
    data = f"c{module}\n{name}\n(tR.".encode()
    with pytest.raises(safe_pickle.UnsafePickleError, match=f"'{module}.{name}'"):
        safe_pickle.loads(data)


def _message(path) -> str:
    try:
        safe_pickle.load(path)
    except safe_pickle.UnsafePickleError as exc:
        return str(exc)
    return ""
