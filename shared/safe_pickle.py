"""Load released pickles without letting them run code: only an allow-list of container classes.

``pickle.load`` imports and calls whatever a file names (``os.system``, ``builtins.eval``, ...), so a
downloaded pickle is read with ``find_class`` restricted to plain containers. Anything else is refused
before it is imported, with the offending name in the error.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Builtin containers and defaultdict (what the SE-GNN artifacts use); no callables beyond these types.
DEFAULT_ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "int"), ("builtins", "float"), ("builtins", "str"),
    ("collections", "defaultdict"), ("collections", "OrderedDict"),
})


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle named a class outside the allow-list."""


class _Restricted(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, allowed: frozenset[tuple[str, str]], origin: str) -> None:
        super().__init__(file)
        self.allowed, self.origin = allowed, origin

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.allowed:
            raise UnsafePickleError(
                f"{self.origin}: refused to load '{module}.{name}': only plain containers may appear in this "
                f"file ({', '.join(sorted(f'{m}.{n}' for m, n in self.allowed))}). The file is not the "
                "released artifact or was tampered with; re-fetch it and check its sha256.")
        return super().find_class(module, name)


def loads(data: bytes, allowed: Iterable[tuple[str, str]] = DEFAULT_ALLOWED, origin: str = "pickle") -> Any:
    return _Restricted(io.BytesIO(data), frozenset(allowed), origin).load()


def load(path: Path, allowed: Iterable[tuple[str, str]] = DEFAULT_ALLOWED) -> Any:
    return loads(Path(path).read_bytes(), allowed, origin=str(path))
