"""A real PyTorch training job: a small MLP regressing generated data, data-parallel over a gang of ranks.

A torchrun-style script: it reads torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``; :mod:`gpuweave.live.gang` gives it, as ``torchrun`` would), joins one ``torch.distributed`` process
group (``gloo`` on CPU, NCCL on GPUs) when the world has more than one rank, wraps the model in
``DistributedDataParallel`` and all-reduces gradients every step. Runs on CPU unless CUDA is visible (then on GPU
``LOCAL_RANK`` of the visible ones).

Data come from a fixed-seed generator (a random linear teacher plus noise), so runs are reproducible without any
download. Each step trains on one *global batch* of ``--batch`` samples: global batch ``s`` is the slice
``[j B, (j + 1) B)`` of epoch ``s // (n // B)``'s permutation, and rank ``r`` of ``W`` takes its contiguous part of
that slice (:class:`GlobalBatchSampler`, a distributed sampler over global batches: torch's ``DistributedSampler``
splits an epoch by rank, so it gives other batches at another world size and cannot start mid-epoch). Each rank's
loss is its samples' squared-error sum times ``W / B``, so DDP's mean over ranks is the global batch's mean: the
gang computes the same update as one process on the same global batch, whatever its size, uneven parts included.
``--batch-per-rank b`` lets the global batch change with the gang (``b x W``) instead.

The checkpoint (global rank 0 writes it) is ``{"model", "optimizer", "steps", "position", "epoch", "offset",
"carry", "noise"}`` (torch.save): ``steps`` this attempt's steps (what the runtime commits), ``position`` global
batches trained since the job began, ``epoch`` and ``offset`` where the next global batch starts in the data (where
a resumed gang, of any size and batch, goes on), ``noise`` the gradient statistics so far.

Elastic jobs (``--batch-per-rank`` with ``--adascale``): a job the policy resizes stops at a checkpoint and resumes
at its new size, its global batch following the gang. With AdaScale each step's learning rate is ``--lr`` times the
batch's gain over ``--init-batch`` from the noise measured so far, and the step counts that gain as its progress
(steps at the initial batch: Pollux's model, Qiao et al. sec. 3.1), so the runtime's steps, the job's work and its
loss curve are those of the initial batch whatever the sizes it ran at. The runtime counts whole steps; the
fraction left (``carry``) goes on in the next attempt.

Every step measures the gradient noise as adaptdl does (:class:`GradientMeter`, the estimator in
:mod:`gpuweave.workload.goodput`): each rank's squared gradient norm before DDP averages (a tensor hook per
parameter), summed over the ranks in the step's one all-reduce, against the averaged gradient's; a single rank pairs
each step with the previous one. The estimates go to the runtime with the steps (``api.report_gradients``), and
``live.csv`` gives each attempt's statistical efficiency and goodput at its batch, relative to ``--init-batch``.

HadarE consolidation averages ``model``. Stops are collective: every
step the ranks all-reduce "checkpoint due" and "stop asked" (the runtime signals each node on its own), so every
rank checkpoints and leaves at the same step. A forked copy (``GPUWEAVE_COPY``) draws its own permutations, so the
copies HadarE consolidates trained on different data. ``--crash-attempts K`` (fault tests) makes the last rank of
the first K attempts exit with status 3 at ``--crash-step`` (default: halfway), ``--hang-attempts K`` makes it hang
there in the K attempts after those.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from gpuweave.live import api
from gpuweave.workload.goodput import NoiseEstimate, gain

SAMPLES = 512
WARMUP_STEPS = 3  # an attempt's first steps are not timed (process group, caches)
FEATURES = 32
COPY_SEED_STRIDE = 7919  # a forked copy's permutations: seed + copy x this


def build(width: int, seed: int) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.randn(SAMPLES, FEATURES, generator=gen)
    teacher = torch.randn(FEATURES, 1, generator=gen)
    targets = inputs @ teacher + 0.01 * torch.randn(SAMPLES, 1, generator=gen)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
    return model, inputs, targets


class GlobalBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Rank ``rank``'s part of every global batch from ``start`` on: contiguous, sizes differing by at most one.

    Epoch ``e``'s order is ``randperm(samples)`` seeded ``seed + e``; an epoch has ``samples // batch`` global batches
    (the tail that does not fill one is dropped, whatever the world size); a position is (epoch, sample offset into
    its order), so a job resumed at another batch size goes on from where it was. O(samples) per epoch."""

    def __init__(self, samples: int, batch: int, rank: int, world: int, seed: int, start: int = 0) -> None:
        if not 0 < batch <= samples:
            raise ValueError(f"global batch {batch} must be in 1..{samples}")
        if world > batch:
            raise ValueError(f"a global batch of {batch} cannot be split over {world} ranks")
        self.samples, self.batch, self.rank, self.world, self.seed, self.start = (
            samples,
            batch,
            rank,
            world,
            seed,
            start,
        )
        per, extra = divmod(batch, world)
        self.lo = rank * per + min(rank, extra)
        self.hi = self.lo + per + (1 if rank < extra else 0)

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, sample offset into its order) of global batch ``step`` at this batch size."""
        epoch, j = divmod(step, self.samples // self.batch)
        return epoch, j * self.batch

    def advance(self, epoch: int, offset: int) -> tuple[int, int]:
        """Where the next global batch starts after the one at (``epoch``, ``offset``); an epoch ends where the next
        batch would not fit (its tail is dropped). A gang resumed at another batch size goes on from the same
        position: the offset need not be a multiple of its batch."""
        offset += self.batch
        return (epoch + 1, 0) if offset + self.batch > self.samples else (epoch, offset)

    def batches(self, start: int) -> Iterator[list[int]]:
        return self.batches_from(*self.position(start))

    def batches_from(self, epoch: int, offset: int) -> Iterator[list[int]]:
        """Rank ``rank``'s part of each global batch from (``epoch``, ``offset``) on."""
        if offset + self.batch > self.samples:
            epoch, offset = epoch + 1, 0
        while True:
            order = torch.randperm(self.samples, generator=torch.Generator().manual_seed(self.seed + epoch))
            while offset + self.batch <= self.samples:
                yield order[offset + self.lo : offset + self.hi].tolist()
                offset += self.batch
            epoch, offset = epoch + 1, 0

    def __iter__(self) -> Iterator[list[int]]:
        return self.batches(self.start)


class GradientMeter:
    """The gradient noise of data-parallel steps (module docstring): O(parameters) per step, one scalar more in the
    step's all-reduce."""

    def __init__(
        self,
        params: list[torch.nn.Parameter],
        world: int,
        init_batch: int,
        state: dict[str, float] | None,
        accum_steps: int = 0,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.world, self.init_batch, self.parts = world, init_batch, accum_steps + 1
        self.estimate = NoiseEstimate.from_dict(state) if state else NoiseEstimate()
        self.local = torch.zeros((), dtype=torch.float64, device=self.params[0].device)
        self.previous: torch.Tensor | None = None
        self.last_grad = 0.0  # time.perf_counter() of the last gradient computed: its step's sync starts there
        if world * self.parts > 1:
            # a tensor hook sees each backward's own gradient (a rank's, a micro-batch's), before DDP averages it
            for param in self.params:
                param.register_hook(self._add_local)  # type: ignore[no-untyped-call]  # torch leaves it unannotated

    def _add_local(self, grad: torch.Tensor) -> None:
        self.local += grad.detach().pow(2).sum(dtype=torch.float64)
        self.last_grad = time.perf_counter()

    def take_local(self) -> float:
        """This rank's squared gradient norm of the step just taken (then reset for the next)."""
        value = float(self.local)
        self.local.zero_()
        return value

    def update(self, local_sum: float, batch: int) -> None:
        """After the step's all-reduce: ``local_sum`` the ranks' squared norms summed."""
        grads = torch.cat([p.grad.detach().reshape(-1).double() for p in self.params if p.grad is not None])
        total = float(grads.pow(2).sum())
        count = self.world * self.parts
        if count > 1:
            # each of the count samples (a rank's micro-batch) entered its loss scaled by 1 / parts: its mean
            # gradient's squared norm is parts^2 times what the hook saw
            self.estimate.update(local_sum * self.parts / self.world, total, count, batch / self.init_batch)
            return
        if self.previous is not None:  # one rank: this step's gradient and the previous one as two samples
            local = (float(self.previous.pow(2).sum()) + total) / 2
            mean = float(((grads + self.previous) / 2).pow(2).sum())
            self.estimate.update(local, mean, 2, 2 * batch / self.init_batch, biased=True)
        self.previous = grads.clone()


@dataclass(slots=True)
class Progress:
    """Where a job is: global batches trained since it began (``position``), the next batch's place in the data
    (``epoch``, ``offset``), and with AdaScale the fraction of a step's worth of progress not yet reported
    (``carry``: the runtime counts whole steps)."""

    position: int = 0
    epoch: int = 0
    offset: int = 0
    carry: float = 0.0


def save(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    steps: int,
    at: Progress,
    noise: NoiseEstimate,
) -> None:
    path = api.checkpoint_path()
    tmp = path.with_name(path.name + ".tmp")
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "steps": steps,
        "position": at.position,
        "epoch": at.epoch,
        "offset": at.offset,
        "carry": at.carry,
        "noise": noise.as_dict(),
    }
    torch.save(state, tmp)
    os.replace(tmp, path)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32, help="global batch (samples per step over all ranks)")
    parser.add_argument(
        "--batch-per-rank", type=int, default=0, help="samples per rank per step: the global batch follows the gang"
    )
    parser.add_argument(
        "--init-batch",
        type=int,
        default=0,
        help="the batch statistical efficiency is relative to (default: --batch-per-rank if given, else --batch)",
    )
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument(
        "--adascale",
        action="store_true",
        help="scale each step's learning rate by the batch's gain over --init-batch (AdaScale, as adaptdl) and count "
        "the gain as the step's progress: steps are then worth steps at the initial batch (Pollux's model)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init-timeout", type=float, default=120.0, help="seconds to wait for the gang to form")
    parser.add_argument(
        "--crash-attempts", type=int, default=0, help="fault tests: in the first K attempts the last rank exits 3"
    )
    parser.add_argument("--crash-step", type=int, default=0, help="the attempt step it exits at (0: halfway)")
    parser.add_argument(
        "--hang-attempts", type=int, default=0, help="fault tests: in the K attempts after those, the last rank hangs"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    torch.set_num_threads(1)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available() and local_rank < torch.cuda.device_count()
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    if world > 1:
        dist.init_process_group(
            "nccl" if cuda else "gloo", init_method="env://", timeout=timedelta(seconds=args.init_timeout)
        )
    together = False  # every rank ends here at the same step: the target reached, or the stop all agreed on
    try:
        code = _train(args, rank, world, device)
        together = True
        return code
    except SystemExit as stopped:
        together = stopped.code in (0, None)
        raise
    finally:
        if world > 1 and dist.is_initialized():
            if together:
                # Rank 0 writes the checkpoint after the last all-reduce; a peer that closed its connections
                # meanwhile could make gloo's I/O thread on rank 0 abort the process (SIGABRT, exit 134) after
                # the checkpoint was saved. So the ranks leave together. Not after a crash: its peers are gone.
                dist.barrier()
            dist.destroy_process_group()


def _resume(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, sampler: GlobalBatchSampler
) -> tuple[Progress, dict[str, float] | None]:
    """The checkpoint to go on from, if any: the model, the optimizer, where the job is and its gradient noise (a
    checkpoint without (epoch, offset), from an older version, gives its position in global batches)."""
    resume = api.resume_path()
    if resume is None:
        return Progress(), None
    state = torch.load(resume, map_location="cpu")
    model.load_state_dict(state["model"])
    if "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    position = int(state.get("position", 0))
    if "epoch" in state:
        epoch, offset = int(state["epoch"]), int(state["offset"])
    else:
        epoch, offset = sampler.position(position)
    return Progress(position, epoch, offset, float(state.get("carry", 0.0))), state.get("noise")


def _train(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> int:
    model, inputs, targets = build(args.width, args.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    # an adaptive job's batch is its agent's, for this placement (gpuweave.live.agents), given by the runtime
    batch = args.batch_per_rank * world if args.batch_per_rank > 0 else args.batch
    batch = int(os.environ.get("GPUWEAVE_BATCH_SIZE") or batch)
    accum = int(os.environ.get("GPUWEAVE_ACCUM_STEPS") or 0)
    init_batch = int(os.environ.get("GPUWEAVE_INIT_BATCH") or args.init_batch or args.batch_per_rank or args.batch)
    seed = args.seed + COPY_SEED_STRIDE * int(os.environ.get("GPUWEAVE_COPY", "0"))
    sampler = GlobalBatchSampler(inputs.shape[0], batch, rank, world, seed)
    at, noise_state = _resume(model, optimizer, sampler)
    model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    trained: torch.nn.Module = model
    if world > 1:
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    meter = GradientMeter(list(model.parameters()), world, init_batch, noise_state, accum)
    batches = sampler.batches_from(at.epoch, at.offset)
    if at.offset + batch > sampler.samples:  # resumed at a larger batch than fits the epoch's rest
        at.epoch, at.offset = at.epoch + 1, 0
    step = _Step(trained, inputs, targets, world / batch, accum, float(os.environ.get("GPUWEAVE_SAMPLE_S") or 0))
    steps, target, progress = 0, api.target_steps(), at.carry
    attempt, last = int(os.environ.get("GPUWEAVE_ATTEMPT", "0")), rank == world - 1
    fault_at = args.crash_step or max(1, target // 2)
    crash_at = fault_at if last and attempt < args.crash_attempts else -1
    hanging = args.crash_attempts <= attempt < args.crash_attempts + args.hang_attempts
    hang_at = fault_at if last and hanging else -1
    while progress < target:
        if steps == crash_at:
            print(f"torch worker: rank {rank}: injected crash at step {steps}", file=sys.stderr, flush=True)
            os._exit(3)  # as a dying process does: no clean exit, no checkpoint
        if steps == hang_at:
            print(f"torch worker: rank {rank}: injected hang at step {steps}", file=sys.stderr, flush=True)
            time.sleep(86400)  # its peers wait for it in the next all-reduce: nobody reports a step
        optimizer.zero_grad()
        began = step.run(torch.tensor(next(batches), device=device), meter)
        worth = _adascale(optimizer, args.lr, meter.estimate, batch / init_batch) if args.adascale else 1.0
        optimizer.step()
        synced = time.perf_counter()
        steps += 1
        progress += worth
        at.position += 1
        at.epoch, at.offset = sampler.advance(at.epoch, at.offset)
        api.report(int(progress))
        reported = time.perf_counter()
        due, stop, local_sum = _agree(api.should_checkpoint(), api.stop_requested(), meter.take_local(), world, device)
        step.timed(began, synced, reported, time.perf_counter())
        meter.update(local_sum, batch)
        if meter.estimate.samples:  # sent with the next status write (a checkpoint always writes one)
            api.report_gradients(batch, init_batch, meter.estimate.grad_sqr, meter.estimate.grad_var, args.adascale)
        if step.measured:
            api.report_step_times(*step.times())
        if stop:
            api.request_stop()
        if due:
            done = int(progress)
            if rank == 0:
                at.carry = progress - done
                save(model, optimizer, done, at, meter.estimate)
            api.checkpointed(done)  # exits here when the gang was asked to stop
    return 0


class _Step:
    """One optimizer step over this rank's part of a global batch, in ``accum + 1`` micro-batches (all but the last
    without DDP's all-reduce), timed as adaptdl profiles a step: seconds per step and the part of them spent
    synchronising (from this rank's last gradient to the end of its all-reduces), averaged over the attempt's
    steps after the first :data:`WARMUP_STEPS`. ``sample_s`` > 0 emulates a GPU on a machine without one: each
    micro-batch's compute takes at least its samples times ``sample_s`` seconds (the runtime derives it from the
    profile store's rate of the job's GPU type)."""

    def __init__(
        self,
        trained: torch.nn.Module,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        loss_scale: float,
        accum: int,
        sample_s: float,
    ) -> None:
        self.trained, self.inputs, self.targets = trained, inputs, targets
        self.loss_scale, self.parts, self.sample_s = loss_scale, accum + 1, sample_s
        self.count, self.total_s, self.sync_s = 0, 0.0, 0.0
        self._last_grad = 0.0

    def run(self, idx: torch.Tensor, meter: GradientMeter) -> float:
        """Forward and backward over ``idx`` (this rank's samples); returns when the step began."""
        began = time.perf_counter()
        parts = torch.tensor_split(idx, self.parts)
        ddp = isinstance(self.trained, torch.nn.parallel.DistributedDataParallel)
        for i, part in enumerate(parts):
            started = time.perf_counter()
            accumulating = ddp and i < len(parts) - 1  # only the last micro-batch all-reduces
            with self.trained.no_sync() if accumulating else contextlib.nullcontext():  # type: ignore[operator]
                error = self.trained(self.inputs[part]) - self.targets[part]
                loss = (error * error).sum() * self.loss_scale  # DDP averages over ranks: the global batch's mean
                if self.sample_s > 0:  # the emulated GPU's compute time for these samples
                    time.sleep(max(0.0, len(part) * self.sample_s - (time.perf_counter() - started)))
                loss.backward()
        self._last_grad = meter.last_grad or time.perf_counter()
        return began

    def timed(self, began: float, synced: float, reported: float, agreed: float) -> None:
        """The step's end: ``synced`` after its backward and optimizer step, ``reported`` after its report to the
        runtime, ``agreed`` after the ranks' agreement (an all-reduce too: it counts as synchronisation)."""
        self.count += 1
        if self.count <= WARMUP_STEPS:
            return
        last = min(max(self._last_grad, began), synced)
        self.total_s += agreed - began
        self.sync_s += (synced - last) + (agreed - reported)

    @property
    def measured(self) -> bool:
        return self.count > WARMUP_STEPS

    def times(self) -> tuple[float, float]:
        """(seconds of the synchronising micro-batch's step, seconds of it spent synchronising), Pollux's profile
        of a configuration: the other micro-batches each took the step time less the sync."""
        n = self.count - WARMUP_STEPS
        total, sync = self.total_s / n, self.sync_s / n
        compute = (total - sync) / self.parts
        return compute + sync, sync


def _adascale(optimizer: torch.optim.Optimizer, lr: float, noise: NoiseEstimate, scale: float) -> float:
    """AdaScale (Johnson et al., ICML'20; adaptdl's ``AdaScale``): this step's learning rate is ``lr`` times the
    batch's gain over the initial batch, ``(var + sqr) / (var / scale + sqr)`` from the noise measured so far (1
    before any measurement, or at the initial batch); returns the gain, the step's worth in steps at the initial
    batch (Pollux's statistical efficiency times the scale, Qiao et al. sec. 3.1)."""
    worth = float(gain(noise.grad_sqr, noise.grad_var, scale)) if noise.samples and scale != 1.0 else 1.0
    for group in optimizer.param_groups:
        group["lr"] = lr * worth
    return worth


def _agree(due: bool, stop: bool, local_sqr: float, world: int, device: torch.device) -> tuple[bool, bool, float]:
    """Whether any rank wants a checkpoint, whether any was asked to stop, and the ranks' squared gradient norms
    summed: one all-reduce of three numbers."""
    if world == 1:
        return due, stop, local_sqr
    values = torch.tensor([float(due), float(stop), local_sqr], dtype=torch.float64, device=device)
    dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return bool(values[0] > 0), bool(values[1] > 0), float(values[2])


if __name__ == "__main__":
    sys.exit(main())
