""" "Did you mean …?": the candidates nearest to a mistyped word.

Distance is the optimal-string-alignment edit distance (insert, delete, substitute, swap two
neighbours: ``doen`` is one edit from ``done``), so a swapped pair of letters — the most
common typo — counts as one mistake. A candidate that starts with the word wins outright
(``pip`` → ``pipeline``). Pure Python, imported only when there is an error to report.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest", "distance"]


def distance(a: str, b: str) -> int:
    """Edit distance of ``a`` and ``b`` counting an adjacent swap as one edit."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[len(a)][len(b)]


def closest(word: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """Up to ``n`` candidates near ``word``, nearest first (candidates' order breaks ties):
    those starting with ``word``, else those within a third of its length in edits (at
    least one, at most three)."""
    pool = list(dict.fromkeys(candidates))
    if not word:
        return []
    starting = [c for c in pool if c.startswith(word) and c != word]
    if starting:
        return starting[:n]
    limit = min(max(len(word) // 3, 1), 3)
    scored = sorted((distance(word.lower(), c.lower()), index, c) for index, c in enumerate(pool))
    return [c for d, _, c in scored if d <= limit][:n]
