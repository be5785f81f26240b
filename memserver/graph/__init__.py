"""The code graph's resolution half: a symbol table over many files' tags, and ranked
resolution of references to definitions. Depends only on `memserver.core`."""

from memserver.graph.resolve import HOMONYM, MIN_CONFIDENCE, Candidate, resolve
from memserver.graph.table import SymbolTable

__all__ = ["HOMONYM", "MIN_CONFIDENCE", "Candidate", "SymbolTable", "resolve"]
