"""TEDS (Tree-Edit-Distance-based Similarity, Zhong et al., ECCV 2020), the PubTabNet table metric.

Follows the authors' definition (ibm-aur-nlp/PubTabNet src/metric.py, read side by side):
- both HTML strings are parsed with lxml's default HTML parser; only <body><table> is compared (else the score is 0);
- each element is a tree node; a <td> node carries colspan, rowspan and, unless structure_only, its content as
  a token list: the characters of its text and the tags of any inline children (<b>, <sup>, ...) with their
  text and tails, without the <td> tags themselves;
- edit costs: insert and delete 1; rename 1 if tag, colspan or rowspan differ, else for <td> the normalised
  Levenshtein distance of the two token lists (distance / longer length), else 0;
- TEDS = 1 - distance / max(number of elements below <table> in either tree).
The tree edit distance is APTED (the `apted` package, which the official code uses too); the Levenshtein
distance over token lists is rapidfuzz's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apted import APTED, Config
from lxml import etree, html
from rapidfuzz.distance import Levenshtein


@dataclass
class Node:
    tag: str
    colspan: int | None = None
    rowspan: int | None = None
    content: list[str] | None = None
    children: list[Node] = field(default_factory=list)


class _Costs(Config):
    def rename(self, a: Node, b: Node) -> float:
        if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
            return 1.0
        if a.tag == "td" and (a.content or b.content):
            return Levenshtein.distance(a.content, b.content) / max(len(a.content), len(b.content))
        return 0.0

    def children(self, node: Node) -> list[Node]:
        return node.children


def _tokens(el: etree._Element, out: list[str]) -> None:
    """The cell tokenisation of the official metric: <tag>, text chars, children, </tag>, tail chars."""
    out.append(f"<{el.tag}>")
    if el.text is not None:
        out.extend(el.text)
    for child in el:
        _tokens(child, out)
    if el.tag != "unk":
        out.append(f"</{el.tag}>")
    if el.tag != "td" and el.tail is not None:
        out.extend(el.tail)


def _tree(el: etree._Element, structure_only: bool) -> Node:
    if el.tag == "td":
        content: list[str] = []
        if not structure_only:
            _tokens(el, content)
            content = content[1:-1]  # without the cell's own <td> and </td>
        return Node("td", int(el.attrib.get("colspan", "1")), int(el.attrib.get("rowspan", "1")), content)
    return Node(str(el.tag), children=[_tree(c, structure_only) for c in el])


def _table(markup: str) -> etree._Element | None:
    # The official code calls html.fromstring(markup, parser): the second positional argument is base_url, so
    # its parser settings never applied and lxml's default HTML parser did the parsing; so it does here.
    root = html.fromstring(markup)
    found = root.xpath("body/table")
    return found[0] if found else None


def teds(pred: str, true: str, structure_only: bool = False) -> float:
    """TEDS of one predicted table against its ground truth, both full HTML (<html><body><table>...)."""
    if not pred or not true:
        return 0.0
    p, t = _table(pred), _table(true)
    if p is None or t is None:
        return 0.0
    n_nodes = max(len(p.xpath(".//*")), len(t.xpath(".//*")))
    distance = APTED(_tree(p, structure_only), _tree(t, structure_only), _Costs()).compute_edit_distance()
    return 1.0 - float(distance) / n_nodes
