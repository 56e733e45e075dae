"""The child process: import one module (or run one program) under the recorder.

Started by ``runner`` as ``python -B -c '...child.main()' JOB.json``. It reads the job, writes
its results to the job's result file after every finding (so a crash or a timeout still
leaves the verdicts reached so far), and ends with ``os._exit`` so that threads or ``atexit``
hooks the user's code registered cannot keep it alive. All user code runs here, never in the
parent.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import re
import runpy
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any, Callable

from recompile_lint.verify.probes import (
    COMPILE_OPTIONS,
    NOT_A_RECOMPILE,
    FindingSpec,
    evaluate_examples,
    Probe,
    ProbeContext,
    ProbeError,
    Target,
    no_probe_reason,
    probe_builder,
)
from recompile_lint.verify.recorder import Recorder, Recording
from recompile_lint.verify.results import Verdict, Verification, unverifiable
from recompile_lint.verify.synthesis import (
    CallArgs,
    candidates,
    constructor_args,
    layer_sizes,
    module_sizes,
)
from recompile_lint.verify.verdicts import judge


class _Results:
    """The result file, rewritten atomically after each change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {"status": "starting", "verifications": {}, "current": None}
        self.lock = threading.RLock()

    def update(self, **changes: Any) -> None:
        with self.lock:
            self.data.update(changes)
            self.flush()

    def verdict(self, index: int, verification: Verification) -> None:
        self.data["verifications"][str(index)] = verification.to_dict()
        self.data["current"] = None
        self.flush()

    def flush(self) -> None:
        with self.lock:
            tmp = f"{self.path}.tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(self.data, handle)
            os.replace(tmp, self.path)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    # Dynamo appends the user stack and hints to its messages: the first line says it.
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    text = f"{type(exc).__name__}: {first}".strip().rstrip(":")
    return text if len(text) <= 300 else text[:297] + "..."


def _where(exc: BaseException, files: set[str]) -> str:
    """``file:line`` of the deepest frame in the user's files, for error messages."""
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename in files:
            found = f" ({Path(frame.filename).name}:{frame.lineno})"
    return found


def force_backend(torch: Any, backend: str) -> None:
    """Make every ``torch.compile`` with a named backend use ``backend`` (custom ones stay).

    Recompiles are decided by Dynamo's guards, not the backend, and ``eager`` compiles in
    milliseconds where inductor takes seconds; user code imported afterwards picks this up.
    """
    original = torch.compile
    if getattr(original, "_recompile_lint_backend", None) is not None:
        return

    @functools.wraps(original)
    def compile_with_backend(*args: Any, **kwargs: Any) -> Any:
        chosen = kwargs.get("backend")
        if chosen is None or isinstance(chosen, str):
            kwargs["backend"] = backend
            if backend != "inductor":
                kwargs.pop("mode", None)
                kwargs.pop("options", None)
        return original(*args, **kwargs)

    compile_with_backend._recompile_lint_backend = backend  # type: ignore[attr-defined]
    torch.compile = compile_with_backend


def _is_compiled(obj: Any) -> bool:
    return hasattr(obj, "_torchdynamo_orig_callable") or hasattr(obj, "_orig_mod")


def _make_tensor(torch: Any, device: str) -> Callable[[tuple[int, ...], bool, int], Any]:
    def make(shape: tuple[int, ...], index: bool, high: int) -> Any:
        if index:
            return torch.randint(0, max(high, 1), shape, device=device)
        return torch.randn(shape, device=device)

    return make


def _instantiate(cls: type, sizes: list[int], torch: Any, device: str) -> Any:
    errors = []

    def make_module(size: int) -> Any:
        return torch.nn.Linear(size, size)

    for args, kwargs in constructor_args(cls, sizes, make_module):
        try:
            inst = cls(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any constructor
            errors.append(_describe(exc))
            continue
        if isinstance(inst, torch.nn.Module):
            inst = inst.to(device)
        return inst
    raise ProbeError(f"cannot construct {cls.__name__}: {errors[-1] if errors else 'needs arguments'}")


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return a == b


def code_of(obj: Any) -> CodeType | None:
    """The code object Dynamo compiles for ``obj``: a compiled function's original, a compiled
    module's (or module class's) ``forward``, a method's function."""
    for _ in range(6):
        if hasattr(obj, "_torchdynamo_orig_callable"):
            obj = obj._torchdynamo_orig_callable
        elif hasattr(obj, "_orig_mod"):
            obj = type(obj._orig_mod).forward
        elif isinstance(obj, type) and callable(getattr(obj, "forward", None)):
            obj = obj.forward
        else:
            break
    code = getattr(getattr(obj, "__func__", obj), "__code__", None)
    return code if isinstance(code, CodeType) else None


def region_code(module: ModuleType, region: str) -> CodeType | None:
    """The code object of ``region`` (``pkg.mod.f``, ``pkg.mod.Net.forward``) when it is defined
    in ``module``'s own file: regions are matched by file and qualified name, never by a
    same-named function elsewhere."""
    name = module.__name__
    if not region.startswith(name + "."):
        return None
    obj: Any = module
    for part in region[len(name) + 1:].split("."):
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
    code = code_of(obj)
    if code is None or not _same_file(code.co_filename, getattr(module, "__file__", None)):
        return None
    return code


def locate(module: ModuleType, region: str, torch: Any, backend: str, sizes: list[int],
           device: str, options: dict[str, Any] | None = None) -> Target:
    """Find the compiled callable ``region`` names in ``module`` (or compile it here with ``options``)."""
    options = dict(options or {})
    name = module.__name__
    strict = region.startswith(name + ".")
    if strict:
        parts = region[len(name) + 1:].split(".")
    else:
        # The linter may name modules differently (a tree without packages): keep what resolves.
        parts = region.split(".")
        while parts and not hasattr(module, parts[0]):
            parts = parts[1:]
    if not parts:
        raise ProbeError(f"{region} is not defined at the top level of {name}")
    parent: Any = module
    obj: Any = module
    for part in parts:
        if not hasattr(obj, part):
            raise ProbeError(f"{region} is not reachable from the top level of {name}")
        parent, obj = obj, getattr(obj, part)
    if not strict:
        # A same-named function imported from another file is not the region.
        code = code_of(obj)
        if code is not None and not _same_file(code.co_filename, getattr(module, "__file__", None)):
            raise ProbeError(f"{'.'.join(parts)} in {name} is defined in {code.co_filename}, not the region's file")
    if isinstance(parent, type):
        # ``pkg.mod.Class.method``: build an instance; ``forward`` means the module is compiled.
        inst = _instantiate(parent, sizes, torch, device)
        code = getattr(getattr(obj, "__func__", obj), "__code__", None)
        if parts[-1] == "forward" and isinstance(inst, torch.nn.Module):
            return Target(torch.compile(inst, backend=backend, **options), inst, code, inst, "module",
                          signature=inst.forward)
        bound = getattr(inst, parts[-1])
        return Target(torch.compile(bound, backend=backend, **options), bound, code, inst, "method")
    if _is_compiled(obj) and hasattr(obj, "_torchdynamo_orig_callable"):
        plain = obj._torchdynamo_orig_callable
        return Target(obj, plain, getattr(plain, "__code__", None), None, "compiled function")
    if hasattr(obj, "_orig_mod"):  # an OptimizedModule bound at module level
        inst = obj._orig_mod
        return Target(obj, inst, getattr(type(inst).forward, "__code__", None), inst, "module",
                      signature=inst.forward)
    if callable(obj):
        for value in vars(module).values():
            if getattr(value, "_torchdynamo_orig_callable", None) is obj:
                return Target(value, obj, getattr(obj, "__code__", None), None, "compiled function")
        compiled = torch.compile(obj, backend=backend, **options)
        return Target(compiled, obj, getattr(obj, "__code__", None), None, "function")
    raise ProbeError(f"{region} is not callable")


def find_arguments(target: Target, module: ModuleType, sizes: list[int], torch: Any, device: str,
                   examples: dict[str, str], region: str, spec: FindingSpec | None = None) -> CallArgs:
    """Arguments on which the uncompiled region runs: declared examples, else a search."""
    short = region[len(module.__name__) + 1:] if region.startswith(module.__name__ + ".") else region
    for key in (region, short, f"{module.__name__}.{short}"):
        if key in examples:
            namespace = {**vars(module), "torch": torch}
            try:
                value = eval(examples[key], namespace)  # noqa: S307 - the user's own config
            except Exception as exc:  # noqa: BLE001
                raise ProbeError(f"example inputs for {key} failed: {_describe(exc)}") from exc
            args = list(value) if isinstance(value, tuple) else [value]
            call = CallArgs(args, {}, _names(target.signature or target.plain, len(args)), "examples")
            try:
                target.plain(*call.args)
            except Exception as exc:  # noqa: BLE001
                raise ProbeError(f"the uncompiled {short} fails on the declared example inputs: "
                                 f"{_describe(exc)}") from exc
            return call
    widths, tables = layer_sizes(target.instance)
    all_sizes = list(dict.fromkeys([*widths, *sizes]))
    last_error = ""
    tried = 0
    for call in candidates(target.signature or target.plain, all_sizes, tables, _make_tensor(torch, device),
                           lambda: torch.nn.Identity(), lambda name: _callable_for(name, spec, module, torch)):
        tried += 1
        try:
            target.plain(*call.args, **call.kwargs)
        except Exception as exc:  # noqa: BLE001 - a failing candidate is expected
            last_error = _describe(exc)
            continue
        return call
    if tried == 0:
        raise ProbeError(f"cannot read the signature of {short}")
    raise ProbeError(f"no synthesized arguments work on the uncompiled {short} "
                     f"({tried} tried; last error: {last_error})")


def _callable_for(name: str, spec: FindingSpec | None, module: ModuleType, torch: Any) -> Any:
    """A callable for a parameter: the first call-site example when the finding names one."""
    subject = spec.subject if spec else None
    if subject is not None and subject.kind == "callable" and subject.name == name:
        for value in evaluate_examples(subject.examples, module, 1):
            if callable(value):
                return value
    return torch.relu


def _names(fn: Callable[..., Any], count: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    return (params + [f"arg{i}" for i in range(len(params), count)])[:count]


def _entry_point(module: ModuleType) -> tuple[str, Callable[[], Any]] | None:
    """A zero-argument ``main`` or ``run`` the module defines, else its ``__main__`` block."""
    for name in ("main", "run"):
        fn = getattr(module, name, None)
        if not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            return f"{module.__name__}.{name}()", fn
    path = getattr(module, "__file__", None)
    try:
        source = Path(path).read_text(encoding="utf-8") if path else ""
    except (OSError, UnicodeDecodeError):
        source = ""
    if re.search(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", source, re.MULTILINE):
        # Runs as a separate ``__main__`` module: the imported one stays as it was.
        return f"the __main__ block of {module.__name__}", functools.partial(runpy.run_path, str(path), run_name="__main__")
    return None


@dataclass(frozen=True)
class ProbeRun:
    """What one probe did: its recording, calls made, why it stopped early, what it varied."""

    recording: Recording
    done: int
    stopped: str
    description: str
    how: str  # "probe" or "examples"
    region: tuple[str, int] | None  # the compiled code object's file and first line


class ProbeSession:
    """Probes every finding of one module, in order, inside this process."""

    def __init__(self, job: dict[str, Any], torch: Any) -> None:
        self.job = job
        self.torch = torch
        self.backend = str(job.get("backend", "eager"))
        self.device = str(job.get("device", "cpu"))
        self.calls = int(job.get("calls", 12))
        self.examples = dict(job.get("examples", {}))
        self.user_files: set[str] = set()
        self.at_import: Recording | None = None  # what importing the module compiled
        self.entry_runs: dict[str, tuple[Recording, str]] = {}  # entry point -> its recording, why it stopped
        self.probe_runs: dict[tuple[str, str, Any], ProbeRun] = {}  # (code, region, subject) -> its run

    def _finding_module(self, spec: FindingSpec, region_module: ModuleType) -> ModuleType | None:
        name = _module_name(spec.path, str(self.job.get("root", "")))
        if not name or name == region_module.__name__:
            return None
        module, _ = _import(name, self.user_files)
        return module

    def reset(self) -> None:
        try:
            self.torch._dynamo.reset()
        except Exception:  # noqa: BLE001 - a failed reset only blurs the next count
            pass

    def _region(self, module: ModuleType, spec: FindingSpec) -> tuple[str, int] | None:
        code = region_code(module, spec.region) if spec.region else None
        return (code.co_filename, code.co_firstlineno) if code is not None else None

    def probe(self, module: ModuleType, spec: FindingSpec, sizes: list[int]) -> Verification:
        if spec.code in NOT_A_RECOMPILE:
            return unverifiable(no_probe_reason(spec.code))
        region = self._region(module, spec)
        if self.at_import is not None:
            # A module-level sweep recompiles while the module is imported: that is evidence
            # already, and after it the region may sit at the limit, where nothing is logged.
            seen = judge(self.at_import, spec.subject, path=spec.path, line=spec.line, calls=0,
                         description=f"importing {module.__name__}", method="import", region_code=region,
                         region_name=spec.region)
            if seen.verdict is Verdict.CONFIRMED:
                return seen
        builder = probe_builder(spec.code)
        if builder is None or not spec.region:
            # The module's own entry point may still show it; otherwise say why not.
            return self.via_entry_point(module, spec, no_probe_reason(spec.code), region)
        key = (spec.code, spec.region, spec.subject)
        if key in self.probe_runs:
            # Another finding of the same rule, region and value (a second line): the probe
            # would vary the same thing again; each line is judged on the one recording.
            return self._after_probe(module, spec, region, self.judge_run(spec, self.probe_runs[key]))
        self.reset()
        try:
            target = locate(module, spec.region, self.torch, self.backend, sizes, self.device,
                            COMPILE_OPTIONS.get(spec.code))
            args = find_arguments(target, module, sizes, self.torch, self.device, self.examples,
                                  spec.region, spec)
        except ProbeError as exc:
            return self.via_entry_point(module, spec, str(exc), region)
        except Exception as exc:  # noqa: BLE001 - user code raised while being set up
            return self.via_entry_point(module, spec, _describe(exc) + _where(exc, self.user_files), region)
        context = ProbeContext(spec, module, target, args, self.calls, self.torch, self.device)
        try:
            probe = builder(context)
        except ProbeError as exc:
            return self.via_entry_point(module, spec, str(exc), region, method=args.how)
        except Exception as exc:  # noqa: BLE001
            return self.via_entry_point(module, spec, f"building the probe failed: {_describe(exc)}", region,
                                        method=args.how)
        self.reset()
        self.probe_runs[key] = self.run(target, args, probe)
        return self._after_probe(module, spec, region, self.judge_run(spec, self.probe_runs[key]))

    def _after_probe(self, module: ModuleType, spec: FindingSpec, region: tuple[str, int] | None,
                     result: Verification) -> Verification:
        if result.verdict is Verdict.CONFIRMED or _entry_point(module) is None:
            return result
        # The probe varied what the finding blames and saw no recompile for it (or could not
        # call the region): the module's own entry point drives it as the program does.
        second = self.via_entry_point(module, spec, result.detail, region)
        return second if second.verdict is Verdict.CONFIRMED else result

    def run(self, target: Target, args: CallArgs, probe: Probe) -> ProbeRun:
        """Call the compiled region ``calls`` times, varying what the probe varies, recording."""
        stopped, done = "", 0
        with Recorder() as recorder:
            try:
                for i in range(self.calls):
                    call = probe.apply(i) or args
                    try:
                        target.compiled(*call.args, **call.kwargs)
                    except Exception as exc:  # noqa: BLE001 - the compiled region raised
                        stopped = f"call {i + 1} of the compiled region raised {_describe(exc)}"
                        break
                    done += 1
            finally:
                try:
                    probe.restore()
                except Exception:  # noqa: BLE001
                    pass
        code = target.code
        region_key = (code.co_filename, code.co_firstlineno) if code is not None else None
        return ProbeRun(recorder.recording(), done, stopped, probe.description, args.how, region_key)

    @staticmethod
    def judge_run(spec: FindingSpec, run: ProbeRun) -> Verification:
        """The verdict for one finding from a probe's recording."""
        how = "declared example inputs" if run.how == "examples" else "synthesized arguments"
        if run.done == 0 and run.stopped:
            return unverifiable(f"with {how}, {run.stopped}", run.how)
        return judge(
            run.recording, spec.subject, path=spec.path, line=spec.line, calls=run.done,
            description=f"{run.description} ({how})", method=run.how, stopped=run.stopped,
            region_code=run.region, region_name=spec.region,
        )

    def via_entry_point(self, module: ModuleType, spec: FindingSpec, why: str,
                        region: tuple[str, int] | None = None, method: str = "") -> Verification:
        """When no call can be built, run the module's own ``main()``/``run()`` instead.

        The region's module comes first; then the module of the finding's own file (a model
        defined in one file is often compiled and driven from another).
        """
        entry = _entry_point(module)
        if entry is None:
            other = self._finding_module(spec, module)
            entry = _entry_point(other) if other is not None else None
        if entry is None:
            return unverifiable(why, method)
        label, fn = entry
        if label not in self.entry_runs:
            # The program is the same for every finding of the module: run it once, judge
            # each finding on what it recorded.
            self.reset()
            stopped = ""
            with Recorder() as recorder:
                try:
                    fn()
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        stopped = f"{label} {_describe(exc)}"
                except Exception as exc:  # noqa: BLE001 - evidence gathered so far still counts
                    stopped = f"{label} raised {_describe(exc)}{_where(exc, self.user_files)}"
            self.entry_runs[label] = (recorder.recording(), stopped)
        recording, stopped = self.entry_runs[label]
        return judge(
            recording, spec.subject, path=spec.path, line=spec.line, calls=0,
            description=f"ran {label} instead ({why})", method=label, stopped=stopped,
            region_code=region, region_name=spec.region,
        )


def _module_name(path: str, root: str) -> str:
    """Dotted module name of ``path`` under the ``sys.path`` root (empty when outside it)."""
    try:
        relative = Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return ""
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _import(module_name: str, files: set[str]) -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module(module_name), ""
    except SystemExit as exc:
        return None, f"importing {module_name} {_describe(exc)}"
    except BaseException as exc:  # noqa: BLE001 - anything the module does at import
        return None, f"importing {module_name} failed: {_describe(exc)}{_where(exc, files)}"


def lighten_compiles(torch: Any) -> None:
    """Skip two costs of every compile that decide nothing about guards (probe mode only; a
    ``--run`` program runs unchanged): the garbage collection after each compile
    (``run_gc_after_compile``), and the guard-latency measurement, which flushes the CPU cache
    to time one guard evaluation for a log line (a private torch name: left alone if moved).
    Under load they were a third of a probe's compile time."""
    try:
        torch._dynamo.config.run_gc_after_compile = False
    except (AttributeError, RuntimeError):
        pass
    try:
        from torch._dynamo import guards

        if callable(getattr(guards, "profile_guard_manager", None)):
            guards.profile_guard_manager = lambda *args, **kwargs: 0.0
    except ImportError:
        pass


def run_probe_job(job: dict[str, Any], results: _Results, torch: Any) -> None:
    lighten_compiles(torch)
    session = ProbeSession(job, torch)
    module_file = str(job["module_file"])
    session.user_files = {module_file} | {str(f["path"]) for f in job["findings"]}
    results.update(status="importing")
    started = time.perf_counter()
    # Recording starts before the import: a module-level sweep can reach the limit right here.
    with Recorder() as at_import:
        module, error = _import(str(job["module"]), session.user_files)
    session.at_import = at_import.recording()
    results.update(module_import_s=time.perf_counter() - started)
    if module is None:
        results.update(status="import-failed", detail=error)
        return
    try:
        sizes = module_sizes(Path(module_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        sizes = []
    results.update(status="probing")
    for raw in job["findings"]:
        spec = FindingSpec.from_dict(raw)
        results.update(current=spec.index)
        try:
            verification = session.probe(module, spec, sizes)
        except BaseException as exc:  # noqa: BLE001 - sys.exit in user code, and the like
            verification = unverifiable(f"probe stopped: {_describe(exc)}")
        results.verdict(spec.index, verification)
    results.update(status="done")


def run_program_job(job: dict[str, Any], results: _Results) -> None:
    """Run mode: the user's program, unchanged, under the recorder."""
    argv = [str(a) for a in job["argv"]]
    results.update(status="running")
    exit_code: int | None = 0
    detail = ""
    with Recorder() as recorder:
        # Save what was recorded every half second: a run stopped by the timeout still
        # reports the recompiles it showed before.
        stop = threading.Event()

        def save_periodically() -> None:
            while not stop.wait(0.5):
                with results.lock:
                    results.data["events"] = [e.to_dict() for e in list(recorder.events)]
                    results.data["limit_hits"] = [h.to_dict() for h in list(recorder.limit_hits)]
                    results.flush()

        saver = threading.Thread(target=save_periodically, daemon=True)
        saver.start()
        try:
            sys.argv = list(argv)
            if job.get("run_module"):
                runpy.run_module(str(job["run_module"]), run_name="__main__", alter_sys=True)
            else:
                sys.path.insert(0, str(Path(argv[0]).resolve().parent))
                runpy.run_path(argv[0], run_name="__main__")
        except SystemExit as exc:
            code = exc.code
            exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        except BaseException as exc:  # noqa: BLE001 - report the crash, keep the evidence
            exit_code = 1
            detail = f"the program raised {_describe(exc)}"
            traceback.print_exc()
        finally:
            stop.set()
            saver.join(timeout=5)
    _store_recording(results, recorder.recording())
    results.update(status="done", exit_code=exit_code, detail=detail)


def _store_recording(results: _Results, recording: Recording) -> None:
    results.data["events"] = [e.to_dict() for e in recording.events]
    results.data["limit_hits"] = [h.to_dict() for h in recording.limit_hits]
    results.data["graphs"] = [[f, line, name, n] for (f, line, name), n in recording.graphs]


def execute(job: dict[str, Any], torch: Any = None) -> None:
    """Run one job and end the process. ``torch``: already imported (a child forked from the
    supervisor, which imported it once for every job); None: import it here."""
    sys.dont_write_bytecode = True
    results = _Results(str(job["result"]))
    code = 0
    started = time.perf_counter()
    try:
        if torch is None:
            results.update(status="importing torch")
            try:
                import torch
                import torch._dynamo  # noqa: F401 - the first torch.compile imports it anyway: count it here
            except BaseException as exc:  # noqa: BLE001
                results.update(status="torch-failed", detail=f"import torch failed: {_describe(exc)}")
                os._exit(0)
            results.update(torch_import_s=time.perf_counter() - started)
        else:
            results.update(status="importing torch", torch_import_s=0.0, torch_preloaded=True)
        if str(job.get("device", "cpu")).startswith("cuda") and not torch.cuda.is_available():
            results.update(status="no-cuda", detail="--device cuda: this torch has no usable GPU")
            os._exit(0)
        if job.get("mode") == "device-check":
            results.update(status="device-ok")
            os._exit(0)
        force_backend(torch, str(job.get("backend", "eager")))
        root = job.get("root")
        if root:
            sys.path.insert(0, str(root))
        if job.get("mode") == "run":
            run_program_job(job, results)
        else:
            sys.argv = [str(job["module_file"])]
            run_probe_job(job, results, torch)
    except BaseException as exc:  # noqa: BLE001 - last resort: say what happened
        results.update(status="crashed", detail=f"verifier child failed: {_describe(exc)}")
        traceback.print_exc()
        code = 3
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _read_job(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        job = json.load(handle)
    if not isinstance(job, dict):
        raise ValueError(f"{path}: not a job")
    return job


def run_job_file(path: str, torch: Any) -> None:
    """A child forked from the supervisor: torch is imported already. Never returns."""
    execute(_read_job(path), torch)


def main(argv: list[str] | None = None) -> None:
    """Entry point of a freshly started child (``spawn`` lanes: CUDA); never returns."""
    from recompile_lint.verify import procs
    from recompile_lint.verify.boot import SUPERVISOR_VAR

    supervisor = os.environ.pop(SUPERVISOR_VAR, "")
    if supervisor.isdigit():
        import signal

        procs.die_with_parent(signal.SIGKILL, parent=int(supervisor))
    sys.dont_write_bytecode = True
    args = sys.argv[1:] if argv is None else argv
    execute(_read_job(args[0]))


if __name__ == "__main__":  # pragma: no cover - started through runner
    main()
