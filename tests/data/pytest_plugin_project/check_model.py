import pytest
import torch

import model


def test_step_counter_recompiles_every_call():
    for _ in range(12):
        model.advance()
        model.compiled_scale(torch.ones(4))


def test_int_argument_becomes_dynamic():
    for n in range(1, 6):
        model.compiled_affine(torch.ones(4), n)


@pytest.mark.recompiles(max=2)
def test_three_activations():
    for kind in ("relu", "tanh", "sigmoid"):
        model.compiled_activation(torch.ones(4), kind)


def test_no_compiled_code():
    assert torch.ones(2).sum() == 2
