"""Guard sources: which value a guard expression checks, spelled so that a predicted guard and
an observed one compare equal; and log paths matched to the files linted here.

Dynamo prints a guard's value differently depending on the channel and the torch release:
``L['self'].step`` in the guard tree, ``self.step`` in a 2.13 recompile reason, ``L['t']`` in
2.1; ``tensor 'L['x']' size mismatch`` in 2.4, ``tensor 'x' ...`` in 2.13. ``normalise``
removes those differences; ``guard_source`` finds the value in a guard expression.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from typing import Iterable

_LOCAL = re.compile(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_MODULES = re.compile(r"\._modules\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_TENSOR = re.compile(r"^tensor '(?P<name>.+?)' (?P<what>[\w ]+?) mismatch")
_CALL_FIRST_ARG = re.compile(
    r"^(?:___check_obj_id|___check_type_id|___check_tensors|check_tensor|hasattr|isinstance|"
    r"___dict_contains|___tuple_iterator_len|len|___odict_getitem)\("
)
_DICT_KEYS = re.compile(r"dict\.keys\((?P<src>.+?)\)")
_SIZE = re.compile(r"^(?P<src>.+?)\.(?:size|stride)\(\)(?:\[\d+\])?$")
_COMPARISONS = ("is not", "not in", "==", "!=", "<=", ">=", " is ", " in ", "<", ">")
_LITERAL = re.compile(r"^(?:-?\d+(?:\.\d*)?(?:e-?\d+)?|True|False|None|b?'.*'|b?\".*\"|\(?-?[\d.]+\)?)$")


def normalise(source: str) -> str:
    """One spelling for a guarded value: ``L['x']`` -> ``x``, ``._modules['a']`` -> ``.a``."""
    text = " ".join(source.split())
    text = _MODULES.sub(r".\1", text)
    return _LOCAL.sub(r"\1", text)


def _split_top_level(text: str) -> tuple[str, str, str] | None:
    """``lhs op rhs`` at the outermost level (not inside brackets or quotes), or None."""
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            for op in _COMPARISONS:
                if text.startswith(op, i):
                    return text[:i].strip(), op.strip(), text[i + len(op):].strip()
        i += 1
    return None


def _first_argument(call: str) -> str:
    """The first argument of ``name(arg, ...)``, brackets and quotes respected."""
    start = call.index("(") + 1
    depth, quote = 0, ""
    for i in range(start, len(call)):
        ch = call[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return call[start:i].strip()
            depth -= 1
        elif ch == "," and depth == 0:
            return call[start:i].strip()
    return call[start:].strip()


def guard_source(guard: str) -> str:
    """The value a guard checks, normalised: ``G['step'] == 1`` -> ``G['step']``.

    ``len(xs) == 2`` -> ``len(xs)``; ``tensor 'x' rank mismatch ...`` -> ``x``;
    ``___check_obj_id(fn.__code__, 1403)`` -> ``fn.__code__``; ``2 <= x.size()[0]`` -> ``x``;
    ``GLOBAL_STATE changed: grad_mode`` -> ``GLOBAL_STATE``; ``BACKEND_MATCH ...`` ->
    ``BACKEND_MATCH``. An expression it cannot read is returned whole, normalised.
    """
    text = " ".join(guard.split())
    if not text:
        return ""
    if text.startswith("GLOBAL_STATE") or text.startswith("___check_global_state"):
        return "GLOBAL_STATE"
    if text.startswith("BACKEND_MATCH") or "different backend" in text:
        return "BACKEND_MATCH"
    tensor = _TENSOR.match(text)
    if tensor:
        return normalise(tensor.group("name"))
    keys = _DICT_KEYS.search(text)
    if keys:
        return normalise(keys.group("src"))
    if text.startswith("not "):
        text = text[4:].strip()
    split = _split_top_level(text)
    if split is not None:
        lhs, _, rhs = split
        side = rhs if _LITERAL.match(lhs) and not _LITERAL.match(rhs) else lhs
        size = _SIZE.match(side)
        if size:
            return normalise(size.group("src"))
        if side.startswith("len("):
            return "len(" + normalise(_first_argument(side)) + ")"
        if _CALL_FIRST_ARG.match(side):
            return normalise(_first_argument(side))
        return normalise(side)
    if _CALL_FIRST_ARG.match(text):
        if text.startswith("len("):
            return "len(" + normalise(_first_argument(text)) + ")"
        return normalise(_first_argument(text))
    return normalise(text)


def sources_match(predicted: str, predicted_kind: str, observed: str) -> bool:
    """Whether a predicted guard source names the value an observed guard checked.

    Equal after ``normalise``; an identity guard predicted on a function also matches the
    guard Dynamo puts on its code object (``fn`` vs ``fn.__code__``).
    """
    want = normalise(predicted)
    if not want or not observed:
        return False
    if want == observed:
        return True
    if predicted_kind in {"ID_MATCH", "TYPE_MATCH"}:
        return observed == want + ".__code__"
    return False


def _parts(path: str) -> list[str]:
    return [p for p in re.split(r"[\\/]+", path) if p]


class PathResolver:
    """Maps a path printed in a log (maybe from another machine, maybe shortened by Dynamo)
    to one of the files linted here, by the longest run of trailing path components."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = sorted({os.path.abspath(f) for f in files})
        self._by_name: dict[str, list[str]] = {}
        for file in self.files:
            self._by_name.setdefault(PurePath(file).name, []).append(file)

    def resolve(self, logged: str) -> str | None:
        """The linted file ``logged`` names, or None when none or several fit equally well."""
        if not logged:
            return None
        absolute = os.path.abspath(logged) if os.path.isabs(logged) else None
        if absolute is not None and absolute in self._by_name.get(PurePath(absolute).name, ()):
            return absolute
        wanted = _parts(logged)
        if not wanted:
            return None
        candidates = self._by_name.get(wanted[-1], [])
        best: list[str] = []
        best_score = 0
        for file in candidates:
            have = _parts(file)
            score = 0
            while score < min(len(have), len(wanted)) and have[-1 - score] == wanted[-1 - score]:
                score += 1
            # Dynamo cuts the path in a guard's comment mid-name ("mp/ex/seed.py"): a partial
            # first component still counts when everything after it matched.
            if score < len(wanted) and score == len(wanted) - 1 and score < len(have):
                if have[-1 - score].endswith(wanted[0]):
                    score += 1
            if score > best_score:
                best, best_score = [file], score
            elif score == best_score:
                best.append(file)
        return best[0] if len(best) == 1 else None

    def same(self, logged: str, local: str) -> bool:
        """Whether ``logged`` (from the log) is the local file ``local``."""
        resolved = self.resolve(logged)
        return resolved is not None and resolved == os.path.abspath(local)
