"""The one tokeniser lexical search uses, for documents and queries alike."""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "tokenize"]

_TOKEN = re.compile(r"[^\W_]+")

_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""English function words, dropped before BM25.

rank-bm25's Okapi IDF gives every term found in more than half the documents a floor of 0.25 x the mean
IDF, which is *higher* than the IDF of a term in, say, 40% of them; long queries full of "the", "you",
"to" then rank documents by how often they repeat those words. On the banking retrieval set, dropping
them lifts BM25 nDCG@10 from 0.18 to 0.35 (benchmarks/retrieval_quality.py).
"""


def tokenize(text: str) -> list[str]:
    """Lowercase runs of letters and digits, minus `STOPWORDS`: `booking_api` gives `booking`, `api`.

    Underscores split, so snake_case keywords and API names match the words of a prose query.
    """
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]
