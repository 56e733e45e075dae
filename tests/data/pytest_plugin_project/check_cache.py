import torch

import model


def test_relu_first():
    model.compiled_activation(torch.ones(4), "relu")


def test_tanh_after_relu():
    # With Dynamo's caches reset before each test this is a first compile; with the caches
    # kept (--recompiles-keep-cache) it recompiles the graph the previous test left.
    model.compiled_activation(torch.ones(4), "tanh")
