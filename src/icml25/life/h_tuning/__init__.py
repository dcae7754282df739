"""H-Tuning: Toward Low-Cost and Efficient ECG-based Cardiovascular Disease Detection with
Pre-Trained Models (ICML 2025).

Rushuang Zhou, Yuanting Zhang, Yining Dong; PMLR 267:79548-79569; official code
https://github.com/KAZABANA/H-Tuning (PyTorch, GPU only; not a dependency).

A pre-trained ECG model (conv front-end + Transformer) is fine-tuned for multi-label
cardiovascular-disease detection with few labels at low memory: LoRA adapts few parameters, a
zeroth-order (SPSA) gradient on the full batch keeps no activations, back-propagation runs on only
2-4 samples, the head gets an exact full-batch gradient, and the two backbone gradients are mixed
with norm matching. The fine-tuned teacher is then distilled into a small pre-trained student.

Implements: the backbone and its ``peft`` LoRA wrapping (``model.py``), the hybrid step, MeZO and
back-propagation tuners, fine-tuning with validation checkpointing and the distillation loss
(``tuning.py``), training-memory / latency measurement and the challenge metrics (``costs.py``), and
a simulated 12-lead multi-label ECG corpus (``data.py``, ECGSYN morphology from ``neurokit2``).

    from icml25.life.h_tuning import (ECGNet, HTuningConfig, HybridTuner, add_lora, fine_tune,
                                      linear_warmup_decay, make_adamw, simulate_ecg_dataset)
    X, Y = simulate_ecg_dataset(200, seed=0)
    model = add_lora(ECGNet(n_classes=Y.shape[1], width=64), rank=8)
    opt = make_adamw(model, lr=1e-3)
    tuner = HybridTuner(model, opt, linear_warmup_decay(opt, 100), HTuningConfig(bp_batch=4))
    fine_tune(tuner, X, Y, steps=100, batch_size=64)
"""

from __future__ import annotations

from .costs import (
    TrainingMemory,
    best_thresholds,
    inference_latency,
    macro_average_precision,
    model_bytes,
    multilabel_metrics,
    saved_activation_bytes,
    training_memory,
)
from .data import (
    CONDITIONS,
    LEADS,
    PRETRAIN_CONDITIONS,
    DomainShift,
    cutmix_time,
    ecgsyn_waves,
    low_label_split,
    simulate_ecg_dataset,
)
from .model import (
    ECGNet,
    add_lora,
    lora_target_modules,
    merge_lora,
    merged_lora,
    trainable_parameters,
    unwrap_model,
)
from .tuning import (
    BPTuner,
    FineTuneResult,
    HTuningConfig,
    HybridTuner,
    MeZOTuner,
    Tuner,
    distillation_loss,
    fine_tune,
    late_gain,
    linear_warmup_decay,
    make_adamw,
    mix_gradients,
    perturb_,
    predict_proba,
    spsa_projected_gradient,
)

__all__ = [
    "CONDITIONS",
    "LEADS",
    "PRETRAIN_CONDITIONS",
    "BPTuner",
    "DomainShift",
    "ECGNet",
    "FineTuneResult",
    "HTuningConfig",
    "HybridTuner",
    "MeZOTuner",
    "TrainingMemory",
    "Tuner",
    "add_lora",
    "best_thresholds",
    "cutmix_time",
    "distillation_loss",
    "ecgsyn_waves",
    "fine_tune",
    "late_gain",
    "inference_latency",
    "linear_warmup_decay",
    "lora_target_modules",
    "low_label_split",
    "make_adamw",
    "merge_lora",
    "merged_lora",
    "mix_gradients",
    "model_bytes",
    "macro_average_precision",
    "multilabel_metrics",
    "perturb_",
    "predict_proba",
    "saved_activation_bytes",
    "simulate_ecg_dataset",
    "spsa_projected_gradient",
    "trainable_parameters",
    "training_memory",
    "unwrap_model",
]
