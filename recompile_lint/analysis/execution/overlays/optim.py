"""Optimizers and LR schedulers: ``torch.optim.SGD/Adam/AdamW/LBFGS(params, lr=...)`` hold
``param_groups`` (one dict of the options, as torch 2.13 fills it) and ``defaults``; a
scheduler writes each group's
``lr`` at ``step()``, from ``initial_lr`` and its epoch count, as torch's closed forms do
(``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``).
``step()`` and ``zero_grad()`` of an optimizer change nothing the run follows; ``step(closure)``
calls the closure, under ``torch.enable_grad()`` as torch does."""

from __future__ import annotations

import math

from recompile_lint.analysis.execution.values import TOP, Const, ContextValue, DictValue, Instance, ListValue, TupleValue

_COMMON = {"weight_decay": Const(0), "maximize": Const(False), "foreach": Const(None), "differentiable": Const(False), "fused": Const(None)}
_ADAM = {
    "betas": TupleValue((Const(0.9), Const(0.999))), "eps": Const(1e-08), "amsgrad": Const(False), "capturable": Const(False),
}  # fmt: skip
OPTIMIZERS = {
    "SGD": {"lr": Const(0.001), "momentum": Const(0), "dampening": Const(0), "nesterov": Const(False), **_COMMON},
    "Adam": {"lr": Const(0.001), **_ADAM, **_COMMON, "decoupled_weight_decay": Const(False)},
    "AdamW": {"lr": Const(0.001), **_ADAM, **_COMMON, "weight_decay": Const(0.01), "decoupled_weight_decay": Const(True)},
    # ``max_eval`` None is ``max_iter * 5 // 4`` (``_optimizer``).
    "LBFGS": {"lr": Const(1), "max_iter": Const(20), "max_eval": Const(None), "tolerance_grad": Const(1e-07),
              "tolerance_change": Const(1e-09), "history_size": Const(100), "line_search_fn": Const(None)},
}


def _optimizer(name: str):
    def handler(interp, frame, args, kwargs, node) -> object:
        options = dict(OPTIMIZERS[name])
        names = list(options)
        for key, value in zip(names, args[1:]):  # ``SGD(params, 0.1)``
            options[key] = value
        for key, value in kwargs.items():
            if key not in options:
                return TOP  # an option this model does not know: its groups are not known either
            options[key] = value
        if name == "LBFGS" and options["max_eval"] == Const(None):
            most = options["max_iter"]
            options["max_eval"] = Const(most.value * 5 // 4) if isinstance(most, Const) and type(most.value) is int else TOP
        cls = interp.library_class(f"torch.optim.{name}")
        optimizer = Instance(cls, interp.heap.new("object"))
        where = interp.location(frame, node, "write")
        group = DictValue(interp.heap.new("dict", {"params": TOP, **options}))
        interp.heap.write(optimizer.addr, "param_groups", interp.new_list([group]), where)
        interp.heap.write(optimizer.addr, "defaults", DictValue(interp.heap.new("dict", dict(options))), where)
        return optimizer

    return handler


def _nothing(interp, frame, args, kwargs, node) -> object:
    return Const(None)


def _step(interp, frame, args, kwargs, node) -> object:
    """``optimizer.step(closure)``: the closure is called once, under ``torch.enable_grad()``,
    and ``step`` returns what it returns (the loss); without one, ``None``. ``LBFGS`` may call
    it up to ``max_eval`` times per step, as its line search goes: once is what every step
    does."""
    closure = args[1] if len(args) > 1 else kwargs.get("closure", Const(None))
    if closure == Const(None) or closure is TOP:
        return Const(None)
    interp.grad_modes.append(ContextValue("enable_grad"))
    try:
        return interp.call(frame, closure, [], {}, node)
    finally:
        interp.grad_modes.pop()


def _groups(interp, optimizer: object) -> list[DictValue] | None:
    if not isinstance(optimizer, Instance):
        return None
    groups = interp.heap.read(optimizer.addr, "param_groups", None)
    items = interp.items(groups) if isinstance(groups, ListValue) else None
    if items is None or not all(isinstance(g, DictValue) for g in items):
        return None
    return items  # type: ignore[return-value]


def _scheduler(name: str, schedule, options: tuple[str, ...]):
    """``schedule(base_lr, epoch, settings)`` -> the lr at that epoch, or None if unknown."""

    def handler(interp, frame, args, kwargs, node) -> object:
        if not args:
            return TOP
        optimizer = args[0]
        settings = dict(zip(options, args[1:]))
        settings.update(kwargs)
        groups = _groups(interp, optimizer)
        cls = interp.library_class(f"torch.optim.lr_scheduler.{name}")
        scheduler = Instance(cls, interp.heap.new("object"))
        where = interp.location(frame, node, "write")
        if groups is None:
            return scheduler
        bases = []
        for group in groups:
            slots = interp.heap.slots(group.addr)
            if "initial_lr" not in slots:
                interp.heap.write(group.addr, "initial_lr", slots.get("lr", TOP), where)
            bases.append(interp.heap.slots(group.addr)["initial_lr"])
        interp.heap.write(scheduler.addr, "optimizer", optimizer, where)
        interp.heap.write(scheduler.addr, "base_lrs", interp.new_list(bases), where)
        interp.heap.write(scheduler.addr, "last_epoch", Const(0), where)
        interp.heap.write(scheduler.addr, "__settings__", DictValue(interp.heap.new("dict", settings)), where)
        interp.heap.write(scheduler.addr, "__schedule__", Const(name), where)
        _apply(interp, scheduler, schedule, where)
        return scheduler

    return handler


def _apply(interp, scheduler: Instance, schedule, where) -> None:
    """Each group's lr at the scheduler's epoch; top where anything is unknown."""
    heap = interp.heap
    groups = _groups(interp, heap.read(scheduler.addr, "optimizer", None))
    bases = interp.items(heap.read(scheduler.addr, "base_lrs", None)) if groups is not None else None
    epoch = heap.read(scheduler.addr, "last_epoch", TOP)
    settings_value = heap.read(scheduler.addr, "__settings__", None)
    settings = dict(heap.slots(settings_value.addr)) if isinstance(settings_value, DictValue) else {}
    if groups is None or bases is None or len(bases) != len(groups):
        return
    lrs = []
    for group, base in zip(groups, bases):
        lr = None
        if isinstance(base, Const) and isinstance(base.value, (int, float)) and isinstance(epoch, Const):
            lr = schedule(interp, base.value, epoch.value, settings)
        value = Const(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else TOP
        heap.write(group.addr, "lr", value, where)
        lrs.append(value)
    heap.write(scheduler.addr, "_last_lr", interp.new_list(lrs), where)


def _number(settings: dict, key: str, default=None):
    value = settings.get(key)
    if value is None:
        return default
    return value.value if isinstance(value, Const) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool) else None


def _step_lr(interp, base, epoch, settings):
    size, gamma = _number(settings, "step_size"), _number(settings, "gamma", 0.1)
    if not isinstance(size, int) or size <= 0 or gamma is None:
        return None
    return base * gamma ** (epoch // size)


def _multistep_lr(interp, base, epoch, settings):
    milestones = interp.items(settings.get("milestones")) if settings.get("milestones") is not None else None
    gamma = _number(settings, "gamma", 0.1)
    if milestones is None or gamma is None or not all(isinstance(m, Const) and type(m.value) is int for m in milestones):
        return None
    return base * gamma ** sum(1 for m in milestones if m.value <= epoch)  # type: ignore[union-attr]


def _exponential_lr(interp, base, epoch, settings):
    gamma = _number(settings, "gamma")
    return None if gamma is None else base * gamma**epoch


def _cosine_lr(interp, base, epoch, settings):
    t_max, eta_min = _number(settings, "T_max"), _number(settings, "eta_min", 0)
    if not t_max or eta_min is None:
        return None
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / t_max)) / 2


def _scheduler_step(interp, frame, args, kwargs, node) -> object:
    scheduler = args[0] if args else None
    if not isinstance(scheduler, Instance) or len(args) > 1:
        return Const(None)
    heap = interp.heap
    epoch = heap.read(scheduler.addr, "last_epoch", TOP)
    where = interp.location(frame, node, "write")
    heap.write(scheduler.addr, "last_epoch", Const(epoch.value + 1) if isinstance(epoch, Const) and type(epoch.value) is int else TOP, where)
    name = heap.read(scheduler.addr, "__schedule__", None)
    schedule = SCHEDULES.get(name.value) if isinstance(name, Const) else None  # type: ignore[arg-type]
    if schedule is not None:
        _apply(interp, scheduler, schedule[0], where)
    return Const(None)


def _last_lr(interp, frame, args, kwargs, node) -> object:
    if args and isinstance(args[0], Instance):
        found = interp.heap.read(args[0].addr, "_last_lr", None)
        items = interp.items(found) if isinstance(found, ListValue) else None
        if items is not None:
            return interp.new_list(list(items))
    return TOP


SCHEDULES = {
    "StepLR": (_step_lr, ("step_size", "gamma")),
    "MultiStepLR": (_multistep_lr, ("milestones", "gamma")),
    "ExponentialLR": (_exponential_lr, ("gamma",)),
    "CosineAnnealingLR": (_cosine_lr, ("T_max", "eta_min")),
}

HANDLERS = {
    **{f"torch.optim.{name}": _optimizer(name) for name in OPTIMIZERS},
    **{f"torch.optim.{name}.step": _step for name in OPTIMIZERS},
    **{f"torch.optim.{name}.zero_grad": _nothing for name in OPTIMIZERS},
    **{f"torch.optim.lr_scheduler.{name}": _scheduler(name, schedule, options) for name, (schedule, options) in SCHEDULES.items()},
    **{f"torch.optim.lr_scheduler.{name}.step": _scheduler_step for name in SCHEDULES},
    **{f"torch.optim.lr_scheduler.{name}.get_last_lr": _last_lr for name in SCHEDULES},
}
