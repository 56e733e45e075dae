"""The lab's program generator: ``generate(seed, count)`` composes grid cells with the ways real
projects are organised into runnable programs. Plain text generation, no torch.

Rows are drawn from the valid space of the grid: first a greedy pairwise covering (every valid
pair of values across all dimensions at least once), then every valid (location, type, use)
cell not yet written, then random valid rows. Every positive row is followed by its negative
twins. The same seed gives the same programs, byte for byte, on any machine and Python: only
``random.Random`` seeded with ints and strings, sorted tuples, never ``hash()`` or set order.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Iterator

from recompile_lint.lab import grid
from recompile_lint.lab.program import Program

CAUSE = "\x02cause"
CHANGE = "\x02change"
CONTEXT_WRITERS = ("context-manager", "context-class")  # the helper as a manager around the call
HOIST = "\x01"  # a line to hoist to the top of its function (global / nonlocal)

TWIN_KINDS = ("fixed", "tensor", "dynamic", "outside", "rebuilt")

VALUE_NAMES = (
    "gain", "depth", "stride", "horizon", "margin", "width", "offset", "phase", "temperature",
    "warmup", "rate", "level", "factor", "span", "window", "budget", "tau", "alpha", "beta_",
    "noise", "keep", "ratio", "shift", "order_", "hops", "heads", "dilation", "epoch", "cursor",
    "stage", "mode", "variant", "kind", "act", "head", "tick", "round_", "weights", "sizes",
    "counts", "table_", "bucket", "passes", "limit", "topk", "delay", "lag", "mixing",
)
FUNCTION_NAMES = (
    "forward_step", "train_step", "encode", "decode", "apply_block", "score", "project", "mix",
    "transform", "infer", "denoise", "predict", "propagate", "refine", "embed", "attend",
    "update_state", "evaluate_batch", "run_layer", "fuse",
)
NET_NAMES = ("Encoder", "Decoder", "Head", "Mixer", "Tower", "Stack", "Denoiser", "Scorer",
             "Backbone", "Adapter", "Critic", "Policy", "Refiner", "Propagator")
OUTER_NAMES = ("Model", "Network", "Pipeline", "Wrapper", "System", "Agent")
BLOCK_ATTRS = ("block", "core", "trunk", "body", "inner", "stage_net")
# The attribute a module container of blocks is held as, one for each of BLOCK_ATTRS.
CONTAINER_ATTRS = ("blocks", "layers", "trunks", "stages", "cores", "stage_nets")
CONTAINER_KEY = "main"  # the block's key in an nn.ModuleDict
NESTS = ("direct", "module-list", "sequential", "module-dict")
CARRIER_VARS = ("cfg", "opts", "hparams", "settings", "hp", "params", "conf", "spec", "setup",
                "meta")
CARRIER_CLASSES = ("Options", "Config", "HParams", "RunSpec", "Setup", "TrainArgs", "Profile")
CLASS_HOLDERS = ("Defaults", "Constants", "Globals", "Registry", "Flags", "Tunables")
MODEL_MODULES = ("model", "network", "layers", "core", "engine", "modeling", "blocks", "nets")
CONFIG_MODULES = ("config", "settings", "options", "hparams", "defaults", "consts", "knobs")
PACKAGES = ("proj", "app", "lib", "toolkit", "research", "exp", "trainer_pkg", "lab_pkg")
LOOP_VARS = ("i", "it", "n", "idx", "k", "j")
INPUT_VARS = ("x", "inp", "h", "feats", "batch")
OUTPUT_VARS = ("out", "y", "pred", "result", "logits")
ENUM_CLASSES = ("Phase", "Mode", "Stage", "Kind", "Regime")
ENUM_MEMBERS = ("WARMUP", "TRAIN", "COOLDOWN", "EVAL", "PROBE", "FINETUNE", "SEARCH", "REPLAY")
BLOCK_CLASSES = ("Block", "Layer", "Cell", "Unit", "Expert")
CALLABLE_CLASSES = ("Scale", "Multiplier", "Amplifier", "Rescale")
METHOD_HOLDERS = ("Scaler", "Weighter", "Gainer", "Booster")
METHOD_NAMES = ("apply", "run", "transform", "forward_fn")
FN_PREFIXES = ("act", "nonlin", "squash", "fn")
UNARY_OPS = ("sin", "cos", "tanh", "sigmoid", "exp", "abs", "neg", "relu", "square", "erf",
             "sinh", "atan", "asinh", "expm1")
STR_WORDS = ("train", "eval", "warmup", "finetune", "probe", "search", "replay", "distill",
             "prune", "calibrate", "sample", "export", "serve", "tune")
KEY_WORDS = ("alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
             "lam", "mu")
AUDIT_NAMES = ("history", "seen", "trace_log", "audit", "records", "journal")
TABLE_NAMES = ("SCALES", "WEIGHTS", "LOOKUP", "COEFFS", "FACTORS", "TABLE")
CALLBACK_CLASSES = ("Schedule", "Curriculum", "Annealer", "Ramp", "Tuner")
CALLBACK_METHODS = ("on_step", "on_batch_start", "before_step", "on_train_batch")
HOLDER_CLASSES = ("Stepper", "Controller", "Coordinator", "Manager", "Updater")
HOLDER_METHODS = ("advance", "update", "tick", "step_to")
PROPERTY_CLASSES = ("Knobs", "Dials", "Controls", "Levers")
BASE_OPS = ("{x} = torch.relu({x})", "{x} = {x} * 0.5", "{x} = torch.tanh({x})", "{x} = {x} + 1")
POOL_NAMES = ("replicas", "members", "copies", "variants", "shards", "workers", "layers_", "units")
DTYPES = ("float32", "float64", "float16", "bfloat16")


# --------------------------------------------------------------------------------------------
# Rows: which grid values each program holds.
# --------------------------------------------------------------------------------------------

DIMS = grid.DIMENSION_NAMES


def _completable(row: dict[str, str], rng: random.Random) -> dict[str, str] | None:
    """A full valid assignment extending ``row`` (values tried in an order drawn from ``rng``),
    or None where none exists."""
    if not grid.valid(row):
        return None
    free = [d for d in DIMS if d not in row]
    orders = {d: rng.sample(grid.VALUES[d], len(grid.VALUES[d])) for d in free}

    def search(k: int) -> bool:
        if k == len(free):
            return True
        dim = free[k]
        for value in orders[dim]:
            row[dim] = value
            if grid.valid(row) and search(k + 1):
                return True
        del row[dim]
        return False

    row = dict(row)
    return row if search(0) else None


def _valid_pairs() -> list[tuple[str, str, str, str]]:
    """Every pair of values across two dimensions that some valid full row holds, in grid order."""
    probe = random.Random(0)
    pairs = []
    for d1, d2 in combinations(DIMS, 2):
        for v1 in grid.VALUES[d1]:
            for v2 in grid.VALUES[d2]:
                if _completable({d1: v1, d2: v2}, probe) is not None:
                    pairs.append((d1, v1, d2, v2))
    return pairs


_PAIRS: list[tuple[str, str, str, str]] | None = None


def valid_pairs() -> list[tuple[str, str, str, str]]:
    global _PAIRS  # computed once: the grid is constant
    if _PAIRS is None:
        _PAIRS = _valid_pairs()
    return list(_PAIRS)


def row_pairs(row: dict[str, str]) -> Iterator[tuple[str, str, str, str]]:
    for d1, d2 in combinations(DIMS, 2):
        yield (d1, row[d1], d2, row[d2])


def _pairwise_rows(rng: random.Random) -> Iterator[dict[str, str]]:
    """Greedy pairwise covering (AETG-style): each row starts from the first uncovered pair
    (in an order drawn from the seed) and takes, dimension by dimension, the value that covers
    the most uncovered pairs among those that keep the row completable."""
    order = valid_pairs()
    rng.shuffle(order)
    uncovered = set(order)
    position = 0
    while uncovered:
        while order[position] not in uncovered:
            position += 1
        d1, v1, d2, v2 = order[position]
        row = {d1: v1, d2: v2}
        rest = [d for d in DIMS if d not in row]
        rng.shuffle(rest)
        for dim in rest:
            scored = []
            for rank, value in enumerate(rng.sample(grid.VALUES[dim], len(grid.VALUES[dim]))):
                candidate = dict(row)
                candidate[dim] = value
                if not grid.valid(candidate):
                    continue
                gain = 0
                for other, other_value in row.items():
                    i1, i2 = DIMS.index(dim), DIMS.index(other)
                    pair = (dim, value, other, other_value) if i1 < i2 else (other, other_value, dim, value)
                    gain += pair in uncovered
                scored.append((-gain, rank, value))
            scored.sort()
            for _, _, value in scored:
                candidate = dict(row)
                candidate[dim] = value
                if _completable(candidate, rng) is not None:
                    row = candidate
                    break
        full = {d: row[d] for d in DIMS}
        uncovered.difference_update(row_pairs(full))
        yield full


def _rows(seed: int) -> Iterator[dict[str, str]]:
    for n, row in enumerate(_sampled_rows(seed)):
        yield _refined(row, seed, n)


def _refined(row: dict[str, str], seed: int, n: int) -> dict[str, str]:
    """``row`` with a value refined into one of its ``grid.REFINEMENTS`` (half the time, each
    refinement alike), drawn from a stream of its own: the sampling's draws, and so every
    program the refinement does not touch, stay as they were."""
    for dim, by_value in grid.REFINEMENTS.items():
        options = by_value.get(row[dim])
        if options:
            rng = random.Random(f"lab-refine:{seed}:{n}:{dim}")
            pick = rng.randrange(len(options) * 2)
            if pick < len(options):
                row = {**row, dim: options[pick]}
    return row


def _sampled_rows(seed: int) -> Iterator[dict[str, str]]:
    rng = random.Random(f"lab-rows:{seed}")
    written_cells = set()
    for row in _pairwise_rows(rng):
        written_cells.add((row["location"], row["type"], row["use"]))
        yield row
    cells = [c for c in grid.valid_cells() if c not in written_cells]
    rng.shuffle(cells)
    for location, type_, use in cells:
        row = _completable({"location": location, "type": type_, "use": use}, rng)
        if row is not None:
            yield {d: row[d] for d in DIMS}
    while True:
        row = _completable({}, rng)
        assert row is not None
        yield {d: row[d] for d in DIMS}


# --------------------------------------------------------------------------------------------
# Text: one program from a row.
# --------------------------------------------------------------------------------------------


def intent_of(row: dict[str, str]) -> str:
    """What the generator aims at (diagnostics only; the proof decides)."""
    if row["change"] == "never" or row["use"] in grid.UNTRACED_USES:
        return "negative"
    return "unbounded" if row["change"] == "every" else "bounded"


def twin_kinds(row: dict[str, str]) -> list[str]:
    """The negative twins a positive row gets."""
    if intent_of(row) == "negative":
        return []
    loc, type_, use = row["location"], row["type"], row["use"]
    kinds = ["fixed"]
    if type_ in grid.SCALAR_TYPES and use == "arithmetic" and loc not in grid.CONTAINER_SHAPE_LOCATIONS:
        kinds.append("tensor")
    if type_ in ("int", "float") and loc in DYNAMIC_SOURCES:
        kinds.append("dynamic")
    if loc != "closure":
        kinds.append("outside")
    if type_ in grid.CALLABLE_TYPES or type_ == "module-identity":
        kinds.append("rebuilt")
    return kinds


DYNAMIC_SOURCES = {
    "global": "G['{name}']",
    "positional-argument": "L['{name}']",
    "keyword-argument": "L['{name}']",
    "module-attribute": "L['self'].{name}",
    "object-attribute": "L['{carrier}'].{name}",
    "dataclass-field": "L['{carrier}'].{name}",
    "dict-value": "L['{carrier}']['{name}']",
    "list-element": "L['{carrier}'][0]",
}


def _ind(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + line if line else line for line in lines]


def _function(header: str, body: list[str], decorators: tuple[str, ...] = ()) -> list[str]:
    """A def with ``body``, hoisted global/nonlocal lines first."""
    hoisted: list[str] = []
    rest: list[str] = []
    for line in body:
        stripped = line.strip()
        if stripped.startswith(HOIST):
            text = stripped[1:]
            if text not in hoisted:
                hoisted.append(text)
        else:
            rest.append(line)
    return list(decorators) + [header] + _ind(hoisted + (rest or ["pass"]))


@dataclass
class _Names:
    value: str
    fn: str
    net: str
    outer: str
    block_attr: str
    carrier: str
    carrier_class: str
    class_holder: str
    loop: str
    x: str
    out: str
    enum_class: str
    enum_members: tuple[str, ...]
    block_class: str
    callable_class: str
    method_holder: str
    method: str
    fn_prefix: str
    audit: str
    table: str
    callback_class: str
    callback_method: str
    holder_class: str
    holder_method: str
    property_class: str
    helper: str
    values: str
    order: str
    model_module: str
    config_module: str
    package: str
    base_op: str
    str_words: tuple[str, ...]
    ops: tuple[str, ...]
    int_base: int
    container_list: bool
    aliased: bool  # compiled code reads the value's object through a local it assigns
    nest: str  # one of NESTS: the module container the compiled module's block sits in
    pool: str  # the list of objects an ``instances`` program builds, one per value


def _draw_names(rng: random.Random, suffix: str) -> _Names:
    value = rng.choice(VALUE_NAMES)
    upper = rng.random() < 0.5
    return _Names(
        value=value,
        fn=rng.choice(FUNCTION_NAMES),
        net=rng.choice(NET_NAMES),
        outer=rng.choice(OUTER_NAMES),
        block_attr=rng.choice(BLOCK_ATTRS),
        carrier=rng.choice(CARRIER_VARS),
        carrier_class=rng.choice(CARRIER_CLASSES),
        class_holder=rng.choice(CLASS_HOLDERS),
        loop=rng.choice(LOOP_VARS),
        x=rng.choice(INPUT_VARS),
        out=rng.choice(OUTPUT_VARS),
        enum_class=rng.choice(ENUM_CLASSES),
        enum_members=tuple(rng.sample(ENUM_MEMBERS, 4)),
        block_class=rng.choice(BLOCK_CLASSES),
        callable_class=rng.choice(CALLABLE_CLASSES),
        method_holder=rng.choice(METHOD_HOLDERS),
        method=rng.choice(METHOD_NAMES),
        fn_prefix=rng.choice(FN_PREFIXES),
        audit=rng.choice(AUDIT_NAMES),
        table=rng.choice(TABLE_NAMES),
        callback_class=rng.choice(CALLBACK_CLASSES),
        callback_method=rng.choice(CALLBACK_METHODS),
        holder_class=rng.choice(HOLDER_CLASSES),
        holder_method=rng.choice(HOLDER_METHODS),
        property_class=rng.choice(PROPERTY_CLASSES),
        helper=rng.choice(("apply_", "scaled_by_", "with_", "use_")) + value.strip("_"),
        values=(value.strip("_").upper() + "_SCHEDULE") if upper else (value.strip("_") + "_values"),
        order=(value.strip("_").upper() + "_ORDER") if upper else (value.strip("_") + "_order"),
        model_module=f"{rng.choice(MODEL_MODULES)}_{suffix}",
        config_module=f"{rng.choice(CONFIG_MODULES)}_{suffix}",
        package=f"{rng.choice(PACKAGES)}_{suffix}",
        base_op=rng.choice(BASE_OPS),
        str_words=tuple(rng.sample(STR_WORDS, grid.CALLS)),
        ops=tuple(rng.sample(UNARY_OPS, grid.CALLS)),
        int_base=rng.choice((2, 3, 4)),
        container_list=rng.random() < 0.5,
        # Drawn last, so every earlier draw (and every program without an object to alias)
        # stays as it was.
        aliased=rng.random() < 0.3,
        # Drawn after it, for the same reason: a program without a module reach is unchanged.
        nest=_draw_nest(rng),
        pool=rng.choice(POOL_NAMES),
    )


def _draw_nest(rng: random.Random) -> str:
    """Held directly (about 4 in 10), in an nn.ModuleList, nn.Sequential or nn.ModuleDict
    (about 2 in 10 each)."""
    draw = rng.random()
    if draw < 0.4:
        return "direct"
    return NESTS[1 + min(2, int((draw - 0.4) / 0.2))]


class _Writer:
    """Renders one row (and an optional twin kind) into files."""

    def __init__(self, row: dict[str, str], twin: str | None, names: _Names):
        self.row = row
        self.twin = twin
        self.n = names
        self.loc = row["location"]
        self.type = row["type"]
        self.use = row["use"]
        self.mods = row["modules"]
        self.reach = row["reach"]
        self.writer = row["writer"]
        self.driver = row["driver"]
        self.options = row["options"]
        self.change = row["change"]
        self.tensor_twin = twin == "tensor"
        self.from_imports: dict[str, list[str]] = {"M": [], "C": []}
        self.module_objects_needed: set[str] = set()
        # Attribute or variable name of the value; the container itself for container shapes.
        self.name = names.value
        if self.loc in grid.CONTAINER_SHAPE_LOCATIONS or self.loc == "list-element":
            self.name = names.carrier
        if self.loc == "global" and names.values.isupper():
            self.name = names.value.upper()
        stem = self.name.strip("_")
        names.values = f"{stem.upper()}_SCHEDULE" if names.values.isupper() else f"{stem.lower()}_values"
        names.order = f"{stem.upper()}_ORDER" if names.order.isupper() else f"{stem.lower()}_order"
        k = grid.DISTINCT[self.change]
        limit = grid.TYPE_VALUES.get(self.type)
        if limit is not None:
            k = min(k, limit)
        self.k = k
        self.order = self._order()
        self.nest = self._nest()

    def _nest(self) -> str:
        """The module container the block sits in: "none" without a module reach. An
        nn.Sequential passes its one input on, so where the compiled call passes more (the value
        or its carrier as an argument) the block sits in an nn.ModuleList instead."""
        if self.reach not in grid.MODULE_REACHES:
            return "none"
        if self.n.nest == "sequential" and self.passes_more():
            return "module-list"
        return self.n.nest

    def passes_more(self) -> bool:
        """Whether the compiled call passes more than the input."""
        return self.loc in grid.CARRIER_LOCATIONS or self.loc in ("positional-argument", "keyword-argument")

    @property
    def container_attr(self) -> str:
        return CONTAINER_ATTRS[BLOCK_ATTRS.index(self.n.block_attr)]

    def block_of(self, base: str) -> str:
        """The compiled module's block reached from ``base``, the outer module."""
        if self.nest == "module-dict":
            return f'{base}.{self.container_attr}["{CONTAINER_KEY}"]'
        if self.nest in ("module-list", "sequential"):
            return f"{base}.{self.container_attr}[0]"
        return f"{base}.{self.n.block_attr}"

    @property
    def outer_compiled(self) -> bool:
        """Whether the compiled module is an outer one holding the block in a container."""
        return self.reach in ("compile-model", "model-compile") and self.nest not in ("none", "direct")

    # ---- modules ---------------------------------------------------------------------------

    @property
    def model_path(self) -> str:
        if self.mods == "one":
            return "run.py"
        if self.mods == "three-package-alias":
            return f"{self.n.package}/{self.n.model_module.rsplit('_', 1)[0]}.py"
        return f"{self.n.model_module}.py"

    @property
    def config_path(self) -> str:
        if self.mods == "one":
            return "run.py"
        if self.mods in ("two-import", "two-from-import"):
            return self.model_path
        if self.mods == "three-package-alias":
            return f"{self.n.package}/{self.n.config_module.rsplit('_', 1)[0]}.py"
        return f"{self.n.config_module}.py"

    def _home(self, which: str) -> str:
        return {"R": "run.py", "M": self.model_path, "C": self.config_path}[which]

    def module_alias(self, here: str, home: str) -> str | None:
        """How code in file ``here`` names the module ``home`` (None: the same file)."""
        if self._home(here) == self._home(home):
            return None
        if self.mods == "three-package-alias":
            short = self._home(home).rsplit("/", 1)[1][:-3]
            if here == "R":
                return "m" if home == "M" else "c"
            return short
        target = self.n.model_module if self._home(home) == self.model_path else self.n.config_module
        if here == "R":
            self.module_objects_needed.add(home if home == "C" and self.config_path != self.model_path else "M")
        return target

    def ref(self, here: str, home: str, sym: str) -> str:
        if self._home(here) == self._home(home):
            return sym
        if here == "R" and self.mods == "two-from-import":
            if sym not in self.from_imports["M"]:
                self.from_imports["M"].append(sym)
            return sym
        alias = self.module_alias(here, home)
        return f"{alias}.{sym}"

    def module_ref(self, here: str, home: str) -> str | None:
        """A module object reference (for writes of its globals); None: the same file."""
        if self._home(here) == self._home(home):
            return None
        if self.mods == "two-from-import":
            self.module_objects_needed.add("M")
            return self.n.model_module
        return self.module_alias(here, home)

    # ---- values ----------------------------------------------------------------------------

    def _order(self) -> list[int]:
        calls = grid.CALLS
        if self.change == "never":
            return [0] * calls
        if self.change == "once":
            return [0] * (calls // 2) + [1] * (calls - calls // 2)
        if self.change == "cycle":
            return [i % self.k for i in range(calls)]
        return list(range(calls))

    def _ints(self) -> list[int]:
        return [self.n.int_base + j for j in range(grid.CALLS)]

    def _floats(self) -> list[float]:
        if self.use in ("op-dropout-p", "op-bernoulli", "op-sdpa-dropout"):
            return [round(0.05 * (j + 1), 2) for j in range(grid.CALLS)]
        if self.use == "op-interpolate-scale":
            return [1.25 + 0.25 * j for j in range(grid.CALLS)]
        return [0.5 + 0.25 * j for j in range(grid.CALLS)]

    def scalar(self, j: int) -> str:
        if self.type == "int":
            return str(self._ints()[j])
        if self.type == "float":
            return repr(self._floats()[j])
        return ("True", "False")[j]

    def choice(self, j: int, here: str) -> str:
        """The j-th distinct value, written in file ``here``."""
        t = self.type
        if self.loc == "list-length":
            element = "2" if t == "int" else "0.5"
            return "[" + ", ".join([element] * (j + 1)) + "]"
        if self.loc == "dict-keys":
            keys = [repr(w) for w in KEY_WORDS[: j + 1]] if t == "str" else [str(v) for v in range(j + 1)]
            return "{" + ", ".join(f"{key}: 1.0" for key in keys) + "}"
        if t in grid.SCALAR_TYPES:
            return f"torch.tensor({self.scalar(j)})" if self.tensor_twin else self.scalar(j)
        if t == "str":
            return repr(self.n.ops[j] if self.use == "getattr" else self.n.str_words[j])
        if t == "enum":
            return f"{self.ref(here, 'C', self.n.enum_class)}.{self.n.enum_members[j]}"
        if t == "none-or-tensor":
            return ("None", "torch.ones(8)")[j]
        if t == "number-or-tensor":
            return ("0.5", "torch.tensor(0.5)")[j]
        if t == "function":
            return self.ref(here, "C", f"{self.n.fn_prefix}_{self.n.ops[j]}")
        if t == "lambda":
            return f"lambda t: t * {j + 2}"
        if t == "bound-method":
            return f"{self.ref(here, 'C', self.n.method_holder)}({j + 2}).{self.n.method}"
        if t == "partial":
            return f"functools.partial({self.ref(here, 'C', 'scale_by')}, k={j + 2})"
        if t == "callable-object":
            return f"{self.ref(here, 'C', self.n.callable_class)}({j + 2})"
        if t == "tensor-rank":
            return f"torch.ones({(2,) * (j + 1)})"
        if t == "tensor-size":
            return f"torch.ones({j + 2})"
        if t == "tensor-layout":
            return ("torch.ones(8, 8)", "torch.ones(8, 8).t()")[j]
        if t == "batch-of-one":
            return ("torch.ones(8, 8)", "torch.ones(1, 8)")[j]
        if t == "requires-grad":
            return ("torch.ones(8)", "torch.ones(8, requires_grad=True)")[j]
        if t == "dtype":
            return f"torch.ones(8, dtype=torch.{DTYPES[j]})"
        if t == "device":
            return ("torch.ones(8)", 'torch.ones(8, device="meta")')[j]
        if t == "module-identity":
            return f"{self.ref(here, 'C', self.n.block_class)}()"
        if t == "parameter-shapes":
            return f"nn.Linear(8, {j + 2})"
        if t == "registered-hooks":
            return f"{self.ref(here, 'C', 'with_hooks')}({self.ref(here, 'C', self.n.block_class)}(), {j})"
        raise AssertionError(t)

    def value_at(self, i: str) -> str:
        """The value the schedule gives call ``i`` (an expression in run.py)."""
        if self.twin == "rebuilt":
            return f"{self.ref('R', 'C', 'make_' + self.name.lower().strip('_'))}()"
        home = self.schedule_home()
        return f"{self.ref('R', home, self.n.values)}[{self.ref('R', home, self.n.order)}[{i}]]"

    def schedule_home(self) -> str:
        """Where the schedule of values lives: the config module of a three-module program."""
        return "C" if self.mods.startswith("three") else "R"

    def schedule_lines(self) -> list[str]:
        if self.twin == "rebuilt":
            return []
        home, n = self.schedule_home(), self.n
        choices = [self.choice(j, home) for j in range(self.k)]
        return [f"{n.values} = ("] + _ind([c + "," for c in choices]) + [")",
                f"{n.order} = ({', '.join(map(str, self.order))})", ""]

    # ---- the value's location ---------------------------------------------------------------

    def read_via(self, ref: str | None) -> str:
        """The value read through its carrier ``ref`` (a module, object, container, class,
        function; None where the value is a bare name in scope)."""
        loc, name = self.loc, self.name
        if loc in ("dict-keys", "list-length"):
            return ref or name
        if loc == "dict-value":
            return f'{ref}["{name}"]'
        if loc == "list-element":
            return f"{ref}[0]"
        if loc == "default-argument" and ref is not None:
            return f"{ref}.__defaults__[0]"
        if ref is None:
            return name
        return f"{ref}.{name}"

    def write_via(self, ref: str | None, value: str, scope_nested: bool = False) -> list[str]:
        """Statements that set the value through ``ref``; the last one is the change."""
        loc, name = self.loc, self.name
        if self.tensor_twin and loc != "closure":
            return [f"{self.read_via(ref)}.fill_({value})" + CHANGE]
        if loc == "closure":
            return [f"{ref}({value})"]
        if loc == "namedtuple-field":
            lines = [f"{ref} = {ref}._replace({name}={value})" + CHANGE]
            return ([HOIST + f"nonlocal {ref}"] if scope_nested else []) + lines
        if loc == "dict-keys":
            return [f"{ref}.clear()", f"{ref}.update({value})" + CHANGE]
        if loc == "list-length":
            return [f"{ref}[:] = {value}" + CHANGE]
        if loc == "dict-value":
            return [f'{ref}["{name}"] = {value}' + CHANGE]
        if loc == "list-element":
            return [f"{ref}[0] = {value}" + CHANGE]
        if loc == "default-argument":
            return [f"{ref}.__defaults__ = ({value},)" + CHANGE]
        if ref is None:
            if loc in ("global", "other-module-global"):
                return [HOIST + f"global {name}", f"{name} = {value}" + CHANGE]
            return [f"{name} = {value}" + CHANGE]
        return [f"{ref}.{name} = {value}" + CHANGE]

    # ---- the compiled code ------------------------------------------------------------------

    def use_lines(self, r: str, here: str) -> list[str]:
        """The use block reading ``r``; ``x`` is the input, transformed in place."""
        x, t, use = self.n.x, self.type, self.use
        c = CAUSE
        if self.loc == "list-length":
            if use == "iteration":
                return [f"for w in {r}:" + c, f"    {x} = {x} + w"]
            if use == "len":
                return [f"{x} = {x} * len({r})" + c]
            if use == "range-bound":
                return [f"for _ in range(len({r})):" + c, f"    {x} = {x} * 0.9"]
        if self.loc == "dict-keys":
            if use == "iteration":
                return [f"for key in {r}:" + c, f"    {x} = {x} + {r}[key]"]
            if use == "len":
                return [f"{x} = {x} * len({r})" + c]
        if use == "under-is-compiling":
            return ["if not torch.compiler.is_compiling():", f"    {self.audit_ref(here)}.append({r})" + c]
        if use == "arithmetic":
            if t in grid.SCALAR_TYPES or t == "number-or-tensor":
                return [f"{x} = {x} * {r}" + c]
            if t == "enum":
                return [f"{x} = {x} * {r}.value" + c]
            if t == "parameter-shapes":
                return [f"{x} = {x} + {r}({x}).sum()" + c]
            if t in grid.CALLABLE_TYPES or t in grid.MODULE_TYPES:
                return [f"{x} = {x} + {r}({x})" + c]
            return [f"{x} = {x} * {r}.sum()" + c]
        if use == "branch":
            then = [f"    {x} = {x} * 2"]
            if t == "int":
                return [f"if {r} > {self._ints()[min(1, self.k - 1)]}:" + c] + then
            if t == "float":
                return [f"if {r} > {self._floats()[min(1, self.k - 1)]!r}:" + c] + then
            if t == "bool":
                return [f"if {r}:" + c] + then
            if t == "str":
                return [f"if {r} == {self.choice(0, here)}:" + c] + then
            if t == "enum":
                return [f"if {r} is {self.choice(0, here)}:" + c] + then
            if t == "none-or-tensor":
                return [f"if {r} is not None:" + c, f"    {x} = {x} + {r}"]
            if t == "tensor-rank":
                return [f"if {r}.dim() > 2:" + c] + then
            if t == "tensor-size":
                return [f"if {r}.shape[0] > 3:" + c] + then
            if t == "requires-grad":
                return [f"if {r}.requires_grad:" + c] + then
            if t == "dtype":
                return [f"if {r}.dtype == torch.float64:" + c] + then
            if t == "device":
                return [f'if {r}.device.type == "cpu":' + c] + then
        size = f"{r}.shape[0]" if t == "tensor-size" else r
        if use == "range-bound":
            bound = f"{r}.dim()" if t == "tensor-rank" else size
            return [f"for _ in range({bound}):" + c, f"    {x} = {x} * 0.9"]
        if use == "op-dropout-p":
            return [f"{x} = F.dropout({x}, p={r}, training=True)" + c]
        if use == "op-interpolate-size":
            return [f"{x} = F.interpolate({x}[None], size={size})[0]" + c]
        if use == "op-interpolate-scale":
            return [f"{x} = F.interpolate({x}[None], scale_factor={r})[0]" + c]
        if use == "op-view":
            return [f"{x} = {x}.flatten()[: {size} * 4].view({size}, 4)" + c]
        if use == "op-reshape":
            return [f"{x} = {x}.reshape(-1)[: {size} * 4].reshape({size}, 4)" + c]
        if use == "op-split":
            return [f"{x} = {x}.split({size}, dim=1)[0]" + c]
        if use == "op-bernoulli":
            return [f"{x} = {x} * torch.empty_like({x}).bernoulli_({r})" + c]
        if use == "op-sdpa-dropout":
            return [f"{x} = F.scaled_dot_product_attention({x}[None], {x}[None], {x}[None], dropout_p={r})[0]" + c]
        if use == "dict-key":
            key = {"dtype": f"{r}.dtype", "device": f"{r}.device.type"}.get(t, r)
            return [f"{x} = {x} * {self.table_ref(here)}[{key}]" + c]
        if use == "getattr":
            return [f"{x} = getattr(torch, {r})({x})" + c]
        if use == "after-break":
            return [f"{x} = {self.ref(here, self.use_home(), self.late_helper)}({x}, {r})" + c]
        if use == "iteration":
            return [f"for row in {r}:" + c, f"    {x} = {x} + row"]
        if use == "len":
            arg = f"{r}.shape" if t == "tensor-rank" else r
            return [f"{x} = {x} * len({arg})" + c]
        raise AssertionError((self.loc, t, use))

    def use_home(self) -> str:
        """The module that holds the use block (and the tables it reads)."""
        return "C" if self.loc == "other-module-global" else "M"

    def audit_ref(self, here: str) -> str:
        return self.ref(here, self.use_home(), self.n.audit)

    def table_ref(self, here: str) -> str:
        return self.ref(here, self.use_home(), self.n.table)

    def table_lines(self, here: str) -> list[str]:
        if self.use != "dict-key":
            return []
        if self.type == "dtype":
            keys = [f"torch.{d}" for d in DTYPES[: self.k]]
        elif self.type == "device":
            keys = ['"cpu"', '"meta"'][: self.k]
        else:
            keys = [self.choice(j, here) for j in range(self.k)]
        entries = ", ".join(f"{key}: {1.0 / (j + 1)!r}" for j, key in enumerate(keys))
        return [f"{self.n.table} = {{{entries}}}"]

    def audit_lines(self) -> list[str]:
        return [f"{self.n.audit} = []"] if self.use in grid.UNTRACED_USES else []

    @property
    def late_helper(self) -> str:
        return f"late_{self.name.strip('_').lower()}"

    def late_helper_lines(self) -> list[str]:
        """The helper an ``after-break`` use passes the value to: compiled code inlines it, and
        it breaks the graph before computing with the value."""
        if self.use != "after-break":
            return []
        return [""] + _function(f"def {self.late_helper}(t, v):", ["torch._dynamo.graph_break()", "return t * v"])

    def compile_kwargs(self) -> str:
        extra = {"default": "", "mark-dynamic": "", "dynamic-true": ", dynamic=True",
                 "dynamic-false": ", dynamic=False", "fullgraph": ", fullgraph=True"}[self.options]
        return f'backend="eager"{extra}'

    def params(self) -> tuple[str, str]:
        """(extra parameters of the compiled function, read of the value inside it)."""
        loc, name = self.loc, self.name
        if loc in grid.CARRIER_LOCATIONS:
            return f", {self.n.carrier}", self.read_via(self.n.carrier)
        if loc == "positional-argument":
            return f", {name}", name
        if loc == "keyword-argument":
            return f", *, {name}", name
        if loc == "default-argument":
            return f", {name}={self.choice(0, 'M')}", name
        if loc == "module-attribute":
            return "", f"self.{name}"
        if loc == "class-attribute":
            return "", f"{self.ref('M', 'C', self.n.class_holder)}.{name}"
        return "", name

    def disabled_helper(self, read: str, param: str) -> list[str]:
        return _function(f"def note_{self.name.lower().strip('_')}({param}):",
                         [f"{self.audit_ref('M')}.append({read})" + CAUSE],
                         ("@torch.compiler.disable",))

    def body_of_compiled(self, read: str, here: str) -> list[str]:
        """Lines of the compiled function's body, before ``return x``."""
        x = self.n.x
        lines = [self.n.base_op.format(x=x)]
        if self.reach in grid.MODULE_REACHES:
            lines = [f"{x} = self.proj({x})"]
        if self.twin == "outside":
            return lines
        if self.loc == "other-module-global":
            lines.append(f"{x} = {self.ref('M', 'C', self.n.helper)}({x})")
            return lines
        if self.use == "disabled-helper":
            loc = self.loc
            helper = f"note_{self.name.lower().strip('_')}"
            if loc in grid.CARRIER_LOCATIONS:
                lines.append(f"{helper}({self.n.carrier})")
            elif loc in grid.ARGUMENT_LOCATIONS:
                lines.append(f"{helper}({self.name})")
            elif loc == "module-attribute":
                lines.append(f"{helper}(self)")
            else:
                lines.append(f"{helper}()")
            return lines
        alias = self.alias()
        if alias:
            # ``held = carrier`` / ``owner = self``: the object reaches the read through a
            # local of the compiled code (Dynamo's source stays on the object).
            lines.append(f"{alias} = {'self' if self.loc == 'module-attribute' else self.n.carrier}")
            read = f"{alias}.{self.name}"
        return lines + self.use_lines(read, here)

    def alias(self) -> str:
        """The local compiled code reads the value's object through, or "" (drawn per program,
        for an attribute of the compiled module or of an object passed in)."""
        if not self.n.aliased or self.loc not in ("module-attribute", "object-attribute", "dataclass-field"):
            return ""
        if self.loc == "module-attribute" and self.reach not in grid.MODULE_REACHES:
            return ""
        return "owner" if self.loc == "module-attribute" else f"held_{self.n.carrier}"

    def disabled_for_scope(self) -> list[str]:
        """The disabled helper beside the compiled function (not for other-module globals)."""
        if self.use != "disabled-helper" or self.loc == "other-module-global" or self.twin == "outside":
            return []
        loc = self.loc
        if loc in grid.CARRIER_LOCATIONS:
            return self.disabled_helper(self.read_via(self.n.carrier), self.n.carrier)
        if loc in grid.ARGUMENT_LOCATIONS:
            return self.disabled_helper(self.name, self.name)
        if loc == "module-attribute":
            return self.disabled_helper(f"owner.{self.name}", "owner")
        if loc == "class-attribute":
            return self.disabled_helper(f"{self.ref('M', 'C', self.n.class_holder)}.{self.name}", "")
        return self.disabled_helper(self.name, "")

    # ---- files ------------------------------------------------------------------------------

    def config_part(self) -> list[str]:
        """Definitions the value needs: its types, its carrier class, other-module globals."""
        n, t, out = self.n, self.type, []
        if t == "enum":
            out += [f"class {n.enum_class}(enum.Enum):"] + _ind(
                [f"{m} = {j + 1}" for j, m in enumerate(n.enum_members)]) + [""]
        if t == "function":
            for j in range(self.k if self.twin != "rebuilt" else 1):
                out += _function(f"def {n.fn_prefix}_{n.ops[j]}(t):", [f"return torch.{n.ops[j]}(t)"]) + [""]
        if t == "bound-method":
            out += [f"class {n.method_holder}:"] + _ind(
                _function("def __init__(self, k):", ["self.k = k"]) + [""]
                + _function(f"def {n.method}(self, t):", ["return t * self.k"])) + [""]
        if t == "partial":
            out += _function("def scale_by(t, k):", ["return t * k"]) + [""]
        if t == "callable-object":
            out += [f"class {n.callable_class}:"] + _ind(
                _function("def __init__(self, k):", ["self.k = k"]) + [""]
                + _function("def __call__(self, t):", ["return t * self.k"])) + [""]
        if t in ("module-identity", "registered-hooks"):
            out += [f"class {n.block_class}(nn.Module):"] + _ind(
                _function("def __init__(self):", ["super().__init__()", "self.lin = nn.Linear(8, 8)"]) + [""]
                + _function("def forward(self, t):", ["return self.lin(t)"])) + [""]
        if t == "registered-hooks":
            out += _function("def with_hooks(module, count):", [
                "for _ in range(count):",
                "    module.register_forward_hook(lambda mod, args, result: result * 1.0)",
                "return module"]) + [""]
        if self.twin == "rebuilt":
            out += _function(f"def make_{self.name.lower().strip('_')}():", [f"return {self.choice(0, 'C')}"]) + [""]
        loc, name, init = self.loc, self.name, self.choice(0, "C")
        if loc == "object-attribute":
            out += [f"class {n.carrier_class}:"] + _ind(_function("def __init__(self):", [f"self.{name} = {init}"])) + [""]
        if loc == "dataclass-field":
            plain = t in grid.SCALAR_TYPES | {"str", "enum"} and not self.tensor_twin
            default = init if plain else f"field(default_factory=lambda: {init})"
            out += ["@dataclass", f"class {n.carrier_class}:"] + _ind([f"{name}: {self.annotation()} = {default}"]) + [""]
        if loc == "namedtuple-field":
            out += [f"class {n.carrier_class}(NamedTuple):"] + _ind([f"{name}: {self.annotation()} = {init}"]) + [""]
        if loc == "class-attribute":
            out += [f"class {n.class_holder}:"] + _ind([f"{name} = {init}"]) + [""]
        if loc == "other-module-global":
            out += [f"{name} = {init}"] + self.table_lines("C") + self.audit_lines() + self.late_helper_lines() + [""]
            if self.twin == "outside":
                body = [f"return {n.x}"]
                out += _function(f"def {n.helper}({n.x}):", body) + [""]
            elif self.use == "disabled-helper":
                out += _function(f"def {n.helper}({n.x}):", [f"{n.audit}.append({name})" + CAUSE, f"return {n.x}"],
                                 ("@torch.compiler.disable",)) + [""]
            else:
                out += _function(f"def {n.helper}({n.x}):", self.use_lines(name, "C") + [f"return {n.x}"]) + [""]
        if self.schedule_home() == "C":
            out += self.schedule_lines()
        return out

    def annotation(self) -> str:
        if self.tensor_twin:
            return "torch.Tensor"
        if self.type in ("int", "float", "bool", "str"):
            return self.type
        if self.type == "enum":
            return self.n.enum_class
        return "object"

    def model_part(self) -> list[str]:
        """The compiled function or module, its globals and the reach's helpers."""
        n, out = self.n, []
        extra, read = self.params()
        if self.loc == "global":
            out += [f"{self.name} = {self.choice(0, 'M')}"]
        if self.loc != "other-module-global":
            out += self.table_lines("M") + self.audit_lines() + self.late_helper_lines()
        if out:
            out.append("")
        if self.reach == "wrapper-args":
            out += _function("def compiled(fn, *args, **kwargs):", ["return torch.compile(fn, *args, **kwargs)"]) + [""]
        if self.reach == "registry":
            out += [f"{n.fn.upper()}_REGISTRY = {{}}", ""]
            out += _function("def register(name, fn):", [
                f"{n.fn.upper()}_REGISTRY[name] = torch.compile(fn, {self.compile_kwargs()})",
                f"return {n.fn.upper()}_REGISTRY[name]"]) + [""]
        decorators: tuple[str, ...] = ()
        if self.reach == "decorator":
            decorators = ("@torch.compile",)
        elif self.reach == "decorator-options":
            decorators = (f"@torch.compile({self.compile_kwargs()})",)
        if self.reach in grid.MODULE_REACHES:
            init = ["super().__init__()", "self.proj = nn.Linear(8, 8)"]
            if self.loc == "module-attribute":
                init.append(f"self.{self.name} = {self.choice(0, 'M')}")
            forward = self.body_of_compiled(read, "M") + [f"return {n.x}"]
            disabled = self.disabled_for_scope()
            if disabled:
                out += disabled + [""]
            out += [f"class {n.net}(nn.Module):"] + _ind(
                _function("def __init__(self):", init) + [""]
                + _function(f"def forward(self, {n.x}{extra}):", forward)) + [""]
            if self.reach == "submodule-in-place" or self.outer_compiled:
                out += self.outer_class()
            return out
        body = self.body_of_compiled(read, "M") + [f"return {n.x}"]
        fn = _function(f"def {n.fn}({n.x}{extra}):", body, decorators)
        if self.loc == "closure":
            setter = [HOIST + f"nonlocal {self.name}", f"{self.name} = value" + CHANGE]
            if self.tensor_twin:
                setter = [f"{self.name}.fill_(value)" + CHANGE]
            disabled = self.disabled_for_scope()
            factory = [f"{self.name} = {self.choice(0, 'M')}", ""] + (disabled + [""] if disabled else []) + fn + [""] \
                + _function(f"def set_{self.name.strip('_')}(value):", setter) + [""] \
                + [f"return {n.fn}, set_{self.name.strip('_')}"]
            out += _function(f"def make_{n.fn}():", factory) + [""]
            return out
        disabled = self.disabled_for_scope()
        if disabled:
            out += disabled + [""]
        out += fn + [""]
        return out

    def outer_class(self) -> list[str]:
        """The outer module holding the block: as ``self.{block_attr}`` or in a container (an
        nn.ModuleList it loops over, an nn.Sequential it calls, an nn.ModuleDict it indexes)."""
        n, x, nest = self.n, self.n.x, self.nest
        in_place = self.reach == "submodule-in-place"
        attr = self.container_attr
        held = {
            "direct": f"self.{n.block_attr} = {n.net}()",
            "module-list": f"self.{attr} = nn.ModuleList([{n.net}()])",
            "sequential": f"self.{attr} = nn.Sequential({n.net}())",
            "module-dict": f'self.{attr} = nn.ModuleDict({{"{CONTAINER_KEY}": {n.net}()}})',
        }[nest]
        init = ["super().__init__()", held] + (["self.norm = nn.LayerNorm(8)"] if in_place else [])
        given = f"self.norm({x})" if in_place else x
        header = f"def forward(self, {x}, *args, **kwargs):"
        if nest == "module-list":
            forward = ([f"{x} = {given}"] if in_place else []) + [
                f"for block in self.{attr}:", f"    {x} = block({x}, *args, **kwargs)", f"return {x}"]
        elif nest == "sequential":
            header = f"def forward(self, {x}):"
            forward = [f"return self.{attr}({given})"]
        else:
            forward = [f"return {self.block_of('self')}({given}, *args, **kwargs)"]
        return [f"class {n.outer}(nn.Module):"] + _ind(
            _function("def __init__(self):", init) + [""] + _function(header, forward)) + [""]

    # ---- run.py -----------------------------------------------------------------------------

    def carrier_setup(self) -> tuple[list[str], str | None]:
        """main()'s lines that make the value's carrier, and the reference writers use."""
        n, loc = self.n, self.loc
        if loc in ("global", "other-module-global"):
            home = "M" if loc == "global" else "C"
            ref = self.module_ref("R", home)
            if ref is None and self.writer == "setattr-apply":
                ref = "sys.modules[__name__]"
            return [], ref
        if loc == "closure":
            factory = self.ref("R", "M", f"make_{n.fn}")
            return [f"{n.fn}, set_{self.name.strip('_')} = {factory}()"], f"set_{self.name.strip('_')}"
        if loc == "module-attribute":
            return [], self.net_ref()
        if loc in ("object-attribute", "dataclass-field", "namedtuple-field"):
            return [f"{n.carrier} = {self.ref('R', 'C', n.carrier_class)}()"], n.carrier
        if loc == "dict-value":
            return [f'{n.carrier} = {{"{self.name}": {self.choice(0, "R")}, "eps": 1e-6}}'], n.carrier
        if loc == "list-element":
            return [f"{n.carrier} = [{self.choice(0, 'R')}]"], n.carrier
        if loc in ("dict-keys", "list-length"):
            return [f"{n.carrier} = {self.choice(0, 'R')}"], n.carrier
        if loc in ("positional-argument", "keyword-argument"):
            if self.writer == "callback":
                return [f"state = types.SimpleNamespace({self.name}={self.choice(0, 'R')})"], "state"
            if self.tensor_twin:
                return [f"{self.name} = {self.choice(0, 'R')}"], None
            return [], None
        if loc == "default-argument":
            return [], self.raw_ref()
        if loc == "class-attribute":
            if self.writer == "holder-module":
                return [], f"{self.module_ref('R', 'C') or 'sys.modules[__name__]'}.{n.class_holder}"
            return [], self.ref("R", "C", n.class_holder)
        raise AssertionError(loc)

    def net_ref(self) -> str:
        """The compiled module's block, as run.py reaches it."""
        if self.reach == "submodule-in-place" or self.outer_compiled:
            return self.block_of("net")
        return "net"

    def raw_ref(self) -> str:
        if self.reach in grid.MODULE_REACHES:
            return f"{self.ref('R', 'M', self.n.net)}.forward"
        if self.loc == "closure":
            return self.n.fn
        fn = self.ref("R", "M", self.n.fn)
        return f"{fn}.__wrapped__" if self.reach in ("decorator", "decorator-options") else fn

    def compile_setup(self) -> tuple[list[str], list[str], str]:
        """(module-level lines of run.py, main()'s lines, the callee expression)."""
        n, reach, kw = self.n, self.reach, self.compile_kwargs()
        if reach in grid.MODULE_REACHES:
            outer = reach == "submodule-in-place" or self.outer_compiled
            cls = self.ref("R", "M", n.outer if outer else n.net)
            lines = [f"net = {cls}()"]
            if reach == "compile-model":
                return [], lines + [f"fast = torch.compile(net, {kw})"], "fast"
            if reach == "model-compile":
                return [], lines + [f"net.compile({kw})"], "net"
            return [], lines + [f"{self.net_ref()}.compile({kw})"], "net"
        fn = n.fn if self.loc == "closure" else self.ref("R", "M", n.fn)
        if reach in ("decorator", "decorator-options"):
            return [], [], fn
        if reach == "compile-fn":
            return [], [f"fast = torch.compile({fn}, {kw})"], "fast"
        if reach == "partial-compile":
            return [f"compiler = functools.partial(torch.compile, {kw})", ""], [f"fast = compiler({fn})"], "fast"
        if reach == "wrapper-args":
            return [], [f"fast = {self.ref('R', 'M', 'compiled')}({fn}, {kw})"], "fast"
        if reach == "registry":
            return [], [f'{self.ref("R", "M", "register")}("train", {fn})',
                        f'fast = {self.ref("R", "M", n.fn.upper() + "_REGISTRY")}["train"]'], "fast"
        if reach == "container-element":
            if n.container_list:
                return [], [f"steps = [torch.compile({fn}, {kw})]"], "steps[0]"
            return [], [f'steps = {{"train": torch.compile({fn}, {kw})}}'], 'steps["train"]'
        if reach == "conditional-alias":
            return ['compile = torch.compile if hasattr(torch, "compile") else (lambda fn, **kwargs: fn)', ""], \
                [f"fast = compile({fn}, {kw})"], "fast"
        raise AssertionError(reach)

    def call_args(self, ref: str | None) -> str:
        loc = self.loc
        if loc in grid.CARRIER_LOCATIONS:
            return f", {self.n.carrier}"
        if loc == "positional-argument":
            return f", {self.arg_read(ref)}"
        if loc == "keyword-argument":
            return f", {self.name}={self.arg_read(ref)}"
        return ""

    def arg_read(self, ref: str | None) -> str:
        if self.writer == "property":
            return f"knobs.{self.name.strip('_').lower()}"
        return self.read_via(ref)

    def writer_code(self, ref: str | None) -> tuple[list[str], list[str], Callable[[str, bool], list[str]]]:
        """(module-level definitions in run.py, main()'s setup lines, invoke(i, nested) -> lines)."""
        n, w, loc = self.n, self.writer, self.loc
        value = self.value_at
        if w in CONTEXT_WRITERS:
            return self.context_code(ref)
        if w == "loop":
            return [], [], lambda i, nested: self.write_via(ref, value(i), nested)
        if w == "helper":
            helper = f"advance_{self.name.lower().strip('_')}"
            if loc in ("positional-argument", "keyword-argument") and not self.tensor_twin:
                defs = _function(f"def {helper}({n.loop}):", [f"return {value(n.loop)}" + CHANGE]) + [""]
                return defs, [], lambda i, nested: [f"{self.name} = {helper}({i})"]
            if loc == "namedtuple-field" and not self.tensor_twin:
                defs = _function(f"def {helper}({n.carrier}, {n.loop}):",
                                 [f"return {n.carrier}._replace({self.name}={value(n.loop)})" + CHANGE]) + [""]
                return defs, [], lambda i, nested: ([HOIST + f"nonlocal {n.carrier}"] if nested else []) + \
                    [f"{n.carrier} = {helper}({n.carrier}, {i})"]
            if ref is None and loc in grid.ARGUMENT_LOCATIONS:
                # The argument's tensor is main()'s local: the helper fills the one it is given.
                defs = _function(f"def {helper}(target, {n.loop}):", [f"target.fill_({value(n.loop)})" + CHANGE]) + [""]
                return defs, [], lambda i, nested: [f"{helper}({self.name}, {i})"]
            if ref is None or ref.startswith(("sys.", "m.", "c.")) or self._is_module_object(ref):
                defs = _function(f"def {helper}({n.loop}):", self.write_via(ref, value(n.loop))) + [""]
                return defs, [], lambda i, nested: [f"{helper}({i})"]
            defs = _function(f"def {helper}(target, {n.loop}):", self.write_via("target", value(n.loop))) + [""]
            return defs, [], lambda i, nested: [f"{helper}({ref}, {i})"]
        if w == "callback":
            target = ref if ref is not None else "None"
            method = _function(f"def {n.callback_method}(self, {n.loop}):",
                               self.write_via("self.target" if ref is not None else None, value(n.loop)))
            defs = [f"class {n.callback_class}:"] + _ind(
                _function("def __init__(self, target):", ["self.target = target"]) + [""] + method) + [""]
            setup = [f"callbacks = [{n.callback_class}({target})]"]
            return defs, setup, lambda i, nested: ["for callback in callbacks:", f"    callback.{n.callback_method}({i})"]
        if w == "property":
            prop = self.name.strip("_").lower()
            # The setter's parameter is named after the value, unless it is the global it sets.
            param = "value" if ref is None and loc in ("global", "other-module-global") else prop
            setter = [f"self._{prop} = {param}"]
            if loc not in ("positional-argument", "keyword-argument"):
                setter += self.write_via("self._target" if ref is not None else None, param)
            else:
                setter[-1] += CHANGE
            defs = [f"class {n.property_class}:"] + _ind(
                _function(f"def __init__(self, target, {prop}):", ["self._target = target", f"self._{prop} = {prop}"])
                + [""] + ["@property"] + _function(f"def {prop}(self):", [f"return self._{prop}"]) + [""]
                + [f"@{prop}.setter"] + _function(f"def {prop}(self, {param}):", setter)) + [""]
            setup = [f"knobs = {n.property_class}({ref if ref is not None else 'None'}, {self.choice(0, 'R')})"]
            return defs, setup, lambda i, nested: [f"knobs.{prop} = {value(i)}"]
        if w == "setattr-apply":
            if loc == "module-attribute" and not self.tensor_twin:
                cls = self.ref("R", "M", n.net)
                return [], [], lambda i, nested: [
                    f'{ref}.apply(lambda mod: setattr(mod, "{self.name}", {value(i)}) if isinstance(mod, {cls}) else None)'
                    + CHANGE]
            if loc == "default-argument" and not self.tensor_twin:
                return [], [], lambda i, nested: [f'setattr({ref}, "__defaults__", ({value(i)},))' + CHANGE]
            if self.tensor_twin:
                return [], [], lambda i, nested: self.write_via(ref, value(i), nested)
            return [], [], lambda i, nested: [f'setattr({ref}, "{self.name}", {value(i)})' + CHANGE]
        # A method of another object that holds the value's carrier.
        method = n.holder_method
        if w == "holder-module":
            body = self.write_via(ref, value(n.loop))
            defs = [f"class {n.holder_class}:"] + _ind(_function(f"def {method}(self, {n.loop}):", body)) + [""]
            return defs, [f"stepper = {n.holder_class}()"], lambda i, nested: [f"stepper.{method}({i})"]
        if w == "holder-setter":
            # The driver computes the value and hands it over; the method writes it only when
            # it is another object than the one it wrote last (a setter that skips no-ops).
            param = self.name.strip("_").lower()  # named after the value, as a setter's is
            write = [f"if {param} is not self.current:"] + _ind([f"self.current = {param}"] + self.write_via("self.target", param))
            defs = [f"class {n.holder_class}:"] + _ind(
                _function("def __init__(self, target):", ["self.target = target", "self.current = None"]) + [""]
                + _function(f"def {method}(self, {param}):", write)) + [""]
            return defs, [f"stepper = {n.holder_class}({ref})"], lambda i, nested: [f"stepper.{method}({value(i)})"]
        if w == "holder-attribute":
            init, target, made = ["self.target = target"], "self.target", ref
        elif w == "holder-container":
            init, target, made = ["self.targets = targets"], "self.targets[0]", f"[{ref}]"
        else:
            init, target, made = ["self.source = source"], "self.source()", f"current_{n.carrier}"
        param = {"holder-attribute": "target", "holder-container": "targets", "holder-factory": "source"}[w]
        defs = [f"class {n.holder_class}:"] + _ind(
            _function(f"def __init__(self, {param}):", init) + [""]
            + _function(f"def {method}(self, {n.loop}):", self.write_via(target, value(n.loop)))) + [""]
        setup = []
        if w == "holder-factory":
            setup += _function(f"def current_{n.carrier}():", [f"return {ref}"])
        setup.append(f"stepper = {n.holder_class}({made})")
        return defs, setup, lambda i, nested: [f"stepper.{method}({i})"]

    def context_code(self, ref: str | None) -> tuple[list[str], list[str], Callable[[str, bool], list[str]]]:
        """The helper as a context manager the call runs inside: on entry it sets the value
        the schedule gives the call (or, for a value passed at the call, gives it as the ``as``
        target), on exit it puts back the schedule's first value. ``context-manager``: a
        ``@contextlib.contextmanager`` generator; ``context-class``: ``__enter__`` /
        ``__exit__``. invoke(i, nested) ends with the ``with`` line the call goes under."""
        n, loc, value = self.n, self.loc, self.value_at
        manager = f"using_{self.name.lower().strip('_')}"
        generator = self.writer == "context-manager"
        step = n.loop if generator else f"self.{n.loop}"

        def settle(target: str | None, at: str, change: bool) -> list[str]:
            lines = self.write_via(target, value(at))
            return lines if change else [line.replace(CHANGE, "") for line in lines]

        passed = loc in ("positional-argument", "keyword-argument") and not self.tensor_twin
        if passed:
            params, entry, exit_, given = [], [], [], value(step) + CHANGE
        elif loc == "namedtuple-field" and not self.tensor_twin:
            params, entry, exit_ = [n.carrier], [], []
            given = f"{n.carrier if generator else 'self.' + n.carrier}._replace({self.name}={value(step)})" + CHANGE
        else:
            if ref is None and loc in grid.ARGUMENT_LOCATIONS:
                target, params = self.name, [self.name]  # main()'s tensor, filled in place
            elif ref is None or ref.startswith(("sys.", "m.", "c.")) or self._is_module_object(ref):
                target, params = ref, []
            else:
                target, params = "target", ["target"]
            held = target if generator or target in (None, ref) else f"self.{target}"
            entry, exit_, given = settle(held, step, True), settle(held, "0", False), None
        args = params + [n.loop]
        if generator:
            yielded = [f"yield {given}" if given else "yield"]
            body = entry + (["try:"] + _ind(yielded) + ["finally:"] + _ind(exit_) if exit_ else yielded)
            defs = _function(f"def {manager}({', '.join(args)}):", body, ("@contextlib.contextmanager",)) + [""]
        else:
            init = [f"self.{a} = {a}" for a in args]
            defs = [f"class {manager}:"] + _ind(
                _function(f"def __init__(self, {', '.join(args)}):", init) + [""]
                + _function("def __enter__(self):", entry + [f"return {given}" if given else "return self"]) + [""]
                + _function("def __exit__(self, *exc):", exit_ + ["return False"])) + [""]
        made = {"target": ref, self.name: self.name, n.carrier: n.carrier}

        def invoke(i: str, nested: bool) -> list[str]:
            call = f"{manager}({', '.join([made[p] for p in params] + [i])})"
            if passed:
                return [f"with {call} as {self.name}:"]
            if given is not None:  # the namedtuple, rebound by the ``as`` target
                return ([HOIST + f"nonlocal {n.carrier}"] if nested else []) + [f"with {call} as {n.carrier}:"]
            return [f"with {call}:"]

        return defs, [], invoke

    @property
    def compiled_per_instance(self) -> bool:
        """Whether each object is compiled on its own (a module holding the value, a closure's
        function): otherwise the objects are carriers passed to one compiled callee."""
        return self.loc in ("module-attribute", "closure")

    def instances_code(self, carrier_lines: list[str], ref: str | None, compile_lines: list[str],
                       callee: str) -> tuple[list[str], list[str], Callable[[str, bool], list[str]]]:
        """The ``instances`` writer: main() builds one object per value (its own module or
        function where each is compiled, else a carrier for the one compiled callee), each set to
        its value once; call ``i`` takes the object the schedule names. No object changes after
        it is built. (module-level definitions, main()'s setup lines, invoke(i, nested) -> lines)."""
        n, pool = self.n, self.n.pool
        assert ref is not None, self.loc
        names = []
        if self.compiled_per_instance:
            names.append(callee.split("[")[0])
            if self.reach in grid.MODULE_REACHES:
                names.append("net")
        else:
            names.append(n.carrier)
        names = list(dict.fromkeys(names))
        held = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        if self.twin == "rebuilt":
            value = self.value_at("slot")
        else:
            home = self.schedule_home()
            value = f"{self.ref('R', home, n.values)}[{'0' if self.twin == 'fixed' else 'slot'}]"
        # Each object is set to its value as soon as it exists, before it is compiled.
        made = compile_lines[:1] if self.compiled_per_instance and self.reach in grid.MODULE_REACHES else []
        compiled = compile_lines[len(made):] if self.compiled_per_instance else []
        build = carrier_lines + made + self.write_via(ref, value) + compiled
        setup = [f"{pool} = []", f"for slot in range({self.k}):"] + _ind(build + [f"{pool}.append({held})"])
        if self.twin == "rebuilt":
            pick = f"{pool}[{{i}} % {self.k}]"
        else:
            pick = f"{pool}[{self.ref('R', self.schedule_home(), n.order)}[{{i}}]]"
        return [], setup, lambda i, nested: [f"{', '.join(names)} = {pick.format(i=i)}"]

    def _is_module_object(self, ref: str) -> bool:
        return ref in (self.n.model_module, self.n.config_module, "m", "c") or ref.startswith(
            (self.n.model_module + ".", self.n.config_module + "."))

    def run_part(self) -> tuple[list[str], list[str]]:
        """(module-level lines of run.py, main())."""
        n = self.n
        carrier_lines, ref = self.carrier_setup()
        compile_top, compile_lines, callee = self.compile_setup()
        if self.writer == "instances":
            writer_defs, writer_setup, invoke = self.instances_code(carrier_lines, ref, compile_lines, callee)
            carrier_lines = []
            if self.compiled_per_instance:
                compile_lines = []
        else:
            writer_defs, writer_setup, invoke = self.writer_code(ref)
        top = list(compile_top)
        schedule = self.schedule_lines() if self.schedule_home() == "R" else []
        top = schedule + top + writer_defs
        x = n.x
        call = f"{n.out} = {callee}({x}{self.call_args(ref)})"
        before = []
        if self.twin == "dynamic":
            source = self.dynamic_source()
            before.append(f'torch.compiler.config.dynamic_sources = "{source}"')
        context = self.writer in CONTEXT_WRITERS
        if self.twin == "fixed" and self.writer != "instances" and not context:
            before += invoke("0", False)
        if self.twin == "outside":
            before.append(f"{n.audit}_outside = []")

        def body(i: str, make_x: bool, nested: bool) -> list[str]:
            lines = [f"{x} = torch.randn(8, 8)"] if make_x else []
            if self.options == "mark-dynamic":
                lines.append(f"torch._dynamo.mark_dynamic({x}, 0)")
            inside = [call]
            if self.twin == "outside":
                inside.append(f"{n.audit}_outside.append({self.outside_read(ref)})")
            if context:  # the call, and what reads the value after it, inside the manager
                return lines + invoke("0" if self.twin == "fixed" else i, nested) + _ind(inside)
            if self.writer == "instances" or (
                    self.twin != "fixed" and not (self.writer == "callback" and self.driver == "trainer")):
                lines += invoke(i, nested)
            return lines + inside

        i, calls = n.loop, grid.CALLS
        driver = self.driver
        if driver == "for":
            loop = [f"for {i} in range({calls}):"] + _ind(body(i, True, False))
        elif driver == "while":
            loop = [f"{i} = 0", f"while {i} < {calls}:"] + _ind(body(i, True, False) + [f"{i} += 1"])
        elif driver == "epochs":
            loop = ["for epoch_no in range(3):"] + _ind(
                ["for batch_no in range(4):"] + _ind([f"{i} = epoch_no * 4 + batch_no"] + body(i, True, False)))
        elif driver == "generator":
            top += _function("def batches(count):", ["for index in range(count):",
                                                     "    yield index, torch.randn(8, 8)"]) + [""]
            loop = [f"for {i}, {x} in batches({calls}):"] + _ind(body(i, False, False))
        elif driver in ("map", "comprehension"):
            run_one = _function(f"def run_one({i}):", body(i, True, True)) + [""]
            drive = f"list(map(run_one, range({calls})))" if driver == "map" else f"[run_one({i}) for {i} in range({calls})]"
            loop = run_one + [drive]
        elif driver == "async":
            run_one = _function(f"async def run_one({i}):", body(i, True, True)) + [""]
            drive = _function("async def drive():", [f"{i} = 0", f"while {i} < {calls}:",
                                                       f"    await run_one({i})", f"    {i} += 1"]) + [""]
            loop = run_one + drive + ["asyncio.run(drive())"]
        elif driver == "closure-step":
            loop = ["driver_optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)",
                    f"for {i} in range({calls}):"] + _ind(
                _function("def closure():", body(i, True, True)) + ["driver_optimizer.step(closure)"])
        elif driver == "eval-pass":
            top += _function("def evaluate(run_one, start, stop):", ["for index in range(start, stop):",
                                                                        "    run_one(index)"]) + [""]
            loop = [f"for {i} in range(8):"] + _ind(body(i, True, False)) + [""] + \
                _function(f"def run_one({i}):", body(i, True, True)) + ["", f"evaluate(run_one, 8, {calls})"]
        else:
            method = n.callback_method if self.writer == "callback" else "on_step"
            top += ["class Trainer:"] + _ind(
                _function("def __init__(self, step_fn, callbacks=()):",
                          ["self.step_fn = step_fn", "self.callbacks = list(callbacks)"]) + [""]
                + _function("def fit(self, steps):", [
                    "for index in range(steps):",
                    "    for callback in self.callbacks:",
                    f"        callback.{method}(index)",
                    "    self.step_fn(index, torch.randn(8, 8))"])) + [""]
            callbacks = "callbacks" if self.writer == "callback" and self.twin != "fixed" else ""
            loop = _function(f"def run_batch({i}, {x}):", body(i, False, True)) + [
                "", f"Trainer(run_batch{', ' + callbacks if callbacks else ''}).fit({calls})"]
        main_body = ["torch.manual_seed(0)"] + carrier_lines + compile_lines + writer_setup + before + loop
        main = _function("def main():", main_body)
        return top, main

    def dynamic_source(self) -> str:
        """The value's source as Dynamo names it in the compiled frame (for ``dynamic_sources``).
        An outer module compiled around a container reaches the block through ``_modules`` and
        gets the block's arguments as ``*args, **kwargs``."""
        source = DYNAMIC_SOURCES[self.loc].format(name=self.name, carrier=self.n.carrier)
        if not self.outer_compiled:
            return source
        if self.loc == "module-attribute":
            key = CONTAINER_KEY if self.nest == "module-dict" else "0"
            return f"L['self']._modules['{self.container_attr}']._modules['{key}'].{self.name}"
        if self.loc == "keyword-argument":
            return f"L['kwargs']['{self.name}']"
        if self.loc in grid.CARRIER_LOCATIONS or self.loc == "positional-argument":
            inner = f"L['{self.name if self.loc == 'positional-argument' else self.n.carrier}']"
            return "L['args'][0]" + source[len(inner):]
        return source

    def outside_read(self, ref: str | None) -> str:
        if self.loc in ("positional-argument", "keyword-argument"):
            return self.arg_read(ref)
        return self.read_via(ref)

    # ---- assembly ---------------------------------------------------------------------------

    def files(self) -> tuple[tuple[tuple[str, str], ...], tuple[str, int] | None, tuple[str, int] | None]:
        config = self.config_part()
        model = self.model_part()
        top, main = self.run_part()
        run_body = top + main + ["", "", 'if __name__ == "__main__":', "    main()"]
        texts: dict[str, list[str]] = {}
        if self.mods == "one":
            texts["run.py"] = config + model + run_body
        else:
            if self.config_path == self.model_path:
                texts[self.model_path] = config + model
            else:
                texts[self.config_path] = config
                texts[self.model_path] = self.model_imports_config() + model
            texts["run.py"] = self.run_imports() + run_body
        if self.mods == "three-package-alias":
            texts[f"{self.n.package}/__init__.py"] = []
        out: list[tuple[str, str]] = []
        cause = change = None
        for path in sorted(texts):
            lines = _top_level_spacing(_prune_imports([line.rstrip() for line in self.with_imports(texts[path])]))
            cleaned = []
            for number, line in enumerate(lines, 1):
                if CAUSE in line:
                    cause = cause or (path, number)
                    line = line.replace(CAUSE, "")
                if CHANGE in line:
                    change = change or (path, number)
                    line = line.replace(CHANGE, "")
                cleaned.append(line.rstrip())
            text = "\n".join(cleaned).rstrip("\n")
            out.append((path, text + "\n" if text else ""))
        out.append(("pyproject.toml", f'[project]\nname = "lab-{self.n.model_module.rsplit("_", 1)[1]}"\nversion = "0.1.0"\n'))
        return tuple(sorted(out)), cause, change

    def model_imports_config(self) -> list[str]:
        if self.mods == "three-package-alias":
            short = self.config_path.rsplit("/", 1)[1][:-3]
            return [f"from {self.n.package} import {short}", ""]
        return [f"import {self.n.config_module}", ""]

    def run_imports(self) -> list[str]:
        lines = []
        if self.mods == "three-package-alias":
            lines.append(f"import {self.n.package}.{self.model_path.rsplit('/', 1)[1][:-3]} as m")
            lines.append(f"import {self.n.package}.{self.config_path.rsplit('/', 1)[1][:-3]} as c")
        elif self.mods == "two-from-import":
            if "M" in self.module_objects_needed:
                lines.append(f"import {self.n.model_module}")
            names = sorted(set(self.from_imports["M"]))
            if names:
                lines.append(f"from {self.n.model_module} import {', '.join(names)}")
        else:
            lines.append(f"import {self.n.model_module}")
            if self.mods == "three-import":
                lines.append(f"import {self.n.config_module}")
        return lines + [""]

    def with_imports(self, lines: list[str]) -> list[str]:
        text = "\n".join(lines)
        std, third = [], ["import torch"]
        if "functools." in text:
            std.append("import functools")
        if "enum.Enum" in text:
            std.append("import enum")
        if "contextlib." in text:
            std.append("import contextlib")
        if "asyncio." in text:
            std.append("import asyncio")
        if "sys.modules" in text:
            std.append("import sys")
        if "types.SimpleNamespace" in text:
            std.append("import types")
        if "@dataclass" in text:
            std.append("from dataclasses import dataclass, field" if "field(" in text else "from dataclasses import dataclass")
        if "(NamedTuple)" in text:
            std.append("from typing import NamedTuple")
        if re.search(r"\bnn\.", text):
            third.append("from torch import nn")
        if re.search(r"(?<![\w.])F\.", text):
            third.append("import torch.nn.functional as F")
        if not text.strip():
            return []
        head = sorted(std) + ([""] if std else []) + third + [""]
        local = []
        while lines and (lines[0].startswith(("import ", "from ")) or not lines[0]):
            if lines[0]:
                local.append(lines[0])
            lines = lines[1:]
        return head + local + ([""] if local else []) + [""] + lines


def _prune_imports(lines: list[str]) -> list[str]:
    """Drop imports of the program's own modules that the file does not use."""
    body = "\n".join(line for line in lines if not line.startswith(("import ", "from ")))
    out = []
    for line in lines:
        match = re.match(r"import (\S+)(?: as (\w+))?$", line)
        if match and match.group(1) != "torch" and "_" in match.group(1):
            name = match.group(2) or match.group(1)
            if not re.search(rf"(?<![\w.]){re.escape(name)}\b", body):
                continue
        match = re.match(r"from (\w+) import (\w+)$", line)
        if match and "_" in match.group(1) and not re.search(rf"(?<![\w.]){match.group(2)}\b", body):
            continue
        out.append(line)
    return out


def _top_level_spacing(lines: list[str]) -> list[str]:
    """Two blank lines before each top-level def or class (after the imports), at most two
    blank lines anywhere else."""
    out: list[str] = []
    for line in _squeeze(lines):
        starts_block = line.startswith(("def ", "class ", "@")) and not (out and out[-1].startswith("@"))
        previous = next((p for p in reversed(out) if p), "")
        after_block = bool(line) and not line[0].isspace() and line[0] not in ")]}" and previous[:1].isspace()
        if (starts_block or after_block) and out:
            while out and not out[-1]:
                out.pop()
            out += ["", ""]
        out.append(line)
    return out


def _squeeze(lines: list[str]) -> list[str]:
    """At most two blank lines in a row."""
    out: list[str] = []
    blanks = 0
    for line in lines:
        blanks = blanks + 1 if not line else 0
        if blanks <= 2:
            out.append(line)
    return out


def _suffix(seed: int, index: int) -> str:
    return hashlib.sha256(f"lab:{seed}:{index}".encode()).hexdigest()[:8]


def render(row: dict[str, str], seed: int, index: int, twin: str | None = None, twin_of: str | None = None,
           names_index: int | None = None) -> Program:
    """One program from a full row (and the twin kind it is, if any)."""
    names_rng = random.Random(f"lab-names:{seed}:{names_index if names_index is not None else index}")
    names = _draw_names(names_rng, _suffix(seed, index))
    writer = _Writer(row, twin, names)
    files, cause, change = writer.files()
    dims = tuple((d, row[d]) for d in DIMS) + (("variant", twin or "original"), ("nest", writer.nest))
    intent = "negative" if twin else intent_of(row)
    if twin == "outside":
        cause = None
    return Program(seed=seed, index=index, files=files, dims=dims, cause=cause, change=change,
                   intent=intent, twin_of=twin_of, name=writer.name)


def pairwise_programs(seed: int) -> int:
    """How many of a seed's first programs hold the pairwise covering (rows and their twins):
    those programs hold every valid pair of values at least once."""
    return sum(1 + len(twin_kinds(row)) for row in _pairwise_rows(random.Random(f"lab-rows:{seed}")))


def covering_rows(seed: int) -> list[dict[str, str]]:
    """The rows a seed's programs start with: the pairwise covering, then one row for each
    valid (location, type, use) cell the covering left out (each row's program is followed by
    its twins)."""
    rows = _rows(seed)
    pairwise = sum(1 for _ in _pairwise_rows(random.Random(f"lab-rows:{seed}")))
    written = set()
    out = []
    for row in rows:
        cell = (row["location"], row["type"], row["use"])
        if len(out) >= pairwise and cell in written:
            break
        written.add(cell)
        out.append(row)
    return out


def generate(seed: int, count: int) -> list[Program]:
    """``count`` programs from ``seed``: the same seed gives the same programs, byte for byte."""
    if count < 0:
        raise ValueError("count must be >= 0")
    programs: list[Program] = []
    rows = _rows(seed)
    while len(programs) < count:
        row = next(rows)
        positive = render(row, seed, len(programs))
        programs.append(positive)
        names_index = positive.index
        for kind in twin_kinds(row):
            if len(programs) >= count:
                break
            programs.append(render(row, seed, len(programs), kind, positive.key, names_index))
    return programs
