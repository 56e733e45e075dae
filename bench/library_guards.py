"""Measure what Dynamo guards when a torch library entry is compiled directly.

``analysis/library.py`` models the guards of torch callables and classes that projects
compile themselves (``torch.compile(opt.step)``, ``torch.compile(flex_attention)``,
``torch.compile(nn.Linear(...))``). Each case here compiles one such entry with
``backend="eager"`` (recompiles are decided by the guards, not the backend), calls it about
ten times changing one thing, and prints the number of graphs, whether ``recompile_limit``
was hit, and the first guard-failure reason. The results are recorded in docs/regions.md.

    python bench/library_guards.py            # every case (about a minute on CPU)
    python bench/library_guards.py flex sdpa  # the cases whose name holds one of these words

Needs torch (it is the only script of bench/ that imports it).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Callable

import torch
import torch._dynamo
from torch import nn

CALLS = 10


class _Recorder(logging.Handler):
    """Collects recompile reasons and limit warnings from Dynamo's loggers."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []
        self.limit = False

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name.endswith("__recompiles"):
            for line in message.split("\n"):
                text = line.strip()
                if text.startswith("- 0/") or text.startswith("- ") and ": " in text and "User stack" not in text:
                    self.reasons.append(text[2:].split("  #")[0].strip())
                    break
        elif "recompile_limit" in message or "cache_size_limit" in message:
            self.limit = True


RECORDER = _Recorder()


def _listen() -> None:
    torch._logging._internal.log_state.enable_artifact("recompiles")  # the in-process channel GROUND_TRUTH.md names
    for name in ("torch._dynamo.guards.__recompiles", "torch._dynamo.convert_frame"):
        logger = logging.getLogger(name)
        logger.addHandler(RECORDER)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False


def case(name: str, body: Callable[[], None]) -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    RECORDER.reasons.clear()
    RECORDER.limit = False
    start = time.perf_counter()
    try:
        body()
    except Exception as exc:  # noqa: BLE001 - a case that cannot run says so and the rest go on
        print(f"| {name} | error: {type(exc).__name__}: {str(exc)[:80]} | | |")
        return
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    first = RECORDER.reasons[0] if RECORDER.reasons else "-"
    limit = "yes" if RECORDER.limit else "no"
    print(f"| {name} | {graphs} | {limit} | `{first[:110]}` | {time.perf_counter() - start:.1f} s |", flush=True)


# ---- optimizer step ----------------------------------------------------------------------------


def _optimizer(cls=torch.optim.AdamW, **kwargs) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Linear(8, 8)
    return model, cls(model.parameters(), **kwargs)


def _train(model: nn.Module, opt: torch.optim.Optimizer, step: Callable[[], None], change: Callable[[int], None]) -> None:
    for i in range(CALLS):
        model(torch.randn(4, 8)).sum().backward()
        step()
        opt.zero_grad()
        change(i)


def optimizer_constant() -> None:
    model, opt = _optimizer(lr=1e-3)
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: None)


def optimizer_lr_float() -> None:
    model, opt = _optimizer(lr=1e-3)
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: opt.param_groups[0].__setitem__("lr", 1e-3 / (i + 2)))


def optimizer_lr_tensor() -> None:
    model, opt = _optimizer(lr=torch.tensor(1e-3))
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: opt.param_groups[0]["lr"].fill_(1e-3 / (i + 2)))


def optimizer_weight_decay() -> None:
    model, opt = _optimizer(lr=1e-3, weight_decay=0.1)
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: opt.param_groups[0].__setitem__("weight_decay", 0.1 / (i + 2)))


def optimizer_betas() -> None:
    model, opt = _optimizer(lr=1e-3)
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: opt.param_groups[0].__setitem__("betas", (0.9, 0.99 - i * 1e-3)))


def optimizer_int_group_value() -> None:
    # An int kept in a param group by the training code (a per-group step counter).
    model, opt = _optimizer(torch.optim.SGD, lr=1e-3, momentum=0.9)
    opt.param_groups[0]["momentum"] = 0.9

    def change(i: int) -> None:
        opt.param_groups[0]["momentum"] = 0.9 if i % 2 else 0.8

    _train(model, opt, torch.compile(opt.step, backend="eager"), change)


def optimizer_scheduler() -> None:
    model, opt = _optimizer(lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    _train(model, opt, torch.compile(opt.step, backend="eager"), lambda i: scheduler.step())


def optimizer_new_group() -> None:
    model, opt = _optimizer(lr=1e-3)
    extra = [nn.Parameter(torch.randn(8)) for _ in range(CALLS)]

    def change(i: int) -> None:
        opt.add_param_group({"params": [extra[i]]})

    _train(model, opt, torch.compile(opt.step, backend="eager"), change)


# ---- flex attention -----------------------------------------------------------------------------


def _flex():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    return flex_attention, create_block_mask


def flex_score_mod_closure_int() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        bias = i

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias

        attend(q, q, q, score_mod=score_mod)


def flex_score_mod_new_object_same_code() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    q = torch.randn(1, 2, 16, 8)
    for _ in range(CALLS):

        def score_mod(score, b, h, q_idx, kv_idx):
            return score * 2

        attend(q, q, q, score_mod=score_mod)


def flex_score_mod_distinct_functions() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    q = torch.randn(1, 2, 16, 8)
    mods = [eval(f"lambda score, b, h, q_idx, kv_idx: score + {i}") for i in range(CALLS)]  # noqa: S307 - distinct code objects
    for mod in mods:
        attend(q, q, q, score_mod=mod)


def flex_score_mod_closure_tensor() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        bias = torch.tensor(float(i))

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias

        attend(q, q, q, score_mod=score_mod)


def flex_sequence_length() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    for n in range(1, CALLS + 1):
        x = torch.randn(1, 2, 16 * n, 8)
        attend(x, x, x)


def flex_sequence_length_static() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager", dynamic=False)
    for n in range(1, CALLS + 1):
        x = torch.randn(1, 2, 16 * n, 8)
        attend(x, x, x)


def flex_block_mask_sizes() -> None:
    flex_attention, create_block_mask = _flex()
    attend = torch.compile(flex_attention, backend="eager")

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    for n in range(1, CALLS + 1):
        x = torch.randn(1, 2, 128 * n, 8)
        attend(x, x, x, block_mask=create_block_mask(causal, None, None, 128 * n, 128 * n, device="cpu"))


def flex_block_mask_rebuilt_same_size() -> None:
    flex_attention, create_block_mask = _flex()
    attend = torch.compile(flex_attention, backend="eager")

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    x = torch.randn(1, 2, 256, 8)
    for _ in range(CALLS):
        attend(x, x, x, block_mask=create_block_mask(causal, None, None, 256, 256, device="cpu"))


def flex_mask_mod_closure_int() -> None:
    flex_attention, create_block_mask = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    x = torch.randn(1, 2, 256, 8)
    for window in range(CALLS):

        def sliding(b, h, q_idx, kv_idx):
            return (q_idx - kv_idx <= window * 16) & (q_idx >= kv_idx)

        attend(x, x, x, block_mask=create_block_mask(sliding, None, None, 256, 256, device="cpu"))


def flex_mask_mod_distinct_functions() -> None:
    flex_attention, create_block_mask = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    x = torch.randn(1, 2, 256, 8)
    mods = [eval(f"lambda b, h, q_idx, kv_idx: q_idx - kv_idx <= {i}") for i in range(CALLS)]  # noqa: S307 - distinct code objects
    for mod in mods:
        attend(x, x, x, block_mask=create_block_mask(mod, None, None, 256, 256, device="cpu"))


def flex_scale() -> None:
    flex_attention, _ = _flex()
    attend = torch.compile(flex_attention, backend="eager")
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        attend(q, q, q, scale=0.1 * (i + 1))


def create_block_mask_lengths() -> None:
    _, create_block_mask = _flex()
    build = torch.compile(create_block_mask, backend="eager")

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    for n in range(1, CALLS + 1):
        build(causal, None, None, 128 * n, 128 * n, device="cpu")


# ---- scaled dot product attention ---------------------------------------------------------------


def _sdpa() -> Callable:
    return torch.compile(torch.nn.functional.scaled_dot_product_attention, backend="eager")


def sdpa_dropout_p() -> None:
    attend = _sdpa()
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        attend(q, q, q, dropout_p=0.01 * (i + 1))


def sdpa_is_causal() -> None:
    attend = _sdpa()
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        attend(q, q, q, is_causal=bool(i % 2))


def sdpa_scale() -> None:
    attend = _sdpa()
    q = torch.randn(1, 2, 16, 8)
    for i in range(CALLS):
        attend(q, q, q, scale=0.1 * (i + 1))


def sdpa_sequence_length() -> None:
    attend = _sdpa()
    for n in range(1, CALLS + 1):
        x = torch.randn(1, 2, 8 * n, 8)
        attend(x, x, x)


def functional_dropout_p() -> None:
    dropout = torch.compile(torch.nn.functional.dropout, backend="eager")
    for i in range(CALLS):
        dropout(torch.randn(4, 8), p=0.01 * (i + 1))


def functional_gelu_approximate() -> None:
    gelu = torch.compile(torch.nn.functional.gelu, backend="eager")
    for i in range(CALLS):
        gelu(torch.randn(4, 8), approximate="tanh" if i % 2 else "none")


# ---- nn modules compiled directly -------------------------------------------------------------


def module_constant() -> None:
    layer = torch.compile(nn.Linear(8, 8), backend="eager")
    for _ in range(CALLS):
        layer(torch.randn(4, 8))


def module_int_attribute() -> None:
    conv = nn.Conv1d(4, 4, 3)
    compiled = torch.compile(conv, backend="eager")
    for i in range(CALLS):
        conv.padding = (i,)
        compiled(torch.randn(1, 4, 32))


def module_float_attribute() -> None:
    drop = nn.Dropout(0.1)
    compiled = torch.compile(drop, backend="eager")
    for i in range(CALLS):
        drop.p = 0.01 * (i + 1)
        compiled(torch.randn(4, 8))


def module_train_eval() -> None:
    drop = nn.Dropout(0.1)
    compiled = torch.compile(drop, backend="eager")
    for i in range(CALLS):
        drop.train(bool(i % 2))
        compiled(torch.randn(4, 8))


def module_per_instance_int() -> None:
    # Many instances of one torch class compiled one by one: one code object, one cache.
    for i in range(CALLS):
        conv = torch.compile(nn.Conv1d(4, 4, 3, padding=i), backend="eager")
        conv(torch.randn(1, 4, 32))


CASES = {
    "optimizer step, constant hyper-parameters": optimizer_constant,
    "optimizer step, lr float changed every step": optimizer_lr_float,
    "optimizer step, lr float changed by StepLR every step": optimizer_scheduler,
    "optimizer step, lr tensor updated in place": optimizer_lr_tensor,
    "optimizer step, weight_decay float changed every step": optimizer_weight_decay,
    "optimizer step, betas tuple changed every step": optimizer_betas,
    "optimizer step, SGD momentum toggled between two values": optimizer_int_group_value,
    "optimizer step, a param group added every step": optimizer_new_group,
    "flex_attention, score_mod closes over an int that changes": flex_score_mod_closure_int,
    "flex_attention, score_mod re-created each call (same code)": flex_score_mod_new_object_same_code,
    "flex_attention, a different score_mod function each call": flex_score_mod_distinct_functions,
    "flex_attention, score_mod closes over a new tensor each call": flex_score_mod_closure_tensor,
    "flex_attention, sequence length varies": flex_sequence_length,
    "flex_attention, sequence length varies, dynamic=False": flex_sequence_length_static,
    "flex_attention, block_mask for a new sequence length each call": flex_block_mask_sizes,
    "flex_attention, block_mask rebuilt each call, same size": flex_block_mask_rebuilt_same_size,
    "flex_attention, mask_mod closes over an int that changes": flex_mask_mod_closure_int,
    "flex_attention, a different mask_mod function each call": flex_mask_mod_distinct_functions,
    "flex_attention, scale float varies": flex_scale,
    "create_block_mask compiled, Q_LEN/KV_LEN vary": create_block_mask_lengths,
    "scaled_dot_product_attention, dropout_p varies": sdpa_dropout_p,
    "scaled_dot_product_attention, is_causal toggled": sdpa_is_causal,
    "scaled_dot_product_attention, scale varies": sdpa_scale,
    "scaled_dot_product_attention, sequence length varies": sdpa_sequence_length,
    "F.dropout compiled, p varies": functional_dropout_p,
    "F.gelu compiled, approximate toggled": functional_gelu_approximate,
    "nn.Linear compiled, nothing changes": module_constant,
    "nn.Conv1d compiled, int attribute (padding) changed every call": module_int_attribute,
    "nn.Dropout compiled, float attribute (p) changed every call": module_float_attribute,
    "nn.Dropout compiled, train/eval toggled": module_train_eval,
    "nn.Conv1d instances compiled one by one, padding differs": module_per_instance_int,
}


def main(argv: list[str]) -> None:
    _listen()
    words = [w.lower() for w in argv]
    print(f"torch {torch.__version__}, backend=eager, {CALLS} calls per case, recompile_limit {torch._dynamo.config.recompile_limit}")
    print()
    print("| case | graphs | limit hit | first guard failure | time |")
    print("|---|---|---|---|---|")
    for name, body in CASES.items():
        if not words or any(w in name.lower() for w in words):
            case(name, body)


if __name__ == "__main__":
    main(sys.argv[1:])
