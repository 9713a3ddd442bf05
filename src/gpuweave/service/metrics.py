"""``/metrics`` in Prometheus' text format: the queue, running jobs, busy GPUs per type, decision time per
round, power and energy, API latency. One registry per service (not the global one), so tests can run several."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
DECISION_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)


class ServiceMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.queue = Gauge(
            "gpuweave_queue_length", "Jobs waiting (in the policy's queue or held by a quota)", registry=r
        )
        self.running = Gauge("gpuweave_running_jobs", "Jobs holding GPUs", registry=r)
        self.busy = Gauge("gpuweave_busy_gpus", "GPUs allocated to jobs", ["gpu_type"], registry=r)
        self.gpus = Gauge("gpuweave_gpus", "GPUs in the cluster", ["gpu_type"], registry=r)
        self.power = Gauge(
            "gpuweave_power_watts", "Facility power of the cluster's GPUs now (W, PUE included)", registry=r
        )
        self.energy = Gauge(
            "gpuweave_energy_joules", "Energy of the cluster's GPUs since the service's first start", registry=r
        )
        self.cost = Gauge("gpuweave_energy_cost", "Cost of that energy at the nodes' prices", registry=r)
        self.decision_seconds = Histogram(
            "gpuweave_decision_seconds", "Time the policy took per decision", buckets=DECISION_BUCKETS, registry=r
        )
        self.transitions = Counter("gpuweave_job_transitions", "Job state changes committed", ["state"], registry=r)
        self.api_seconds = Histogram(
            "gpuweave_api_request_seconds",
            "API request latency",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.submissions = Counter("gpuweave_submissions", "Jobs accepted by the API", registry=r)

    def update_cluster(
        self,
        *,
        queued: int,
        running: int,
        busy: dict[str, float],
        total: dict[str, int],
        power_w: float,
        energy_j: float,
        cost: float,
    ) -> None:
        self.queue.set(queued)
        self.running.set(running)
        for model, n in busy.items():
            self.busy.labels(model).set(n)
        for model, n in total.items():
            self.gpus.labels(model).set(n)
        self.power.set(power_w)
        self.energy.set(energy_j)
        self.cost.set(cost)

    def render(self) -> bytes:
        return generate_latest(self.registry)
