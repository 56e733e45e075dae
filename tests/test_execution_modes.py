"""What decides a compiled call's cache entry besides the values it reads: the grad mode a
decorator sets for the calls of a function, the global state Dynamo checks first, and sizes
marked unbacked (``execution/interpreter.py``, ``execution/cache.py``)."""

from __future__ import annotations

from test_execution import lint, write


def alarms(root):
    return [f for f in lint(root) if f.severity in ("error", "warning")]


def test_a_function_decorated_with_no_grad_runs_its_body_without_grad(tmp_path):
    """The model's output under ``@torch.no_grad()`` needs no grad, as the detached logits of
    the training step need none: one ``requires_grad`` state reaches the compiled metric."""
    root = write(tmp_path, {"run.py": """
        import torch
        from torch import nn

        @torch.compile
        def accuracy(logits, target):
            return (logits.argmax(-1) == target).float().mean()

        @torch.no_grad()
        def evaluate(model, x, y):
            return accuracy(model(x), y)

        @torch.inference_mode
        def predict(model, x, y):
            return accuracy(model(x), y)

        def main():
            model = nn.Linear(8, 3)
            x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
            for _ in range(3):
                accuracy(model(x).detach(), y)
                evaluate(model, x, y)
                predict(model, x, y)

        if __name__ == "__main__":
            main()
        """})
    assert alarms(root) == []


def test_a_call_in_another_grad_mode_is_the_grad_mode_s_recompile_not_a_tensor_s(tmp_path):
    """Measured on torch 2.13: training logits (grad) and evaluation logits (no grad) give
    2 graphs, reported as ``GLOBAL_STATE changed: grad_mode``, never as ``requires_grad``."""
    root = write(tmp_path, {"run.py": """
        import torch
        from torch import nn

        @torch.compile
        def accuracy(logits, target):
            return (logits.argmax(-1) == target).float().mean()

        def main():
            model = nn.Linear(8, 3)
            x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
            for _ in range(3):
                accuracy(model(x), y)
                with torch.no_grad():
                    accuracy(model(x), y)

        if __name__ == "__main__":
            main()
        """})
    assert not any(f.guard is not None and f.guard.source == "L['logits']" for f in alarms(root))


def test_a_size_marked_unbacked_is_no_difference_between_calls(tmp_path):
    root = write(tmp_path, {"run.py": """
        import torch
        from torch import nn

        def classify(model, batch):
            torch._dynamo.decorators.mark_unbacked(batch, 0)
            return model(batch)

        def main():
            model = torch.compile(nn.Linear(16, 4))
            classify(model, torch.randn(10, 16).unsqueeze(0))
            classify(model, torch.randn(3, 10, 16))

        if __name__ == "__main__":
            main()
        """})
    assert alarms(root) == []


def test_a_decorated_bound_method_compiled_directly_is_spelled_through_wrap_inline():
    """Measured on torch 2.13 (ema_teacher_updates): Dynamo compiles ``wrap_inline``'s
    ``inner`` around a ``@torch.no_grad()`` method, so its receiver is ``L['fn'].__self__``
    and what it is passed by position ``L['args'][i]``; an undecorated method is ``L['self']``."""
    from test_execution_guards import traced

    [decorated, plain] = traced("""
import torch

class Teacher:
    def __init__(self):
        self.updates = 3

    @torch.no_grad()
    def update(self, x, k):
        return x * self.updates * k

    def plain(self, x):
        return x * self.updates

teacher = Teacher()
torch.compile(teacher.update)(torch.randn(2), 5)
torch.compile(teacher.plain)(torch.randn(2))
""")
    assert decorated["L['fn'].__self__.updates"].value.value == 3
    assert decorated["L['args'][1]"].value.value == 5 and decorated["L['args'][0]"].kind == "TENSOR_MATCH"
    assert plain["L['self'].updates"].value.value == 3
