"""The real-hardware checks, run once on a lent GPU machine (never by the tests): read-only NVML, the FIKIT shim
with real CUDA programs and a real PyTorch job, and the live runtime on a real GPU.

    python3 tools/real_gpu/check.py OUT_DIR [--only nvml,shim,bench,torch,live]

Environment: CHECK_WORK_SCALE (the live jobs' steps times this; default 1), CHECK_LIVE_POLICIES (default
fifo,hadar).

Needs: an NVIDIA GPU and driver, nvcc, a C compiler, PyTorch with CUDA and torchvision, gpuweave importable
(PYTHONPATH=src plus its dependencies). It never changes MIG mode, creates MIG instances or resets the GPU:
`mig run` is called with --check and --dry-run only. Each step runs on its own, so one failing step does not hide
the others; everything lands in OUT_DIR/report.json, and a summary is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PY = sys.executable
GW = [PY, "-m", "gpuweave.cli"]


def sh(cmd: list[str] | str, *, timeout: float = 120, env: dict | None = None, check: bool = False, **kw) -> dict:
    """Run a command; its exit code, stdout and stderr (tails) and wall time."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            cmd,
            shell=isinstance(cmd, str),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=None if env is None else {**os.environ, **env},
            **kw,
        )
        res = {"rc": p.returncode, "out": p.stdout[-20000:], "err": p.stderr[-4000:]}
    except subprocess.TimeoutExpired as exc:
        res = {"rc": "timeout", "out": str(exc.stdout)[-3000:], "err": str(exc.stderr)[-3000:]}
    res["wall_s"] = round(time.perf_counter() - t0, 3)
    if check and res["rc"] != 0:
        raise RuntimeError(f"{cmd}: rc {res['rc']}: {res['err'][-1500:]}")
    return res


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON line in: {text[-500:]}")


# ----------------------------------------------------------------------------------------------------------- NVML
def step_nvml(work: Path) -> dict:
    import pynvml

    from gpuweave.hardware.catalog import gpu_from_nvml_name

    res: dict = {
        "smi": sh(
            "nvidia-smi --query-gpu=index,name,driver_version,mig.mode.current,mig.mode.pending,"
            "memory.total,power.draw,clocks.sm --format=csv"
        )
    }
    for flag in ("-lgip", "-lgipp", "-lgi", "-lci"):
        res[f"smi mig {flag}"] = sh(f"nvidia-smi mig {flag}")
    res["caps"] = sh("cat /proc/driver/nvidia/capabilities/mig/config; ls -l /dev/nvidia-caps")
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        model = gpu_from_nvml_name(name)
        res["nvml_name"] = name
        res["catalog_model"] = None if model is None else model.name
        res["catalog_mig"] = None if model is None or model.mig is None else model.mig.name
        try:
            res["mig_mode"] = list(pynvml.nvmlDeviceGetMigMode(h))
        except pynvml.NVMLError as exc:
            res["mig_mode"] = f"NVMLError: {exc}"
        try:  # the read-only geometry query the pre-flight makes once MIG mode is on
            from gpuweave.mig.nvml_preflight import _device_geometry

            geo = _device_geometry(pynvml, h)
            res["geometry"] = {str(k): [v[0], sorted(v[1])] for k, v in geo.items()}
        except Exception as exc:  # with MIG mode off NVML may refuse these queries: record what it says
            res["geometry"] = f"{type(exc).__name__}: {exc}"
    finally:
        pynvml.nvmlShutdown()
    model_name = res["catalog_model"] or "H100"
    mig_gpu = res["catalog_mig"] or "H100"
    tasks = work / "tasks.csv"
    res["generate"] = sh([*GW, "mig", "generate", str(tasks), "--n", "6", "--gpu", mig_gpu, "--seed", "1"])
    lines = tasks.read_text().splitlines()  # a command per task: --dry-run prints what each would run
    tasks.write_text("\n".join([lines[0] + ",command", *(f"{line},sleep 1" for line in lines[1:] if line)]) + "\n")
    sched, wrong = work / "schedule.json", work / "schedule-a30.json"
    res["plan"] = sh([*GW, "mig", "plan", str(tasks), "--gpu", mig_gpu, "--json", str(sched)])
    sh([*GW, "mig", "generate", str(work / "tasks-a30.csv"), "--n", "4", "--gpu", "A30", "--seed", "1"])
    res["plan_a30"] = sh([*GW, "mig", "plan", str(work / "tasks-a30.csv"), "--gpu", "A30", "--json", str(wrong)])
    res["check"] = sh([*GW, "mig", "run", str(sched), "--check"])  # read-only pre-flight
    res["check_wrong_gpu"] = sh([*GW, "mig", "run", str(wrong), "--check"])  # an A30 schedule on this GPU
    res["dry_run"] = sh([*GW, "mig", "run", str(sched), "--dry-run"])
    res["model_for_live"] = model_name
    res["after_smi_lgi"] = sh("nvidia-smi mig -lgi")  # still no instances: nothing was created
    return res


# ------------------------------------------------------------------------------------------------------- the shim
def build(work: Path) -> dict:
    shim_dir = work / "shim"
    r = sh([*GW, "kernel", "build-shim", "--out", str(shim_dir)], check=True)
    src = HERE / "launch_real.cu"
    builds = {}
    for kind in ("shared", "static"):
        exe = work / f"launch_real_{kind}"
        builds[kind] = sh(
            ["nvcc", "-O2", "-cudart", kind, "-o", str(exe), str(src), "-lcuda", "-lcublas", "-lpthread"],
            timeout=300,
        )
    return {"shim": str(shim_dir / "libfikit_shim.so"), "build_shim": r, "nvcc": builds}


class Server:
    """``gpuweave kernel serve`` on a free loopback port, with a stats query."""

    def __init__(self, work: Path, profiles: Path | None = None) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        cmd = [*GW, "kernel", "serve", "--port", str(self.port)]
        if profiles is not None:
            cmd += ["--profiles", str(profiles)]
        self.log = open(work / f"serve-{self.port}.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.addr = f"127.0.0.1:{self.port}"
        for _ in range(100):
            if self.stats() is not None:
                return
            time.sleep(0.1)
        raise RuntimeError("kernel serve did not answer")

    def stats(self) -> dict | None:
        from gpuweave.kernel.protocol import decode_reply, encode

        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.3)
        try:
            s.sendto(encode("stats"), ("127.0.0.1", self.port))
            return decode_reply(s.recv(65536))
        except OSError:
            return None
        finally:
            s.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def shim_env(shim: str, **kw: str) -> dict:
    return {"LD_PRELOAD": shim, **kw}


def step_shim(work: Path, built: dict) -> dict:
    """Every launch of a real CUDA program, through each entry point, is gated: the shim's measure trace lists
    every kernel the driver ran; in share mode the server sees one launch and one completion per kernel."""
    res: dict = {}
    R = 20
    for kind in ("shared", "static"):
        exe = work / f"launch_real_{kind}"
        if not exe.exists():
            res[kind] = "not built"
            continue
        out = work / f"measure-{kind}.json"
        plain = sh([str(exe), "check", str(R)])
        meas = sh(
            [str(exe), "check", str(R)],
            env=shim_env(
                built["shim"],
                FIKIT_MODE="measure",
                FIKIT_SCHEDULER="none",
                FIKIT_MEASURE_OUT=str(out),
                FIKIT_TASK_KEY=f"launch-{kind}",
            ),
        )
        entry: dict = {"plain": plain, "measure": meas}
        if out.exists():
            kernels = json.loads(out.read_text())["kernels"]
            ids = [k["id"] for k in kernels]
            entry["gated_total"] = len(ids)
            entry["by_name"] = {}
            for key in ("saxpy", "plain", "tile<4>", "tile", "cudaGraphExec", "gemm", "empty"):
                entry["by_name"][key] = sum(1 for i in ids if key in i.split("|")[0])
            entry["distinct_ids"] = sorted(set(ids))[:40]
            entry["dur_ms_median"] = statistics.median(k["dur"] for k in kernels) if kernels else None
        srv = Server(work)
        try:
            share = sh(
                [str(exe), "check", str(R)],
                env=shim_env(
                    built["shim"], FIKIT_SCHEDULER=srv.addr, FIKIT_TASK_KEY=f"share-{kind}", FIKIT_SHIM_VERBOSE="1"
                ),
            )
            time.sleep(0.5)
            entry["share"] = {
                "rc": share["rc"],
                "stats": srv.stats(),
                "err_tail": share["err"][-800:],
            }
        finally:
            srv.stop()
        # Expected gated launches: 20 x (chevron, runtime, ex, coop, driver) + 20 graph launches + >= 20 GEMMs.
        entry["expected_min"] = R * 7
        res[kind] = entry
    return res


def step_bench(work: Path, built: dict) -> dict:
    """Per-launch cost of an empty kernel: no shim, shim off, open (sole client), open without completions,
    closed (a priority-1 filler while a priority-0 client is registered); 1 and 4 threads."""
    exe = work / "launch_real_shared"
    if not exe.exists():
        exe = work / "launch_real_static"
    res: dict = {}
    n = 20000
    for threads in (1, 4):
        row: dict = {}
        row["no_shim"] = [
            last_json(sh([str(exe), "bench", str(n), str(threads)])["out"])["ns_per_launch"] for _ in range(3)
        ]
        row["shim_off"] = [
            last_json(
                sh([str(exe), "bench", str(n), str(threads)], env=shim_env(built["shim"], FIKIT_MODE="off"))["out"]
            )["ns_per_launch"]
            for _ in range(3)
        ]
        srv = Server(work)
        try:
            for label, extra in (("open", {}), ("open_no_completions", {"FIKIT_COMPLETIONS": "off"})):
                vals = []
                for i in range(3):
                    r = sh(
                        [str(exe), "bench", str(n), str(threads)],
                        env=shim_env(
                            built["shim"],
                            FIKIT_SCHEDULER=srv.addr,
                            FIKIT_PRIORITY="0",
                            FIKIT_TASK_KEY=f"bench{i}",
                            **extra,
                        ),
                    )
                    vals.append(last_json(r["out"])["ns_per_launch"] if r["rc"] == 0 else r)
                row[label] = vals
            hog = subprocess.Popen(
                [str(exe), "idle", "60"],
                env={
                    **os.environ,
                    **shim_env(built["shim"], FIKIT_SCHEDULER=srv.addr, FIKIT_PRIORITY="0", FIKIT_TASK_KEY="hog"),
                },
            )
            time.sleep(2.0)
            nc = 2000
            r = sh(
                [str(exe), "bench", str(nc), str(threads)],
                env=shim_env(built["shim"], FIKIT_SCHEDULER=srv.addr, FIKIT_PRIORITY="1", FIKIT_TASK_KEY="filler"),
                timeout=120,
            )
            row["closed"] = last_json(r["out"])["ns_per_launch"] if r["rc"] == 0 else r
            row["closed_launches"] = nc
            row["server_stats"] = srv.stats()
            hog.kill()
            hog.wait()
        finally:
            srv.stop()
        res[f"threads={threads}"] = row
    return res


# ------------------------------------------------------------------------------------------------ PyTorch + FIKIT
def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def step_torch(work: Path, built: dict) -> dict:
    job = [PY, str(HERE / "torch_job.py")]
    res: dict = {}
    # 1. every kernel CUPTI sees in one process is gated by the shim (measure mode counts the gated launches)
    out = work / "count-measure.json"
    r = sh(
        [*job, "count"],
        timeout=300,
        env=shim_env(
            built["shim"],
            FIKIT_MODE="measure",
            FIKIT_SCHEDULER="none",
            FIKIT_MEASURE_OUT=str(out),
            FIKIT_TASK_KEY="count",
        ),
    )
    res["count"] = {"rc": r["rc"], "err": r["err"][-600:]}
    if r["rc"] == 0 and out.exists():
        prof = last_json(r["out"])
        gated = json.loads(out.read_text())["kernels"]
        res["count"].update(
            cupti_kernels=prof["kernels"],
            gated_launches=len(gated),
            torch=prof["torch"],
            cuda=prof["cuda"],
            gated_names=sorted({k["id"].split("|")[0] for k in gated})[:30],
        )
    # 2. exclusive latency of the service, and the filler alone
    excl = sh([*job, "infer", "--iters", "200"], timeout=300)
    res["exclusive_infer"] = summarise_latency(excl)
    res["exclusive_train"] = sh([*job, "train", "--seconds", "8"], timeout=300)["out"][-300:]
    # 3. profiles from the shim's measure mode (2 runs each), as a user would make them
    prof_dir = work / "profiles"
    for key, args in (("svc-hi", ["infer", "--iters", "30", "--warmup", "5"]), ("svc-lo", ["train", "--steps", "60"])):
        runs = []
        for i in range(2):
            tr = work / f"{key}-{i}.json"
            sh(
                [*job, *args],
                timeout=300,
                env=shim_env(
                    built["shim"],
                    FIKIT_MODE="measure",
                    FIKIT_SCHEDULER="none",
                    FIKIT_MEASURE_OUT=str(tr),
                    FIKIT_TASK_KEY=key,
                ),
            )
            if tr.exists():
                runs.append(str(tr))
        res[f"profile_{key}"] = sh(
            [*GW, "kernel", "profile", *runs, "--task-key", key, "--out", str(prof_dir)], timeout=300
        )
    # 4. both together: unmanaged sharing vs FIKIT (hi priority 0, lo priority 1)
    res["shared_no_shim"] = together(job, None, None)
    # FIKIT twice: with both profiles (fillers placed in the service's gaps), then with the service's profile
    # only (the trainer's kernels are held while the service is active, none is placed as a filler), so that
    # what the fillers cost or give the service shows (stop 31: one run, median 3.62 ms with 471 fillers).
    hi_only = work / "profiles-service-only"
    hi_only.mkdir(exist_ok=True)
    if (prof_dir / "svc-hi.json").exists():
        shutil.copy(prof_dir / "svc-hi.json", hi_only / "svc-hi.json")
    for key, folder in (("fikit", prof_dir), ("fikit_service_profile_only", hi_only)):
        srv = Server(work, folder)
        try:
            res[key] = together(job, built["shim"], srv.addr)
            res[key]["server_stats"] = srv.stats()
        finally:
            srv.stop()
    return res


def summarise_latency(r: dict) -> dict:
    if r["rc"] != 0:
        return {"rc": r["rc"], "err": r["err"][-1500:]}
    lat = last_json(r["out"])["latency_ms"]
    return {
        "n": len(lat),
        "p50_ms": round(pct(lat, 0.5), 3),
        "p99_ms": round(pct(lat, 0.99), 3),
        "mean_ms": round(statistics.mean(lat), 3),
    }


def together(job: list[str], shim: str | None, addr: str | None) -> dict:
    env_lo = {} if shim is None else shim_env(shim, FIKIT_SCHEDULER=addr, FIKIT_PRIORITY="1", FIKIT_TASK_KEY="svc-lo")
    env_hi = {} if shim is None else shim_env(shim, FIKIT_SCHEDULER=addr, FIKIT_PRIORITY="0", FIKIT_TASK_KEY="svc-hi")
    lo = subprocess.Popen(
        [*job, "train", "--seconds", "25"],
        env={**os.environ, **env_lo},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(6)  # the filler is up and training before the service starts
    hi = sh([*job, "infer", "--iters", "200"], env=env_hi, timeout=300)
    lo_out, lo_err = lo.communicate(timeout=300)
    res = {"hi": summarise_latency(hi)}
    try:
        res["lo"] = last_json(lo_out)
    except ValueError:
        res["lo"] = {"rc": lo.returncode, "err": lo_err[-1500:]}
    return res


# ----------------------------------------------------------------------------------------------- live runtime
def step_live(work: Path, model: str) -> dict:
    """`gpuweave cluster run` with the local executor and the bundled PyTorch trainer on this machine's GPU."""
    import yaml

    live = work / "live"
    live.mkdir(exist_ok=True)
    job_type = "torch-mlp"
    (live / "cluster.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "one-real-gpu",
                "description": "this machine's GPU",
                "price_per_kwh": 0.1,
                "pue": 1.2,
                "nodes": [{"gpu": model, "gpus_per_node": 1, "count": 1, "name_prefix": "gpu-"}],
            }
        )
    )
    # A first guess of the rate; the runtime replaces it with measured steps/s once a job has run.
    (live / "profiles.csv").write_text(
        f"job_type,gpu_model,num_gpus,consolidated,throughput\n{job_type},{model},1,1,400\n"
    )
    scale = float(os.environ.get("CHECK_WORK_SCALE", "1"))  # < 1 to try the step on a CPU
    rows = [f"j1,0,1,{20000 * scale:.0f}", f"j2,0,1,{12000 * scale:.0f}", f"j3,5,1,{8000 * scale:.0f}"]
    rows.append(f"j4,12,1,{16000 * scale:.0f}")
    (live / "trace.csv").write_text(
        "job_id,arrival,num_gpus,job_type,work\n"
        + "\n".join(f"{r.split(',', 3)[0]},{r.split(',')[1]},1,{job_type},{r.split(',')[3]}" for r in rows)
        + "\n"
    )
    res = {}
    for policy in os.environ.get("CHECK_LIVE_POLICIES", "fifo,hadar").split(","):
        base = {
            "policy": policy,
            "cluster": str(live / "cluster.yaml"),
            "trace": str(live / "trace.csv"),
            "profiles": str(live / "profiles.csv"),
            "restart_delay": 2,
            "round_length": 10,
        }
        (live / f"sim-{policy}.yaml").write_text(yaml.safe_dump(base))
        (live / f"live-{policy}.yaml").write_text(
            yaml.safe_dump(
                {
                    **base,
                    "executor": {
                        "kind": "local",
                        "program": "torch --width 1024 --batch 512",
                        "time_scale": 1.0,
                        "checkpoint_every": 2.0,
                        "report_timeout": 120,
                    },
                }
            )
        )
        out = live / f"run-{policy}"
        run = sh(
            [*GW, "cluster", "run", str(live / f"live-{policy}.yaml"), "--executor", "local", "--out", str(out)],
            timeout=400,
        )
        entry = {
            "run": {k: run[k] for k in ("rc", "wall_s")},
            "run_out": run["out"][-3000:],
            "run_err": run["err"][-2000:],
        }
        for name in ("live.csv", "jobs.csv", "summary.json"):
            if (out / name).exists():
                entry[name] = (out / name).read_text()[:6000]
        # The same config simulated with the rates the live run measured (its measured_profiles.csv; the first
        # guess where it wrote none) and its median launch latency charged at every start, then compared job by
        # job: what differs is then the runtime's own (polling, redone steps, the spread of launch latencies).
        if (out / "summary.json").exists():
            replay = dict(base)
            if (out / "measured_profiles.csv").exists():
                replay["profiles"] = str(out / "measured_profiles.csv")
            latency = json.loads((out / "summary.json").read_text())["runtime"].get("launch_latency_p50_s")
            if latency:  # wall seconds; the check runs at time scale 1
                replay["start_delay"] = replay["restart_delay"] = round(float(latency), 3)
            (live / f"sim-{policy}.yaml").write_text(yaml.safe_dump(replay))
        sim_out = live / f"sim-{policy}-out"
        sim = sh([*GW, "cluster", "simulate", str(live / f"sim-{policy}.yaml"), "--out", str(sim_out)], timeout=120)
        entry["sim_rc"] = sim["rc"]
        entry["sim_err"] = sim["err"][-800:]
        entry["compare"] = sh([*GW, "cluster", "compare", str(sim_out), str(out)])["out"][-3000:]
        res[policy] = entry
    return res


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--only", default="nvml,shim,bench,torch,live")
    args = parser.parse_args()
    out = Path(args.out)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "gpuweave-real-gpu"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    steps = args.only.split(",")
    report: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S")}
    built: dict = {}
    model = "H100-80GB"

    def run(name, fn, *a):
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            report[name] = fn(*a)
        except Exception:
            report[name] = {"exception": traceback.format_exc()[-3000:]}
        report[name + "_s"] = round(time.perf_counter() - t0, 1)
        (out / "report.json").write_text(json.dumps(report, indent=1, default=str))

    if "nvml" in steps:
        run("nvml", step_nvml, work)
        model = report["nvml"].get("model_for_live", model) if isinstance(report["nvml"], dict) else model
    if {"shim", "bench", "torch"} & set(steps):
        run("build", build, work)
        built = report["build"] if "shim" in report["build"] else {}
    if "shim" in steps and built:
        run("shim", step_shim, work, built)
    if "bench" in steps and built:
        run("bench", step_bench, work, built)
    if "torch" in steps and built:
        run("torch", step_torch, work, built)
    if "live" in steps:
        run("live", step_live, work, model)
    print(json.dumps(report, indent=1, default=str)[-8000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
