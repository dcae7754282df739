"""Online SGD for *Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in
Gradient-Based Learning* (Kawata et al., ICML 2025, https://arxiv.org/abs/2506.01656).

Every step draws a fresh minibatch from the task (online SGD, one pass). First-layer neurons
follow spherical projected SGD on the correlation loss ``-E[y sigma(u . x)]``:

    u <- normalize(u + eta * (I - u u^T) * sum_batch y sigma'(u . x + b) x),

with a per-sample learning rate ``eta`` (the sum over the batch makes the dynamics depend on the
number of samples, not the batch size). The MoE is trained stage by stage, in the style of the
paper's stage-wise algorithm (Sec. 4; its exact step sizes and stage lengths were not recovered):

    stage I   (cluster discovery)  router uniform; every expert's group-A neurons on all samples;
    stage II  (router)             group A frozen; router Theta and group-A second layer trained
                                   jointly on the squared loss of the soft mixture;
    stage III (per-expert learning) router frozen, top-1 routing; each expert's group-B neurons on
                                   the samples routed to it, on the residual of its group-A fit.

The *oracle* variant replaces the router by the true cluster (cluster c goes to an expert of the
pool ``{m : m mod C = c}``) in every stage. The vanilla network trains all its neurons on the
pooled task for the whole budget. Logs record the overlaps along the way and the first sample
count at which they pass a threshold (the sample complexity ``n*``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icml25.core.validate import check_non_negative, check_positive

from .models import Activation, MoE, TwoLayerNet
from .task import ClusteredSIMTask

__all__ = [
    "StageSchedule",
    "TrainLog",
    "correlation_step",
    "oracle_assign",
    "per_sample_lr",
    "train_vanilla",
    "train_moe_stagewise",
]


def per_sample_lr(eta0: float, d: int, power: float = 1.5) -> float:
    """``eta0 * d^-power``; ``power = k*/2`` is the largest stable online-SGD step for information
    exponent ``k*`` (Ben Arous et al., 2021), under which weak recovery takes ``~d^(k*-1)`` samples."""
    check_positive("eta0", eta0)
    check_positive("d", d, integer=True)
    check_non_negative("power", power)
    return float(eta0) * float(d) ** (-float(power))


def correlation_step(
    U: np.ndarray,
    b: np.ndarray,
    X: np.ndarray,
    target: np.ndarray,
    act: Activation,
    lr: float,
    mask: np.ndarray | None = None,
) -> None:
    """One spherical SGD step on ``-sum_batch target * sigma(U x + b)``, in place on ``U`` (N, d).

    Args:
        U: (N, d) unit rows, updated in place.
        b: (N,) fixed biases.
        X: (n, d) inputs; target: (n,) labels or residuals.
        act: the activation.
        lr: per-sample learning rate.
        mask: (n, N) which sample reaches which neuron (routing); None means all.
    """
    G = target[:, None] * act.derivative(X @ U.T + b)  # (n, N)
    if mask is not None:
        G = G * mask
    grad = G.T @ X  # (N, d), summed over the batch
    grad -= np.sum(grad * U, axis=1, keepdims=True) * U  # tangent part: (I - u u^T) grad
    U += lr * grad
    U /= np.linalg.norm(U, axis=1, keepdims=True)


def oracle_assign(c: np.ndarray, n_experts: int, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) expert of every sample under the oracle router: cluster c goes to a uniformly chosen
    expert of ``{m : m mod C = c}`` (exactly expert c when M = C)."""
    if n_experts < n_clusters:
        raise ValueError(f"the oracle router needs n_experts >= n_clusters, got {n_experts} < {n_clusters}")
    c = np.asarray(c)
    pool = (n_experts - c + n_clusters - 1) // n_clusters  # size of {m : m mod C = c}
    return c + n_clusters * np.floor(rng.random(c.shape) * pool).astype(np.int64)


@dataclass(frozen=True)
class StageSchedule:
    """Samples drawn in each MoE stage (stage I, II, III)."""

    stage1: int
    stage2: int
    stage3: int

    def __post_init__(self) -> None:
        for name in ("stage1", "stage2", "stage3"):
            check_positive(f"StageSchedule.{name}", getattr(self, name), integer=True)

    @property
    def total(self) -> int:
        return self.stage1 + self.stage2 + self.stage3

    @classmethod
    def from_fractions(cls, total: int, fractions: tuple[float, float, float]) -> StageSchedule:
        """Split ``total`` samples by ``fractions`` (normalised)."""
        check_positive("total", total, integer=True)
        f = np.asarray(fractions, dtype=np.float64)
        if f.shape != (3,) or not np.isfinite(f).all() or np.any(f <= 0):
            raise ValueError(f"fractions must be three positive numbers, got {fractions}")
        n1, n2 = (int(round(total * v / f.sum())) for v in f[:2])
        return cls(max(n1, 1), max(n2, 1), max(total - n1 - n2, 1))


@dataclass
class TrainLog:
    """Overlap curves and sample complexities of one training run.

    ``samples[i]`` is the cumulative sample count of record ``i``; ``global_overlap[i]`` is
    ``max_j |u_j . w_g|`` and ``local_overlap[i][c]`` is ``max_j |u_j . w_c|`` over all neurons;
    ``router_alignment[i]`` (MoE only) is the mean over experts of ``max_c cos(Theta_m, v_c)``.
    ``n_star`` maps ``"global_total"`` (cumulative samples from which the global overlap reaches
    the threshold and stays above it to the end of training), ``"global_stage3"`` (the same for
    the group-B neurons, counted from the start of stage III and held to its end; per expert
    under ``"global_stage3_expert<m>"``, and under ``"global_stage3_expert<m>_routed"`` counted in
    the stage-III samples routed to expert m, the only samples its group-B neurons learn from) and
    ``"local_stage1"`` (stage-I samples from which every local overlap stays above it to the end
    of stage I) to counts; ``inf`` when not reached. Counting from the last up-crossing keeps a
    transient noise excursion from counting as recovery. ``stage_ends`` holds the cumulative
    count at the end of every stage; ``routed_stage3[m]`` (MoE only) the stage-III samples routed to
    expert m, and ``stage3_initial_overlap[m]`` its best group-B overlap with ``w_g`` when stage III
    starts.
    """

    threshold: float
    samples: list[int] = field(default_factory=list)
    global_overlap: list[float] = field(default_factory=list)
    local_overlap: list[list[float]] = field(default_factory=list)
    router_alignment: list[float] = field(default_factory=list)
    stage_ends: list[int] = field(default_factory=list)
    n_star: dict[str, float] = field(default_factory=dict)
    routed_stage3: list[int] = field(default_factory=list)
    stage3_initial_overlap: list[float] = field(default_factory=list)


class _Tracker:
    """Checks the overlaps after every step; records curves every ``record_every`` samples."""

    def __init__(self, task: ClusteredSIMTask, log: TrainLog, record_every: int) -> None:
        self.task, self.log, self.every = task, log, record_every
        self.W = np.concatenate([task.w_global[None], task.W_local])  # (1 + C, d)
        self.seen = 0
        self.next_record = 0
        self.since: dict[str, float | None] = {}

    def hold(self, key: str, value: float, count: float) -> None:
        """Track the start of the current run of ``value >= threshold`` (None while below)."""
        if value < self.log.threshold:
            self.since[key] = None
        elif self.since.get(key) is None:
            self.since[key] = count

    def finish(self, key: str) -> None:
        start = self.since.get(key)
        self.log.n_star[key] = math.inf if start is None else float(start)

    def overlaps(self, U: np.ndarray) -> np.ndarray:
        return np.max(np.abs(U @ self.W.T), axis=0)  # (1 + C,)

    def step(
        self, n: int, U: np.ndarray, theta: np.ndarray | None = None, *, force: bool = False
    ) -> np.ndarray:
        self.seen += n
        ov = self.overlaps(U)
        self.hold("global_total", float(ov[0]), self.seen)
        if force or self.seen >= self.next_record:
            self.log.samples.append(self.seen)
            self.log.global_overlap.append(float(ov[0]))
            self.log.local_overlap.append([float(v) for v in ov[1:]])
            if theta is not None:
                norms = np.maximum(np.linalg.norm(theta, axis=1), 1e-300)
                cos = np.abs(theta @ self.task.V.T) / norms[:, None]
                self.log.router_alignment.append(float(cos.max(axis=1).mean()))
            while self.next_record <= self.seen:
                self.next_record += self.every
        return ov


def _check_common(
    task: ClusteredSIMTask, d: int, batch: int, lr: float, record_every: int, threshold: float
) -> None:
    if not isinstance(task, ClusteredSIMTask):
        raise TypeError(f"task must be a ClusteredSIMTask, got {type(task).__name__}")
    if task.d != d:
        raise ValueError(f"model dimension d={d} does not match task.d={task.d}")
    check_positive("batch", batch, integer=True)
    check_positive("lr", lr)
    check_positive("record_every", record_every, integer=True)
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold!r}")


def train_vanilla(
    net: TwoLayerNet,
    task: ClusteredSIMTask,
    *,
    n_samples: int,
    batch: int,
    lr: float,
    rng: np.random.Generator,
    record_every: int = 1000,
    threshold: float = 0.5,
    lr_final_factor: float = 1.0,
) -> TrainLog:
    """Online spherical SGD of every neuron of ``net`` on the pooled task for ``n_samples`` samples.

    Args:
        lr: per-sample learning rate (see :func:`per_sample_lr`).
        lr_final_factor: the rate follows a cosine from ``lr`` to ``lr * lr_final_factor`` over the
            run (1 keeps it constant).

    Returns:
        the run's :class:`TrainLog` (``n_star["global_total"]`` only when reached).
    """
    _check_common(task, net.d, batch, lr, record_every, threshold)
    check_positive("lr_final_factor", lr_final_factor)
    check_positive("n_samples", n_samples, integer=True)
    log = TrainLog(threshold=threshold)
    tracker = _Tracker(task, log, record_every)
    tracker.step(0, net.U, force=True)
    done = 0
    while done < n_samples:
        n = min(batch, n_samples - done)
        X, y, _ = task.sample(n, rng)
        correlation_step(net.U, net.b, X, y, net.act, _cosine(lr, lr_final_factor, done, n_samples))
        done += n
        tracker.step(n, net.U, force=done >= n_samples)
    log.stage_ends.append(tracker.seen)
    tracker.finish("global_total")
    return log


def _cosine(lr: float, final_factor: float, done: int, total: int) -> float:
    """Cosine interpolation from ``lr`` (at ``done = 0``) to ``lr * final_factor`` (at ``total``)."""
    if final_factor == 1.0:
        return lr
    t = min(done / max(total, 1), 1.0)
    return lr * (final_factor + (1.0 - final_factor) * 0.5 * (1.0 + math.cos(math.pi * t)))


def _softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def train_moe_stagewise(
    moe: MoE,
    task: ClusteredSIMTask,
    *,
    schedule: StageSchedule,
    batch: int,
    lr: float,
    router_lr: float = 0.05,
    a_lr: float = 0.05,
    router_batch: int = 256,
    stage3_batch: int | None = None,
    oracle_router: bool = False,
    residual: bool = True,
    rng: np.random.Generator,
    record_every: int = 1000,
    threshold: float = 0.5,
    lr_final_factor: float = 1.0,
) -> TrainLog:
    """Train ``moe`` through stages I-III (see the module docstring), drawing fresh samples.

    Args:
        schedule: samples per stage.
        batch: stage-I minibatch; stage III uses ``stage3_batch`` (default ``batch * M``, so every
            expert sees about ``batch`` samples per step).
        lr: per-sample learning rate of the neurons (stages I and III).
        router_lr, a_lr: learning rates of ``Theta`` and of the group-A second layer in stage II
            (mean-batch gradients of the squared loss, batch ``router_batch``).
        oracle_router: route by the true cluster instead of training the router.
        residual: stage III fits ``y - f_m^A(x)`` (the residual of the expert's group-A fit) rather
            than ``y``.
        threshold: overlap that counts as weak recovery for ``n_star``.
        lr_final_factor: in stages I and III the neuron rate follows a cosine from ``lr`` to
            ``lr * lr_final_factor`` (1 keeps it constant).
    """
    _check_common(task, moe.d, batch, lr, record_every, threshold)
    check_positive("lr_final_factor", lr_final_factor)
    if not isinstance(schedule, StageSchedule):
        raise TypeError(f"schedule must be a StageSchedule, got {type(schedule).__name__}")
    check_positive("router_lr", router_lr)
    check_positive("a_lr", a_lr)
    check_positive("router_batch", router_batch, integer=True)
    M, J, C = moe.n_experts, moe.J, task.n_clusters
    if oracle_router and M < C:
        raise ValueError(f"oracle_router needs n_experts >= n_clusters, got {M} < {C}")
    b3 = stage3_batch if stage3_batch is not None else batch * M
    check_positive("stage3_batch", b3, integer=True)
    log = TrainLog(threshold=threshold)
    tracker = _Tracker(task, log, record_every)
    U_all = moe.U.reshape(-1, moe.d)  # a view: updates to moe.U show up here
    tracker.step(0, U_all, moe.Theta, force=True)
    eye = np.eye(M)

    def routed(X: np.ndarray, c: np.ndarray) -> np.ndarray:
        return oracle_assign(c, M, C, rng) if oracle_router else moe.route(X)

    # -- stage I: cluster discovery (group A) --------------------------------------------------
    UA = np.ascontiguousarray(moe.U[:, :J].reshape(-1, moe.d))
    bA = moe.b[:, :J].reshape(-1)
    done = 0
    while done < schedule.stage1:
        n = min(batch, schedule.stage1 - done)
        X, y, c = task.sample(n, rng)
        mask = np.repeat(eye[oracle_assign(c, M, C, rng)], J, axis=1) if oracle_router else None
        correlation_step(UA, bA, X, y, moe.act, _cosine(lr, lr_final_factor, done, schedule.stage1), mask)
        moe.U[:, :J] = UA.reshape(M, J, moe.d)
        done += n
        ov = tracker.step(n, U_all, moe.Theta, force=done >= schedule.stage1)
        tracker.hold("local_stage1", float(ov[1:].min()), done)
    log.stage_ends.append(tracker.seen)
    tracker.finish("local_stage1")

    # -- stage II: router and group-A second layer (squared loss) --------------------------------
    done = 0
    while done < schedule.stage2:
        n = min(router_batch, schedule.stage2 - done)
        X, y, c = task.sample(n, rng)
        Phi = moe.act(X @ UA.T + bA).reshape(n, M, J)  # group-A features of every expert
        f = np.einsum("nmj,mj->nm", Phi, moe.a[:, :J]) + moe.c0  # (n, M)
        gate = eye[oracle_assign(c, M, C, rng)] if oracle_router else _softmax(X @ moe.Theta.T)
        F = np.sum(gate * f, axis=1)
        r = F - y  # d(0.5 r^2)/dF
        rg = r[:, None] * gate  # (n, M)
        moe.a[:, :J] -= a_lr * np.einsum("nm,nmj->mj", rg, Phi) / n
        moe.c0 -= a_lr * rg.mean(axis=0)
        if not oracle_router:
            # dF/dTheta_m = pi_m (f_m - F) x
            moe.Theta -= router_lr * ((rg * (f - F[:, None])).T @ X) / n
        done += n
        tracker.step(n, U_all, moe.Theta, force=done >= schedule.stage2)
    log.stage_ends.append(tracker.seen)
    if not (np.isfinite(moe.Theta).all() and np.isfinite(moe.a).all()):
        raise FloatingPointError(
            "stage II diverged (non-finite router or second layer); lower router_lr or a_lr"
        )

    # -- stage III: per-expert learning (group B on routed samples) ------------------------------
    routed_count = np.zeros(M, dtype=np.int64)
    UB = np.ascontiguousarray(moe.U[:, J:].reshape(-1, moe.d))
    bB = moe.b[:, J:].reshape(-1)
    log.stage3_initial_overlap = [float(v) for v in np.max(np.abs(UB @ task.w_global).reshape(M, J), axis=1)]
    done = 0
    while done < schedule.stage3:
        n = min(b3, schedule.stage3 - done)
        X, y, c = task.sample(n, rng)
        assign = routed(X, c)
        routed_count += np.bincount(assign, minlength=M)
        target = y
        if residual:  # y - f_m^A(x) for the expert m each sample is routed to
            fA = np.einsum("nmj,mj->nm", moe.act(X @ UA.T + bA).reshape(n, M, J), moe.a[:, :J]) + moe.c0
            target = y - fA[np.arange(n), assign]
        step_lr = _cosine(lr, lr_final_factor, done, schedule.stage3)
        correlation_step(UB, bB, X, target, moe.act, step_lr, np.repeat(eye[assign], J, axis=1))
        moe.U[:, J:] = UB.reshape(M, J, moe.d)
        done += n
        tracker.step(n, U_all, moe.Theta, force=done >= schedule.stage3)
        per_expert = np.max(np.abs(UB @ task.w_global).reshape(M, J), axis=1)
        tracker.hold("global_stage3", float(per_expert.max()), done)
        for e in range(M):
            tracker.hold(f"global_stage3_expert{e}", float(per_expert[e]), done)
            # the same run counted in the samples this expert received (its own SGD clock)
            tracker.hold(f"global_stage3_expert{e}_routed", float(per_expert[e]), float(routed_count[e]))
    log.stage_ends.append(tracker.seen)
    log.routed_stage3 = [int(v) for v in routed_count]
    tracker.finish("global_stage3")
    for e in range(M):
        tracker.finish(f"global_stage3_expert{e}")
        tracker.finish(f"global_stage3_expert{e}_routed")
    tracker.finish("global_total")
    return log
