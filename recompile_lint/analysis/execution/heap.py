"""The heap: every mutable store of a run (objects' attributes, lists' and dicts' items,
module globals, frames' locals and cells) as slots, with the place each slot was last written.

A store is a dict of slots addressed by an int. Writes go through ``write`` so that two
branches of an ``if`` whose test is unknown can be run one after the other and joined
(``Journal``), and so that the cache entries can name the write that made a guarded value
differ (``origin``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from recompile_lint.analysis.execution.values import TOP, Const, join
from recompile_lint.models import Location

_MISSING = object()


@dataclass
class Journal:
    """The slots written since it was opened, each with the value it had before."""

    before: dict[tuple[int, object], object] = field(default_factory=dict)
    origins: dict[tuple[int, object], Location | None] = field(default_factory=dict)
    after: dict[tuple[int, object], tuple[object, Location | None]] = field(default_factory=dict)


@dataclass
class Watch:
    """Whether a store older than ``mark`` was written since the watch began."""

    mark: int
    touched: bool = False


class Heap:
    """Stores of slots by address."""

    def __init__(self) -> None:
        self.stores: dict[int, dict[object, object]] = {}
        self.origins: dict[tuple[int, object], Location | None] = {}
        self.kinds: dict[int, str] = {}  # what a store is: object, list, set, dict, class, module, frame, cells
        self._journals: list[Journal] = []
        self._watches: list[Watch] = []
        self._next = 1

    def new(self, kind: str, slots: dict[object, object] | None = None) -> int:
        addr = self._next
        self._next += 1
        self.stores[addr] = dict(slots or {})
        self.kinds[addr] = kind
        return addr

    def mark(self) -> int:
        """The address the next store gets: stores from here on are newer than this point."""
        return self._next

    def read(self, addr: int, key: object, default: object = _MISSING) -> object:
        store = self.stores.get(addr)
        if store is None or key not in store:
            return default
        return store[key]

    def has(self, addr: int, key: object) -> bool:
        return key in self.stores.get(addr, {})

    def slots(self, addr: int) -> dict[object, object]:
        return self.stores.get(addr, {})

    def origin(self, addr: int, key: object) -> Location | None:
        return self.origins.get((addr, key))

    def watch(self) -> "Watch":
        """From now on, note any write to a store that exists already (``Watch.touched``)."""
        watch = Watch(self._next)
        self._watches.append(watch)
        return watch

    def unwatch(self, watch: "Watch") -> None:
        self._watches.remove(watch)

    def _touch(self, addr: int) -> None:
        for watch in self._watches:
            if addr < watch.mark:
                watch.touched = True

    def write(self, addr: int, key: object, value: object, where: Location | None = None) -> None:
        if self._watches:
            self._touch(addr)
        store = self.stores.setdefault(addr, {})
        if self._journals:
            journal = self._journals[-1]
            if (addr, key) not in journal.before:
                journal.before[(addr, key)] = store.get(key, _MISSING)
                journal.origins[(addr, key)] = self.origins.get((addr, key))
        store[key] = value
        self.origins[(addr, key)] = where

    def delete(self, addr: int, key: object) -> None:
        """The slot is gone (a list shrank, a key was popped): journaled like a write."""
        store = self.stores.setdefault(addr, {})
        if key not in store:
            return
        if self._watches:
            self._touch(addr)
        if self._journals:
            journal = self._journals[-1]
            if (addr, key) not in journal.before:
                journal.before[(addr, key)] = store[key]
                journal.origins[(addr, key)] = self.origins.get((addr, key))
        del store[key]

    def forget(self, addr: int, key: object) -> None:
        """The slot holds something unknown (``del``, or a write the run cannot follow)."""
        self.write(addr, key, TOP, self.origins.get((addr, key)))

    # ---- branches ----------------------------------------------------------------------

    def open(self) -> None:
        self._journals.append(Journal())

    def close(self) -> Journal:
        """End the innermost journal, undoing its writes; returns what it undid."""
        journal = self._journals.pop()
        after: dict[tuple[int, object], tuple[object, Location | None]] = {}
        for (addr, key), old in journal.before.items():
            store = self.stores.setdefault(addr, {})
            after[(addr, key)] = (store.get(key, _MISSING), self.origins.get((addr, key)))
            if old is _MISSING:
                store.pop(key, None)
            else:
                store[key] = old
            self.origins[(addr, key)] = journal.origins[(addr, key)]
        journal.after = after
        return journal

    def merge(self, branches: list[Journal]) -> None:
        """Apply the join of the branches' writes (the branches that went on, after an ``if``)."""
        written = {slot for journal in branches for slot in journal.after}
        for slot in written:
            addr, key = slot
            current = self.stores.get(addr, {}).get(key, _MISSING)
            values = []
            where = None
            for journal in branches:
                value, origin = journal.after.get(slot, (current, self.origins.get(slot)))
                values.append(value)
                where = where or origin
            result = values[0]
            for value in values[1:]:
                result = TOP if result is _MISSING or value is _MISSING else join(result, value)
            if result is _MISSING:
                continue
            if _MISSING in values and self.kinds.get(addr) in ("list", "set", "dict"):
                # One branch has the item, another not: which items it holds is unknown.
                self.write(addr, "__unknown__", Const(True), where)
            self.write(addr, key, result, where)
