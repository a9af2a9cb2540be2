#!/usr/bin/python3
"""Checks `darray-info --json` output of a job (one JSON object per process, process order).

Every process must report: the expected launcher (Slurm by default); MPI rank == the launcher's rank (and, under
Slurm, == SLURM_PROCID); MPI node-local rank (MPI_Comm_split_type SHARED) == the launcher's local rank (and, under
Slurm, == SLURM_LOCALID); the expected process and device counts; dense process-major device ids. With --nodes N,
the processes must sit in blocks of processes/N per node (process p on node p // ppn, one hostname per node, all
different), with local rank p % ppn and local process count ppn; under Slurm, whose distribution may be uneven, the
node of a process is its SLURM_NODEID instead, and the processes of each node must have one hostname (different from
the other nodes') and the MPI local ranks 0, 1, ... in process order, as many as the node has processes. With
--distinct-gpus, every process must also have been bound to its own single GPU (CUDA_VISIBLE_DEVICES set by srun
--gpus-per-task=1), different from the other processes of its node. With --node-gpus K, every process must see
K GPUs (CUDA_VISIBLE_DEVICES lists K, as with --gpus-per-node=K and no per-task binding).

usage: check_darray_info.py --processes N --host-devices D [--nodes K] [--launcher slurm|openmpi]
                            [--distinct-gpus | --node-gpus K] FILE
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, required=True)
    ap.add_argument("--host-devices", type=int, required=True)
    ap.add_argument("--distinct-gpus", action="store_true")
    ap.add_argument("--nodes", type=int, default=0)
    ap.add_argument("--node-gpus", type=int, default=0)
    ap.add_argument("--launcher", default="slurm")
    ap.add_argument("file")
    args = ap.parse_args()

    with open(args.file, encoding="utf-8") as f:
        # Job output files also hold the template's own log lines (scontrol show job): only JSON lines count.
        lines = [ln for ln in f.read().splitlines() if ln.startswith("{")]
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f"{what}: got {got!r}, expected {want!r}")

    expect("number of JSON lines (processes reporting)", len(lines), args.processes)
    total = args.processes * args.host_devices
    gpus = []
    ppn = args.processes // args.nodes if args.nodes else 0
    if args.nodes and args.launcher != "slurm" and ppn * args.nodes != args.processes:
        errors.append(f"--processes {args.processes} is not a multiple of --nodes {args.nodes}")
    members = {}  # node -> [(process, hostname, local_rank, local_process_count, CUDA_VISIBLE_DEVICES)]
    for p, line in enumerate(lines):
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"line {p} is not JSON ({e}): {line}")
            continue
        tag = f"process {p}"
        expect(f"{tag}: process (order)", r["process"], p)
        expect(f"{tag}: process_count", r["process_count"], args.processes)
        expect(f"{tag}: launcher", r["launcher"], args.launcher)
        expect(f"{tag}: launcher_rank", r["launcher_rank"], p)
        expect(f"{tag}: launcher_size", r["launcher_size"], args.processes)
        if args.launcher == "slurm":
            expect(f"{tag}: SLURM_PROCID", r["slurm_procid"], str(p))
            if r["slurm_localid"] is None:
                errors.append(f"{tag}: SLURM_LOCALID not set")
            else:
                expect(f"{tag}: MPI local rank vs SLURM_LOCALID", str(r["local_rank"]), r["slurm_localid"])
        expect(f"{tag}: launcher_local_rank vs MPI local rank", r["launcher_local_rank"], r["local_rank"])
        if args.nodes:
            node = p // ppn if args.launcher != "slurm" else int(r.get("slurm_nodeid") or -1)
            members.setdefault(node, []).append((p, r["hostname"], r["local_rank"], r["local_process_count"],
                                                 r["cuda_visible_devices"]))
        expect(f"{tag}: backend", r["backend"], "mpi")
        expect(f"{tag}: global_device_count", r["global_device_count"], total)
        ids = [d["id"] for d in r["local_devices"]]
        want = list(range(p * args.host_devices, (p + 1) * args.host_devices))
        expect(f"{tag}: local device ids", ids, want)
        gpus.append(r["cuda_visible_devices"])
        print(f"process {p}: host {r['hostname']} local rank {r['local_rank']}/{r['local_process_count']} "
              + (f"SLURM_PROCID={r['slurm_procid']} SLURM_NODEID={r.get('slurm_nodeid')} "
                 f"SLURM_LOCALID={r['slurm_localid']} " if args.launcher == "slurm" else "")
              + f"MPI local rank {r['local_rank']} launcher {r['launcher']} devices {ids}"
              + (f" CUDA_VISIBLE_DEVICES={r['cuda_visible_devices']}" if args.distinct_gpus or args.node_gpus else ""))
    hostnames = []
    if args.nodes:
        expect("nodes (SLURM_NODEID values)" if args.launcher == "slurm" else "nodes", sorted(members),
               list(range(args.nodes)))
        for node, ms in sorted(members.items()):
            names = sorted({m[1] for m in ms})
            hostnames += names
            if len(names) != 1:
                errors.append(f"node {node}: its processes report several hostnames {names}")
            expect(f"node {node} ({names}): MPI local ranks in process order", [m[2] for m in ms], list(range(len(ms))))
            expect(f"node {node} ({names}): MPI local process counts", [m[3] for m in ms], [len(ms)] * len(ms))
            print(f"node {node}: {names[0] if names else '?'}, processes {[m[0] for m in ms]}")
        if len(set(hostnames)) != len(hostnames):
            errors.append(f"two nodes report the same hostname: {hostnames}")
    if args.distinct_gpus:
        # The test cluster binds without cgroups, so Slurm hands each task the global index of its GPU: expect
        # one index per process, all different.
        # On several nodes the indices restart on each node: distinct within a node.
        groups = [[m[4] for m in ms] for ms in members.values()] if args.nodes else [gpus]
        if any(g is None or "," in g for g in gpus) or any(len(set(g)) != len(g) for g in groups):
            errors.append(f"every process should see exactly one GPU of its own; CUDA_VISIBLE_DEVICES per process: {gpus}")
    if args.node_gpus:
        if any(g is None or len(g.split(",")) != args.node_gpus for g in gpus):
            errors.append(f"every process should see its node's {args.node_gpus} GPUs; CUDA_VISIBLE_DEVICES per process: "
                          f"{gpus}")

    for e in errors:
        print("ERROR:", e)
    if errors:
        return 1
    where = f" on {args.nodes} nodes ({', '.join(hostnames)})" if args.nodes else ""
    print(f"OK: {args.processes} processes{where}, {total} devices, {args.launcher} and MPI agree on ranks and local ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
