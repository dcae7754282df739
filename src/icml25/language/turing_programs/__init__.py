"""Universal Length Generalization with Turing Programs (Hou, Brandfonbrener, Kakade, Jelassi & Malach,
ICML 2025, https://arxiv.org/abs/2407.03310).

A Turing Program is a scratchpad that writes out the successive configurations of a Turing machine
solving the task; each line is a copy of the previous one with a few local edits, which a
transformer with Hard-ALiBi attention (short-window heads plus position-free heads) can carry out at
any length. This package gives a multi-head Turing-machine tracer and renderer
(:mod:`.machine`), the addition, n×1 multiplication and random-machine programs with a verifier and
the baseline formats (:mod:`.programs`), Hard-ALiBi masks and a small decoder whose positional
scheme is an option (:mod:`.model`), and training and exact-match-by-length evaluation
(:mod:`.training`). The claim check is in :mod:`.check`.
"""

from .machine import (
    DIGIT_MARKS,
    Config,
    TuringMachine,
    random_turing_machine,
    render_config,
    render_program,
    step,
    trace,
)
from .model import (
    POSITIONS,
    DecoderConfig,
    TinyDecoder,
    default_windows,
    hard_alibi_attention,
    hard_alibi_bias,
    hard_alibi_mask,
)
from .programs import (
    FORMATS,
    AdditionTask,
    ProgramCheck,
    TokenBatch,
    Tokenizer,
    addition_machine,
    addition_program,
    addition_trace,
    multiplication_machine,
    multiplication_program,
    parse_answer,
    random_tm_example,
    random_tm_program,
    verify_addition_program,
)
from .training import (
    TrainConfig,
    answer_accuracy,
    greedy_decode,
    length_generalization_eval,
    sequence_loss,
    teacher_forced_exact_match,
    train_decoder,
)

__all__ = [
    "DIGIT_MARKS",
    "Config",
    "TuringMachine",
    "random_turing_machine",
    "render_config",
    "render_program",
    "step",
    "trace",
    "POSITIONS",
    "DecoderConfig",
    "TinyDecoder",
    "default_windows",
    "hard_alibi_attention",
    "hard_alibi_bias",
    "hard_alibi_mask",
    "FORMATS",
    "AdditionTask",
    "ProgramCheck",
    "TokenBatch",
    "Tokenizer",
    "addition_machine",
    "addition_program",
    "addition_trace",
    "multiplication_machine",
    "multiplication_program",
    "parse_answer",
    "random_tm_example",
    "random_tm_program",
    "verify_addition_program",
    "TrainConfig",
    "answer_accuracy",
    "greedy_decode",
    "length_generalization_eval",
    "sequence_loss",
    "teacher_forced_exact_match",
    "train_decoder",
]
