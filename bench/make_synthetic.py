"""Generate a synthetic project of N modules whose compiled regions reach across modules.

Usage::

    python bench/make_synthetic.py DIR --modules 1000

The project is a package ``synth`` of sub-packages of up to 100 modules each, with a
``pyproject.toml`` at DIR (so DIR is the project root). Every module looks like ordinary
training code (about 120 lines): module-level settings, helpers that call helpers in other
modules, an ``nn.Module`` subclass and a train step. One module in ten compiles something
(``@torch.compile`` functions, ``torch.compile(model)``) and runs them in its training loop;
its regions call helpers two modules away that read globals of a third, and the train step
bumps its own and other modules' counters between the calls, so the analysis has to follow
imports in both directions. The output is deterministic for a
given N and seed; nothing is imported or run.
"""

from __future__ import annotations

import argparse
import random
import textwrap
from pathlib import Path

PER_PACKAGE = 100


def module_name(i: int) -> tuple[str, str]:
    """(package, module) names of module number ``i``."""
    return f"pkg_{i // PER_PACKAGE:03d}", f"mod_{i:05d}"


def dotted(i: int) -> str:
    package, module = module_name(i)
    return f"synth.{package}.{module}"


def module_source(i: int, n: int, rng: random.Random) -> str:
    """The text of module ``i`` of ``n``."""
    a, b, c = (i + 1) % n, (i + 7) % n, (i + 31) % n
    compiled = i % 10 == 0
    lines = [
        f'"""Synthetic module {i}: settings, helpers, a model and a train step."""',
        "",
        "from __future__ import annotations",
        "",
        "import math",
        "import os",
        "",
        "import torch",
        "from torch import nn",
        "",
        f"from {'.'.join(dotted(a).split('.')[:-1])} import {module_name(a)[1]} as left",
        f"from {'.'.join(dotted(b).split('.')[:-1])} import {module_name(b)[1]} as right",
        f"import {dotted(c)} as far",
        "",
        f"SCALE = {rng.randint(1, 9)}",
        "STEP = 0",
        f"MODE = {rng.choice(['train', 'eval', 'warmup'])!r}",
        f"LR = {rng.choice([0.1, 0.01, 0.001])}",
        f"USE_BIAS = {rng.choice([True, False])}",
        f"CONFIG = {{'depth': {rng.randint(2, 6)}, 'width': {rng.choice([16, 32, 64])}, 'name': 'm{i}'}}",
        "HISTORY: list[float] = []",
        "",
        "",
        "def scale(x: torch.Tensor) -> torch.Tensor:",
        '    """Multiply by the module scale (a constant: never mutated)."""',
        "    return x * SCALE",
        "",
        "",
        "def shift(x: torch.Tensor) -> torch.Tensor:",
        '    """Add the step counter: a global the train loop bumps."""',
        "    return x + STEP",
        "",
        "",
        "def mix(x: torch.Tensor) -> torch.Tensor:",
        '    """Helpers of two other modules, one of which reads its own mutated global."""',
        "    y = left.scale(x)",
        "    return right.shift(y) + far.scale(x)",
        "",
        "",
        "def activation(x: torch.Tensor) -> torch.Tensor:",
        "    if MODE == 'train':",
        "        return torch.relu(x)",
        "    return torch.tanh(x)",
        "",
        "",
        "def schedule(epoch: int) -> float:",
        '    """A plain Python helper nobody compiles."""',
        "    return LR * 0.5 * (1.0 + math.cos(math.pi * epoch / 100))",
        "",
        "",
        f"class Block{i}(nn.Module):",
        '    """A small residual block."""',
        "",
        "    def __init__(self, width: int = 32) -> None:",
        "        super().__init__()",
        "        self.linear = nn.Linear(width, width, bias=USE_BIAS)",
        "        self.norm = nn.LayerNorm(width)",
        "        self.calls = 0",
        "",
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
        "        h = self.norm(x)",
        "        h = activation(self.linear(h))",
        "        return x + scale(h)",
        "",
        "",
        f"class Model{i}(nn.Module):",
        "    def __init__(self, depth: int = CONFIG['depth'], width: int = CONFIG['width']) -> None:",
        "        super().__init__()",
        f"        self.blocks = nn.ModuleList([Block{i}(width) for _ in range(depth)])",
        "        self.head = nn.Linear(width, 1)",
        "",
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
        "        for block in self.blocks:",
        "            x = block(x)",
        "        return self.head(mix(x))",
        "",
        "",
    ]
    if compiled:
        lines += [
            "@torch.compile",
            "def fused_step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:",
            '    """Compiled: reaches helpers in three other modules."""',
            "    y = mix(x @ w)",
            "    return activation(y) * CONFIG['width']",
            "",
            "",
            "@torch.compile(dynamic=False)",
            "def compiled_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:",
            "    return ((pred - target) ** 2).mean() * LR",
            "",
            "",
            "def build() -> nn.Module:",
            f"    model = Model{i}()",
            "    return torch.compile(model)",
            "",
            "",
        ]
    lines += [
        "def train_step(model: nn.Module, batch: torch.Tensor, target: torch.Tensor) -> float:",
        '    """One step; bumps counters here and in the neighbouring module."""',
        "    global STEP",
        "    loss = ((model(batch) - target) ** 2).mean()",
        "    loss.backward()",
        "    STEP += 1",
        "    left.STEP += 1",
        "    right.STEP += 1",
        "    HISTORY.append(float(loss))",
        "    return float(loss)",
        "",
        "",
        "def configure() -> None:",
        '    """Settings from the environment, read outside any region."""',
        "    global MODE, LR",
        "    MODE = os.environ.get('SYNTH_MODE', MODE)",
        "    LR = float(os.environ.get('SYNTH_LR', LR))",
        "",
        "",
        "def main() -> None:",
        "    configure()",
        "    model = build()" if compiled else f"    model = Model{i}()",
        "    data = torch.randn(8, CONFIG['width'])",
        "    w = torch.randn(CONFIG['width'], CONFIG['width'])",
        "    for epoch in range(3):",
        "        train_step(model, data, torch.zeros(8, 1))",
        *(["        fused_step(data, w)"] if compiled else []),
        "        schedule(epoch)",
        "",
        "",
        'if __name__ == "__main__":',
        "    main()",
        "",
    ]
    return "\n".join(lines)


def generate(root: str | Path, modules: int, seed: int = 0) -> list[Path]:
    """Write the project under ``root``; returns the module files written."""
    root = Path(root)
    rng = random.Random(seed)
    (root / "synth").mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "synth"
            version = "0.0.0"
            """
        ),
        encoding="utf-8",
    )
    (root / "synth" / "__init__.py").write_text('"""Synthetic project for recompile-lint benchmarks."""\n', encoding="utf-8")
    written: list[Path] = []
    for package_index in range((modules + PER_PACKAGE - 1) // PER_PACKAGE):
        package = root / "synth" / f"pkg_{package_index:03d}"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text("", encoding="utf-8")
    for i in range(modules):
        package, module = module_name(i)
        path = root / "synth" / package / f"{module}.py"
        path.write_text(module_source(i, modules, rng), encoding="utf-8")
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--modules", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    files = generate(args.directory, args.modules, args.seed)
    print(f"wrote {len(files)} modules under {args.directory}")


if __name__ == "__main__":
    main()
