"""Library regions: torch callables and classes a project compiles directly.

``torch.compile(opt.step)``, ``torch.compile(flex_attention)``,
``torch.compile(F.scaled_dot_product_attention)`` and ``torch.compile(nn.Linear(...))`` compile
code that lives in torch: its body is not linted, but what Dynamo guards on its arguments and
state is known, measured on torch 2.13 by ``bench/library_guards.py`` (results and method in
docs/regions.md). This module is that knowledge as data, for the guard model and the rules to
read: entry -> argument or attribute -> guard kind, Dynamo's spelling of the guarded source,
and how many graphs a changing value costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from recompile_lint.analysis.facts import CompileSite
from recompile_lint.analysis.valueflow import Value


@dataclass(frozen=True)
class LibraryGuard:
    """One value Dynamo guards when it traces a library entry, and what changing it costs.

    ``subject``: the argument or attribute, as a user writes it (``param_groups[i]['lr']``,
    ``score_mod``, ``block_mask``). ``guard``: the guard kind (``models.Guard.kind``:
    ``CONSTANT_MATCH``, ``ID_MATCH``, ``LENGTH_CHECK``, ``TENSOR_MATCH``). ``source``: the
    guarded source as Dynamo 2.13 prints it in a guard failure, with ``{placeholders}``
    (``self.param_groups[{group}]['{key}']``). ``value_kind``: what kind of value changes
    (``float``, ``int``, ``bool``, ``str``, ``tuple``, ``function``, ``closure-int``,
    ``tensor``, ``length``). ``bounded``: ``unbounded`` (every new value is a graph until
    ``recompile_limit``), ``bounded`` (a fixed number, ``graphs``), or ``none`` (no
    recompile). ``graphs``: the number of graphs measured over ten changing calls. ``case``:
    the measuring case in ``bench/library_guards.py``.
    """

    subject: str
    guard: str
    source: str
    value_kind: str
    bounded: str
    graphs: str
    case: str


@dataclass(frozen=True)
class LibraryEntry:
    """A kind of torch object a project compiles, and the guards its trace installs."""

    name: str  # optimizer-step, flex-attention, create-block-mask, sdpa, nn-module, torch-function
    summary: str
    guards: tuple[LibraryGuard, ...]

    def guards_on(self, subject: str) -> tuple[LibraryGuard, ...]:
        """The guards whose subject is ``subject`` or starts with it (``param_groups``)."""
        return tuple(g for g in self.guards if g.subject == subject or g.subject.startswith(subject))


@dataclass(frozen=True)
class LibraryRegion:
    """A compile site whose compiled object is a torch callable or torch class instance."""

    entry: LibraryEntry
    ref: str  # what is compiled: torch.optim.AdamW.step, torch.nn.functional.scaled_dot_product_attention
    site: CompileSite
    site_path: str
    model_class: str = ""  # the torch class of a compiled module or optimizer (torch.nn.Linear)
    form: str = "library"  # how the site was resolved (regions.RESOLUTION_FORMS)
    container: str = ""  # per-block compiles: the container the instance comes from, as written


OPTIMIZER_STEP = LibraryEntry(
    name="optimizer-step",
    summary="`Optimizer.step` of a torch.optim optimizer: its param groups' values and its state are guarded",
    guards=(
        LibraryGuard("param_groups[i]['lr']", "CONSTANT_MATCH", "self.param_groups[{group}]['lr']", "float", "bounded", "2", "optimizer step, lr float changed every step"),
        LibraryGuard("param_groups[i]['weight_decay']", "CONSTANT_MATCH", "self.param_groups[{group}]['weight_decay']", "float", "bounded", "2", "optimizer step, weight_decay float changed every step"),
        LibraryGuard("param_groups[i]['betas']", "CONSTANT_MATCH", "self.param_groups[{group}]['betas'][{index}]", "tuple", "bounded", "2", "optimizer step, betas tuple changed every step"),
        LibraryGuard("param_groups[i][key] (other floats: momentum, eps)", "CONSTANT_MATCH", "self.param_groups[{group}]['{key}']", "float", "bounded", "2", "optimizer step, SGD momentum toggled between two values"),
        LibraryGuard("param_groups[i]['lr'] as a tensor", "TENSOR_MATCH", "self.param_groups[{group}]['lr']", "tensor", "none", "1", "optimizer step, lr tensor updated in place"),
        LibraryGuard("len(param_groups)", "LENGTH_CHECK", "len(self.param_groups)", "length", "unbounded", "8 (limit)", "optimizer step, a param group added every step"),
        LibraryGuard("state", "LENGTH_CHECK", "len(self.state[list(dict.keys(self.state))[{i}]])", "length", "bounded", "2", "optimizer step, SGD momentum toggled between two values"),
    ),
)

FLEX_ATTENTION = LibraryEntry(
    name="flex-attention",
    summary="`flex_attention`: the identity and closure cells of `score_mod` and `block_mask.mask_mod`, tensor sizes and `scale`",
    guards=(
        LibraryGuard("score_mod", "ID_MATCH", "score_mod.__code__", "function", "unbounded", "10 (limit)", "flex_attention, a different score_mod function each call"),
        LibraryGuard("score_mod re-created (same code)", "ID_MATCH", "score_mod.__code__", "function", "none", "1", "flex_attention, score_mod re-created each call (same code)"),
        LibraryGuard("score_mod closure", "CONSTANT_MATCH", "score_mod.__closure__[{cell}].cell_contents", "closure-int", "bounded", "2", "flex_attention, score_mod closes over an int that changes"),
        LibraryGuard("score_mod closure tensor", "TENSOR_MATCH", "score_mod.__closure__[{cell}].cell_contents", "tensor", "none", "1", "flex_attention, score_mod closes over a new tensor each call"),
        LibraryGuard("block_mask.mask_mod", "ID_MATCH", "block_mask.mask_mod.__code__", "function", "unbounded", "10 (limit)", "flex_attention, a different mask_mod function each call"),
        LibraryGuard("block_mask.mask_mod closure", "CONSTANT_MATCH", "block_mask.mask_mod.__closure__[{cell}].cell_contents", "closure-int", "bounded", "2", "flex_attention, mask_mod closes over an int that changes"),
        LibraryGuard("block_mask sizes", "TENSOR_MATCH", "tensor 'query' size", "tensor", "bounded", "2", "flex_attention, block_mask for a new sequence length each call"),
        LibraryGuard("query/key/value sizes", "TENSOR_MATCH", "tensor 'query' size", "tensor", "bounded", "2", "flex_attention, sequence length varies"),
        LibraryGuard("query/key/value sizes with dynamic=False", "TENSOR_MATCH", "tensor 'query' size", "tensor", "unbounded", "10 (limit)", "flex_attention, sequence length varies, dynamic=False"),
        LibraryGuard("scale", "CONSTANT_MATCH", "scale", "float", "bounded", "2", "flex_attention, scale float varies"),
    ),
)

CREATE_BLOCK_MASK = LibraryEntry(
    name="create-block-mask",
    summary="`create_block_mask`: the sequence lengths and the `mask_mod` function",
    guards=(
        LibraryGuard("Q_LEN/KV_LEN", "CONSTANT_MATCH", "Q_LEN", "int", "bounded", "2", "create_block_mask compiled, Q_LEN/KV_LEN vary"),
        LibraryGuard("mask_mod", "ID_MATCH", "mask_mod.__code__", "function", "unbounded", "10 (limit)", "flex_attention, a different mask_mod function each call"),
    ),
)

SDPA = LibraryEntry(
    name="sdpa",
    summary="`scaled_dot_product_attention` compiled directly: its Python scalar arguments are constants of the graph",
    guards=(
        LibraryGuard("dropout_p", "CONSTANT_MATCH", "kwargs['dropout_p']", "float", "unbounded", "8 (limit)", "scaled_dot_product_attention, dropout_p varies"),
        LibraryGuard("scale", "CONSTANT_MATCH", "kwargs['scale']", "float", "unbounded", "8 (limit)", "scaled_dot_product_attention, scale varies"),
        LibraryGuard("is_causal", "CONSTANT_MATCH", "kwargs['is_causal']", "bool", "bounded", "2", "scaled_dot_product_attention, is_causal toggled"),
        LibraryGuard("query/key/value sizes", "TENSOR_MATCH", "tensor 'args[0]' size", "tensor", "bounded", "2", "scaled_dot_product_attention, sequence length varies"),
    ),
)

NN_MODULE = LibraryEntry(
    name="nn-module",
    summary="a torch.nn module compiled directly: its int and float attributes and `training` are guarded",
    guards=(
        LibraryGuard("int attributes", "CONSTANT_MATCH", "fn.{attr}", "int", "unbounded", "8 (limit)", "nn.Conv1d compiled, int attribute (padding) changed every call"),
        LibraryGuard("float attributes", "CONSTANT_MATCH", "fn.{attr}", "float", "unbounded", "8 (limit)", "nn.Dropout compiled, float attribute (p) changed every call"),
        LibraryGuard("training", "CONSTANT_MATCH", "fn.training", "bool", "bounded", "2", "nn.Dropout compiled, train/eval toggled"),
        LibraryGuard("instances compiled one by one", "CONSTANT_MATCH", "fn.{attr}", "int", "unbounded", "8 (limit)", "nn.Conv1d instances compiled one by one, padding differs"),
    ),
)

TORCH_FUNCTION = LibraryEntry(
    name="torch-function",
    summary="another torch callable compiled directly: Python scalars passed to it are constants of the graph",
    guards=(
        LibraryGuard("float keyword arguments", "CONSTANT_MATCH", "kwargs['{name}']", "float", "unbounded", "8 (limit)", "F.dropout compiled, p varies"),
        LibraryGuard("str keyword arguments", "CONSTANT_MATCH", "kwargs['{name}']", "str", "bounded", "one per value", "F.gelu compiled, approximate toggled"),
    ),
)

ENTRIES = (OPTIMIZER_STEP, FLEX_ATTENTION, CREATE_BLOCK_MASK, SDPA, NN_MODULE, TORCH_FUNCTION)

# Torch names of the entries that are not recognised by their kind alone.
_BY_REF = {
    "torch.nn.attention.flex_attention.flex_attention": FLEX_ATTENTION,
    "torch.nn.attention.flex_attention.create_block_mask": CREATE_BLOCK_MASK,
    "torch.nn.functional.scaled_dot_product_attention": SDPA,
    "torch._C._nn.scaled_dot_product_attention": SDPA,
}


def entry_for(value: Value) -> LibraryEntry | None:
    """The library entry a compiled torch value is, or None when it is not a torch object
    Dynamo can trace (a torch class itself, a torch object's data attribute)."""
    if not value.is_torch():
        return None
    known = _BY_REF.get(value.ref)
    if known is not None:
        return known
    if value.kind == "bound-method" and len(value.elements) > 1:
        receiver = value.elements[1]
        if receiver.ref.startswith("torch.optim.") and not receiver.ref.startswith("torch.optim.lr_scheduler.") and value.name == "step":
            return OPTIMIZER_STEP
        if receiver.ref.startswith("torch.nn.") and value.name == "forward":
            return NN_MODULE
        return None
    if value.kind == "torch-instance":
        return NN_MODULE if value.ref.startswith("torch.nn.") else None
    if value.kind == "container" and value.ref == "torch.nn.Sequential":
        return NN_MODULE
    if value.kind == "torch-callable":
        return TORCH_FUNCTION
    return None
