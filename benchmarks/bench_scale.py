"""Scale: the check pass (probe and assess, as ``kfdguard check`` runs them) with 1, 4 and 16 GPUs.

Baseline in the same run: the same pass on the same machine with one GPU.
Goal: linear, and 16 GPUs within twice one GPU plus 16 ms (1 ms per GPU).
"""

from __future__ import annotations

from benchmarks.common import Result, median, scratch
from kfdguard.assess import assess
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.system import SimulatedSystem

RUNS = 30
COUNTS = (1, 4, 16)
NAVI31 = 0x744C  # RX 7900 XTX


def pass_time(gpus: int) -> float:
    import time

    builder = MachineBuilder(f"scale-{gpus}").ubuntu2404().with_user("alice", groups=["render"])
    for _ in range(gpus):
        builder = builder.with_gpu(NAVI31)
    with scratch() as d:
        system = SimulatedSystem(builder.render(d / "machine"))
        samples = []
        for _ in range(RUNS + 3):
            start = time.perf_counter()
            verdict = assess(probe(system))
            samples.append(time.perf_counter() - start)
        if len([g for g in verdict.gpus if g.compute_ready]) != gpus:
            raise RuntimeError(f"the {gpus}-GPU machine is not ready: {verdict.summary}")
    return median(samples[3:])


def main() -> list[Result]:
    times = {n: pass_time(n) for n in COUNTS}
    one, four, sixteen = (times[n] * 1e3 for n in COUNTS)
    limit = 2 * one + 16
    per_gpu = (sixteen - one) / 15
    return [
        Result(
            "scale: check pass (probe + assess) with 1, 4, 16 GPUs",
            f"{one:.2f} / {four:.2f} / {sixteen:.2f} ms (median of {RUNS}); {per_gpu:.2f} ms per extra GPU",
            f"1 GPU: {one:.2f} ms",
            f"4 GPUs {four / one:.2f}x, 16 GPUs {sixteen / one:.2f}x",
            "16 GPUs <= 2x one GPU + 16 ms",
            sixteen <= limit,
            note=f"limit {limit:.2f} ms; 4 GPUs would be {one + 3 * per_gpu:.2f} ms if linear",
        )
    ]


if __name__ == "__main__":
    for r in main():
        print(r)
