"""Skill search internals: tokeniser, incremental BM25, the hybrid index kept in step with a skillbook."""

from ace.retrieval._persist import index_path
from ace.retrieval.bm25 import BM25Index
from ace.retrieval.fusion import RRF_K, rrf_fuse
from ace.retrieval.index import SearchMode, SkillSearchIndex, search_index
from ace.retrieval.tokenize import tokenize

__all__ = ["RRF_K", "BM25Index", "SearchMode", "SkillSearchIndex", "index_path", "rrf_fuse", "search_index", "tokenize"]
