import torch

STEP = 0


def scale(x):
    return x * STEP


compiled_scale = torch.compile(scale, backend="eager")


def advance():
    global STEP
    STEP += 1


def affine(x, n):
    return x * n + 1


compiled_affine = torch.compile(affine, backend="eager")


def activation(x, kind: str):
    if kind == "relu":
        return torch.relu(x)
    if kind == "tanh":
        return torch.tanh(x)
    return torch.sigmoid(x)


compiled_activation = torch.compile(activation, backend="eager")
