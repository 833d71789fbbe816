"""Reflectors turn one trace into a `Reflection`: the simple one (one structured call) and the recursive one."""

from ace.reflector.base import Reflector, ReflectorError, ReflectorResult
from ace.reflector.reflection import Reflection, SkillTag
from ace.reflector.simple import SimpleReflector, make_reflector

__all__ = [
    "Reflection",
    "Reflector",
    "ReflectorError",
    "ReflectorResult",
    "SimpleReflector",
    "SkillTag",
    "make_reflector",
]
