#!/usr/bin/env python3
"""layergate_ops through the Python gate, one process per rank, against
torch.distributed.all_reduce, bit for bit.

    python3 kernels/torch/test_torch_allreduce.py --ranks N [--backend gloo|nccl]
        [--quick] [--timeout S] [--kernel-timeout-ms MS] [--build-dir DIR] [--bench]

Spawns N processes (torch.multiprocessing, spawn). Rank r uses GPU r % GPUs,
so ranks share a GPU when N exceeds the GPU count; they then exchange CUDA
IPC handles like ranks on different GPUs (a process cannot open its own
handle, but another process on the same device can), and the gate limits
each rank's blocks to SMs / ranks-per-GPU. The reference is dist.all_reduce:
on NCCL (a second process group) when every rank has its own GPU
(--backend nccl; the default then), else on gloo over CPU copies, since
NCCL refuses two ranks on one GPU. Every output is also compared with the
exact integer sum computed on the host side of each rank.

Cases: full_nvlink True and False (the PCIe branch: push kernels only),
fp32/fp16/bf16, sizes 16 B .. 64 MB, modes
  eager    out of place, input unregistered (copied into the registered buffer)
  inplace  the same with out = inp
  graph    captured in a CUDA graph inside gate.capture() (input read in
           place, peers' addresses bound after capture by
           register_graph_buffers: one buffer for a pull kernel, none for a
           push kernel, checked), replayed twice.
Inputs are integers in [-8, 8], so every sum is exact in every dtype and
any order. One line per case, then "N passed, M failed". Waits are bounded:
the kernels' own deadline (--kernel-timeout-ms), the process group timeout,
and a watchdog over the whole run (--timeout): on expiry every rank is
killed and the exit status is 3. Exit 0 only if every case passed; prints
"SKIP: ..." and exits 0 without torch or a CUDA device.
"""

import argparse
import os
import queue as queue_mod
import socket
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)

FULL_SIZES = [16, 48, 208, 4112, 8192, 43024, 262144, 1048576, 1048592, 4194304, 64 << 20]
QUICK_SIZES = [16, 208, 8192, 43024, 262144, 1048592, 4194304]
SENTINEL = 0x7B  # 0x7B7B... is no possible sum in any dtype


def gen_input(torch, rank, numel, dtype, device):
    i = torch.arange(numel, device=device, dtype=torch.int64)
    v = (i * 2654435761 + (rank + 1) * 40503) % 17 - 8
    return v


def bits(torch, t):
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def worker(rank, world, port, opts, build_dir, q):
    import datetime

    import torch
    import torch.distributed as dist

    sys.path.insert(0, build_dir)
    sys.path.insert(0, os.path.join(KERNELS, "python"))
    import layergate_ops  # noqa: F401  (the gate imports it)
    import custom_all_reduce as gate_mod

    ngpu = torch.cuda.device_count()
    torch.cuda.set_device(rank % ngpu)
    device = torch.device("cuda", rank % ngpu)
    dist.init_process_group(
        "gloo",
        init_method="tcp://127.0.0.1:%d" % port,
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=max(30, opts.timeout // 2)),
    )
    cpu_group = dist.group.WORLD
    nccl_group = dist.new_group(backend="nccl") if opts.backend == "nccl" else None
    sizes = QUICK_SIZES if opts.quick else FULL_SIZES
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    dname = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
    gloo_native = {}  # dtype -> whether gloo reduces it natively
    passed = failed = 0

    def reference(inp):
        if nccl_group is not None:
            ref = inp.clone()
            dist.all_reduce(ref, group=nccl_group)
            return ref, "nccl"
        dt = inp.dtype
        if gloo_native.get(dt, True):
            try:
                ref = inp.cpu()
                dist.all_reduce(ref, group=cpu_group)
                gloo_native[dt] = True
                return ref.to(device), "gloo"
            except RuntimeError:
                gloo_native[dt] = False
        ref = inp.float().cpu()
        dist.all_reduce(ref, group=cpu_group)
        return ref.to(dt).to(device), "gloo-fp32"

    def make_gate(full_nvlink):
        g = gate_mod.CustomAllreduce(
            cpu_group, device, full_nvlink, max_size=max(sizes), timeout_ms=opts.kernel_timeout_ms
        )
        if g.disabled:
            raise RuntimeError("the gate disabled itself at world size %d" % world)
        return g

    for full_nvlink in (True, False):
        ca = make_gate(full_nvlink)
        keep = []  # graph inputs stay alive while the gate holds their registration
        for dtype in dtypes:
            for nbytes in sizes:
                es = torch.tensor([], dtype=dtype).element_size()
                numel = nbytes // es
                for mode in ("eager", "inplace", "graph"):
                    detail, algo, ok = "", "", False
                    t_case = time.time()
                    try:
                        if mode == "graph" and not ca.should_custom_ar(torch.empty(numel, dtype=dtype, device=device)):
                            raise RuntimeError("gate does not admit this case")
                        inp = gen_input(torch, rank, numel, dtype, device).to(dtype)
                        want = sum(gen_input(torch, r, numel, dtype, device) for r in range(world)).to(dtype)
                        out = torch.empty_like(inp)
                        out.view(torch.uint8).fill_(SENTINEL)
                        if mode == "eager":
                            if not ca.should_custom_ar(inp):
                                raise RuntimeError("gate does not admit this case")
                            ca.all_reduce(inp, out, registered=False)
                            algo = ca.last_algo()
                        elif mode == "inplace":
                            # out is inp: the reference reduces a copy.
                            if not ca.should_custom_ar(inp):
                                raise RuntimeError("gate does not admit this case")
                            out = inp
                            inp = inp.clone()
                            ca.all_reduce(out, out, registered=False)
                            algo = ca.last_algo()
                        else:
                            keep.append(inp)
                            graph = torch.cuda.CUDAGraph()
                            side = torch.cuda.Stream()
                            side.wait_stream(torch.cuda.current_stream())
                            torch.cuda.synchronize()
                            with ca.capture():
                                with torch.cuda.graph(graph, stream=side):
                                    ca.all_reduce(inp, out)
                            algo = ca.last_algo()
                            # Pull kernels read the captured input in place:
                            # exactly it must have been bound across ranks.
                            # Push kernels read it locally and bind nothing.
                            want_bound = 1 if "pull" in algo else 0
                            if ca.last_graph_buffers != want_bound:
                                raise RuntimeError("%s captured: %d graph buffers bound, expected %d" % (
                                    algo, ca.last_graph_buffers, want_bound))
                            graph.replay()
                            graph.replay()
                        torch.cuda.synchronize()
                        err = ca.device_error()
                        ref, how = reference(inp)
                        torch.cuda.synchronize()
                        same_ref = torch.equal(bits(torch, out), bits(torch, ref))
                        same_sum = torch.equal(bits(torch, out), bits(torch, want))
                        never = int((out.view(torch.uint8) == SENTINEL).sum().item())
                        ok = err == 0 and same_ref and same_sum
                        if not ok:
                            bad = (bits(torch, out) != bits(torch, want)).nonzero()
                            detail = "device_error=%d vs_%s=%s vs_sum=%s wrong=%d sentinel_bytes=%d first_bad=%s" % (
                                err, how, same_ref, same_sum, bad.numel(), never,
                                bad[0].item() if bad.numel() else "-")
                        else:
                            detail = "ref=%s" % how
                        if mode == "graph":
                            del graph
                    except Exception as e:  # reported as a failed case; the run goes on
                        detail = "error=%r" % (str(e).splitlines()[0] if str(e) else type(e).__name__)
                        ok = False
                    secs = time.time() - t_case
                    results = [None] * world
                    dist.all_gather_object(results, (ok, detail, algo), group=cpu_group)
                    all_ok = all(r[0] for r in results)
                    if all_ok:
                        passed += 1
                    else:
                        failed += 1
                    if rank == 0:
                        bad_ranks = [i for i, r in enumerate(results) if not r[0]]
                        line = "%s ranks=%d backend=%s nvlink=%d dtype=%s bytes=%d mode=%s kernel=%s t=%.2fs %s" % (
                            "PASS" if all_ok else "FAIL", world, opts.backend, int(full_nvlink), dname[dtype],
                            nbytes, mode, algo or "-", secs, results[0][1] if all_ok else
                            " ".join("rank%d:[%s]" % (i, results[i][1]) for i in bad_ranks))
                        q.put(("line", line))
                    if not all_ok:
                        # A failed call may leave epochs out of step: start a new group.
                        torch.cuda.synchronize()
                        dist.barrier(group=cpu_group)
                        ca.close()
                        keep.clear()
                        dist.barrier(group=cpu_group)
                        ca = make_gate(full_nvlink)
        torch.cuda.synchronize()
        dist.barrier(group=cpu_group)
        ca.close()
        keep.clear()
    if opts.bench:
        bench(torch, dist, rank, world, device, cpu_group, gate_mod, opts, q)
    if rank == 0:
        q.put(("summary", passed, failed))
    dist.barrier(group=cpu_group)
    dist.destroy_process_group()


def bench(torch, dist, rank, world, device, cpu_group, gate_mod, opts, q):
    """Eager bf16 calls (input copied into the registered buffer), back to
    back on each rank's stream: microseconds per call from CUDA events, the
    slowest rank's. Ranks in different processes on one GPU are time-sliced
    unless MPS runs, so this shows what sharing costs."""
    ca = gate_mod.CustomAllreduce(cpu_group, device, True, max_size=4 << 20, timeout_ms=opts.kernel_timeout_ms)
    for nbytes in (8192, 262144, 1 << 20, 4 << 20):
        inp = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=device)
        out = torch.empty_like(inp)
        for _ in range(20):
            ca.all_reduce(inp, out, registered=False)
        torch.cuda.synchronize()
        dist.barrier(group=cpu_group)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        iters = 200
        start.record()
        for _ in range(iters):
            ca.all_reduce(inp, out, registered=False)
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) * 1000.0 / iters
        ok = ca.device_error() == 0 and bool((out == world).all().item())
        res = [None] * world
        dist.all_gather_object(res, (us, ok), group=cpu_group)
        if rank == 0:
            q.put(("line", "BENCH ranks=%d bf16 bytes=%d eager kernel=%s us_per_call=%.1f (slowest rank; fastest %.1f) %s" % (
                world, nbytes, ca.last_algo(), max(r[0] for r in res), min(r[0] for r in res),
                "ok" if all(r[1] for r in res) else "WRONG-RESULT")))
    torch.cuda.synchronize()
    dist.barrier(group=cpu_group)
    ca.close()


def worker_main(rank, world, port, opts, build_dir, q):
    try:
        worker(rank, world, port, opts, build_dir, q)
    except Exception:
        q.put(("crash", rank, traceback.format_exc()))
        sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    ap = argparse.ArgumentParser(description="layergate_ops against dist.all_reduce, one process per rank")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--backend", choices=["gloo", "nccl"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=int, default=600, help="watchdog over the whole run, seconds")
    ap.add_argument("--kernel-timeout-ms", type=int, default=5000)
    ap.add_argument("--build-dir")
    ap.add_argument("--arch")
    ap.add_argument("--bench", action="store_true", help="also time eager bf16 calls (not a pass/fail case)")
    opts = ap.parse_args()
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("SKIP: no torch")
        return 0
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print("SKIP: no CUDA device")
        return 0
    ngpu = torch.cuda.device_count()
    if opts.backend is None:
        opts.backend = "nccl" if opts.ranks <= ngpu else "gloo"
    if opts.backend == "nccl" and opts.ranks > ngpu:
        print("error: --backend nccl needs one GPU per rank (%d ranks, %d GPUs)" % (opts.ranks, ngpu))
        return 2
    sys.path.insert(0, HERE)
    from build import load_ops

    t0 = time.time()
    _, build_dir = load_ops(opts.build_dir, opts.arch)
    print("# layergate_ops built/loaded in %.1f s from %s" % (time.time() - t0, os.path.abspath(build_dir)))
    per_gpu = -(-opts.ranks // ngpu)
    print("# %d ranks on %d GPU(s) (%d per GPU), reference dist.all_reduce on %s" % (
        opts.ranks, ngpu, per_gpu, opts.backend))
    sys.stdout.flush()

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker_main, args=(r, opts.ranks, port, opts, build_dir, q)) for r in range(opts.ranks)]
    for p in procs:
        p.start()
    deadline = time.time() + opts.timeout
    summary, crashed, hung = None, False, False
    while True:
        try:
            msg = q.get(timeout=1.0)
        except queue_mod.Empty:
            if time.time() > deadline:
                hung = True
                break
            if all(not p.is_alive() for p in procs):
                try:  # drain what is left
                    while True:
                        msg = q.get(timeout=0.5)
                        if msg[0] == "line":
                            print(msg[1])
                        elif msg[0] == "summary":
                            summary = msg[1:]
                        elif msg[0] == "crash":
                            crashed = True
                            print("CRASH rank %d:\n%s" % (msg[1], msg[2]))
                except queue_mod.Empty:
                    pass
                break
            continue
        if msg[0] == "line":
            print(msg[1])
            sys.stdout.flush()
        elif msg[0] == "summary":
            summary = msg[1:]
        elif msg[0] == "crash":
            crashed = True
            print("CRASH rank %d:\n%s" % (msg[1], msg[2]))
    for p in procs:
        p.join(timeout=max(1.0, min(30.0, deadline - time.time())))
    alive = [i for i, p in enumerate(procs) if p.is_alive()]
    if alive:
        hung = True
        for p in procs:
            if p.is_alive():
                p.kill()
    if hung:
        print("TIMEOUT: ranks %s still running after %d s; killed" % (alive or "?", opts.timeout))
    if summary is None:
        print("0 passed, 1 failed (no summary: %s)" % ("timeout" if hung else "a rank crashed"))
        return 3 if hung else 1
    print("%d passed, %d failed (%.1f s)" % (summary[0], summary[1], time.time() - t0))
    codes = [p.exitcode for p in procs]
    if hung:
        return 3
    return 0 if summary[1] == 0 and not crashed and all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
