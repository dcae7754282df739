from torch import nn

from icml25.nn.params import count_parameters


def test_counts_weights_and_biases_and_respects_frozen_and_shared() -> None:
    lin = nn.Linear(3, 4)  # 12 + 4
    assert count_parameters(lin) == 16
    lin.bias.requires_grad_(False)
    assert count_parameters(lin) == 12
    assert count_parameters(lin, trainable_only=False) == 16
    shared = nn.Sequential(lin, lin)  # the same module twice: counted once
    assert count_parameters(shared, trainable_only=False) == 16
