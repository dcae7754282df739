"""Evaluating a code model on seeds and variants, simulated contamination, and the template control.

*DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under Data
Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149), Sec. 4-5 (the evaluation
protocol and the contamination experiment) and the official ``gen_code.py`` / ``eval_pass_K.py`` /
``overfit_train.py``.

* :func:`code_prompt`: the chat-model prompt of the paper's ``pt.py`` (complete the function,
  one fenced code block, do not call or test it).
* :func:`solve_and_judge`: greedy completions, each judged in the sandbox (3 s) against the tests.
* :func:`contaminate`: simulated contamination by fine-tuning on the leaked problems' canonical
  solutions, as ``overfit_train.py``: causal-LM loss on the solution text (prompt + canonical body),
  batch size 1, with LoRA as the paper (r = 8, alpha = 16, dropout 0.1; the paper: lr 5e-5, up to
  20,000 steps on 1-3B models; the check uses a larger learning rate and a few hundred steps on the
  135M model). ``method="full"`` fine-tunes every weight but the (tied) embeddings instead.
* :func:`template_role_model`: a *template control* that answers the four role prompts with
  fixed templates (a labelled control for tests and the smoke scale; never the default path).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from icml25.core.progress import ProgressFn
from icml25.llm.chat import ChatModel, Conversation, GenerationConfig, ScriptedChatModel
from icml25.llm.code_eval import CompletionResult, check_completion

from .roles import ROLE_TAGS
from .task import CodeTask

__all__ = [
    "code_prompt",
    "solve_and_judge",
    "contaminate",
    "template_role_model",
    "TEMPLATE_SCENARIOS",
]

TEMPLATE_SCENARIOS = (
    "Banking: loan repayment schedules",
    "Healthcare: patient triage queues",
    "Education: grading student submissions",
    "Transportation: bus timetable planning",
    "Social networking: friend recommendations",
    "Retail: inventory restocking",
    "Agriculture: irrigation scheduling",
    "Energy: smart meter readings",
    "Logistics: parcel routing",
    "Sports: tournament scoring",
    "Music: playlist curation",
    "Astronomy: telescope observation logs",
    "Cooking: recipe scaling",
    "Gaming: leaderboard updates",
    "Weather: rainfall records",
    "Library: book lending records",
    "Manufacturing: quality control checks",
    "Insurance: claim assessment",
    "Tourism: hotel booking",
    "Cybersecurity: login attempt monitoring",
    "Real estate: property listings",
    "Aviation: flight delay tracking",
    "Fitness: workout tracking",
    "Journalism: article tagging",
    "Ecology: species population counts",
    "Telecom: call duration billing",
    "Archaeology: artifact cataloguing",
    "Fashion: size inventory",
    "Law: case file indexing",
    "Chemistry: reagent stock levels",
)


def code_prompt(task: CodeTask) -> Conversation:
    """The chat prompt asking a model to complete ``task`` (paper's ``pt.py``, our wording)."""
    return [
        {
            "role": "user",
            "content": "Complete the following Python function. Follow its signature and docstring. "
            "Return the whole function in one ```python code block. Do not call or test it.\n\n"
            f"```python\n{task.prompt}```",
        }
    ]


def solve_and_judge(
    model: ChatModel, tasks: Sequence[CodeTask], *, max_tokens: int = 256, timeout_s: float = 3.0
) -> tuple[dict[str, bool], dict[str, str], list[CompletionResult]]:
    """Greedy completion of every task, judged in the sandbox.

    Returns:
        (passed per task_id, completion per task_id, the judged results).
    """
    if not tasks:
        return {}, {}, []
    replies = model.generate(
        [code_prompt(t) for t in tasks], GenerationConfig(temperature=0.0, max_tokens=max_tokens)
    )
    passed, completions, results = {}, {}, []
    for task, (reply,) in zip(tasks, replies, strict=True):
        result = check_completion(task, reply, timeout_s=timeout_s)
        passed[task.task_id] = result.passed
        completions[task.task_id] = reply
        results.append(result)
    return passed, completions, results


def contaminate(
    model: Any,
    tokenizer: Any,
    leaked: Sequence[CodeTask],
    *,
    epochs: int = 8,
    lr: float = 1e-4,
    seed: int = 0,
    freeze_embeddings: bool = True,
    method: str = "lora",
    lora_r: int = 8,
    lora_alpha: int = 16,
    lora_dropout: float = 0.1,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[float]]:
    """A copy of ``model`` fine-tuned on the leaked tasks' canonical solutions (simulated contamination).

    Training is :func:`icml25.nn.train.fit` with batch size 1, a fresh order of the examples each
    epoch, AdamW without weight decay at a constant learning rate.

    Args:
        model: a transformers causal LM (left untouched).
        tokenizer: its tokenizer (with a chat template).
        leaked: the tasks whose solutions leak into "pre-training".
        epochs: passes over the leaked set (batch size 1, the paper's setting).
        lr: AdamW learning rate.
        seed: shuffles the order of examples per epoch.
        freeze_embeddings: with ``method="full"``, keep the (tied) embedding matrix fixed: a third
            of SmolLM2's weights, and most of the optimizer's cost on the CPU.
        method: ``"lora"`` (the paper's ``overfit_train.py``: LoRA adapters through ``peft`` on the
            attention projections peft picks for the architecture, merged into the copy after
            training) or ``"full"`` (every weight but the embeddings; our earlier choice).
        lora_r, lora_alpha, lora_dropout: the adapter (paper: r = 8, alpha = 16, dropout 0.1).
        progress: ``progress(step, total)`` after each step.

    Returns:
        (the fine-tuned copy in eval mode, mean training loss per epoch).
    """
    import torch

    from icml25.nn.train import FitConfig, fit

    if not leaked:
        return model, []
    if epochs < 1 or lr <= 0:
        raise ValueError(f"epochs must be >= 1 and lr > 0, got epochs={epochs}, lr={lr}")
    if method not in ("lora", "full"):
        raise ValueError(f"method must be 'lora' or 'full', got {method!r}")
    tuned = copy.deepcopy(model)
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, task_type="CAUSAL_LM")
        tuned = get_peft_model(tuned, lora)  # freezes the base weights, trains the adapters only
    else:
        embeddings = tuned.get_input_embeddings() if hasattr(tuned, "get_input_embeddings") else None
        if freeze_embeddings and embeddings is not None:
            for p in embeddings.parameters():  # tied with the output head in SmolLM2
                p.requires_grad_(False)
    examples = []
    for task in leaked:
        ids = tokenizer(task.prompt + task.canonical_solution, add_special_tokens=False)["input_ids"]
        examples.append(torch.tensor([[*ids, tokenizer.eos_token_id]]))  # causal-LM loss on the whole text

    def loss_fn(m: Any, idx: Any, gen: Any) -> Any:
        ids = examples[int(idx[0])]
        return m(input_ids=ids, labels=ids).loss

    config = FitConfig(
        steps=epochs * len(examples), batch_size=1, lr=lr, schedule="constant", sampling="shuffle"
    )
    history = fit(tuned, loss_fn, len(examples), config, seed=seed, progress=progress)
    per_epoch = [
        sum(history.train_loss[i : i + len(examples)]) / len(examples)
        for i in range(0, len(history.train_loss), len(examples))
    ]
    if method == "lora":
        tuned = tuned.merge_and_unload()  # plain weights again: generation costs what the base costs
    tuned.eval()
    return tuned, per_epoch


def _between(text: str, start: str, end: str) -> str:
    match = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.DOTALL)
    return match.group(1).strip() if match else ""


def template_role_model(*, validator_says: str = "Yes") -> ScriptedChatModel:
    """The template control: answers the four role prompts with fixed templates (deterministic).

    The proposer lists :data:`TEMPLATE_SCENARIOS`; the context generator writes "<name>: a value
    of the scenario"; the rewriter prefixes the original problem with a scenario sentence; the
    validator answers ``validator_says``. Labelled ``template-control`` in every result.
    """

    def respond(messages: list[dict[str, str]], config: GenerationConfig, index: int) -> str:
        system, user = messages[0]["content"], messages[-1]["content"]
        if ROLE_TAGS["proposer"] in system:
            return "\n".join(f"<scenario>{s}</scenario>" for s in TEMPLATE_SCENARIOS)
        if ROLE_TAGS["context"] in system:
            names = [
                line.split(":")[0] for line in _between(user, "Variables:\n", "\nScenario:").splitlines()
            ]
            scenario = _between(user, "Scenario: ", "\n")
            return "<context>" + "\n".join(f"{n}: a value from {scenario}" for n in names) + "</context>"
        if ROLE_TAGS["rewriter"] in system:
            original = _between(user, "Original problem: ", "\nScenario:")
            scenario = _between(user, "Scenario: ", "\n")
            domain, _, topic = scenario.partition(":")
            lead = f"In {domain.lower()} work on {topic.strip()}, the data arrives as plain values."
            return f"<new_problem>{lead} {original}</new_problem>"
        if ROLE_TAGS["validator"] in system:
            return validator_says
        return ""

    return ScriptedChatModel(respond, name="template-control")
