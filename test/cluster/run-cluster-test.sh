#!/bin/bash
# The ctest driver of the netns test cluster (netns-cluster.sh): starts a cluster of two namespace "nodes" (plus the
# head namespace that runs mpirun), runs one scenario on it, and always tears it down (trap), also when a check fails.
#
#   run-cluster-test.sh layouts  --info darray-info --probe cluster_probe
#       darray-info at the tutorials' layouts (nodes x processes per node x devices per process): 2x2x2, 2x4x1 and
#       1x4x1, text and --json; every process's host, node-local rank and count checked (test/slurm/
#       check_darray_info.py --nodes); the GPU each process would drive by local rank (cluster_probe local).
#   run-cluster-test.sh exchange --allreduce allreduce --probe cluster_probe
#       the all-reduce example at 2x2x2 and 2x4x1 (y=[8.] everywhere); a reshard chain and a pencil FFT at 2x2x2,
#       bit-exact against the same program with all 4 processes on one node; the veth byte counters must show the
#       data crossing between the nodes (and not for the one-node run).
#   run-cluster-test.sh node-loss --probe cluster_probe
#       2x2x1 in a reshard loop; every process of node dacl-n1 (its orted and ranks) is killed, as a crashed node:
#       the launch must end non-zero within 60 s and the output must name the lost node and the processes it ran.
#   run-cluster-test.sh link-loss --probe cluster_probe
#       the same, but dacl-n1's link goes down instead (its processes live on, unreachable): the survivors' error
#       names the processes they waited for (DARRAY_TIMEOUT_S) and mpirun ends the launch (TCP keepalive).
# Skips (exit 77, reason printed) only when not root or when network namespaces cannot be created.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/netns-cluster.sh
checker=$here/../slurm/check_darray_info.py
python=/usr/bin/python3
scenario=${1:-}
shift || true
info='' allreduce='' probe=''
while [ $# -gt 0 ]; do
  case "$1" in
    --info) info=$2; shift 2 ;;
    --allreduce) allreduce=$2; shift 2 ;;
    --probe) probe=$2; shift 2 ;;
    *) echo "run-cluster-test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

say() { echo "[cluster-test $(date +%T)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

bash "$cluster" check-root || exit $?
state=$(mktemp -u /tmp/dacl-state.XXXXXX)
out=$(mktemp -d /tmp/dacl-out.XXXXXX)
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  bash "$cluster" stop --state "$state" || rc=1
  if ip netns list | grep -q "^dacl-$(cat "$state/tag" 2>/dev/null)-"; then echo "FAIL: namespaces left behind"; rc=1; fi
  rm -rf "$state" "$out"
  say "exit $rc"
  exit $rc
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# Nothing of an enclosing launch may leak in; the layout is chosen per run.
unset DARRAY_HOST_DEVICE_COUNT DARRAY_LOCAL_DEVICE_IDS CUDA_VISIBLE_DEVICES
for v in $(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|OMPI_COMM_WORLD)'); do unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

bash "$cluster" start --state "$state" --nodes 2 || fail "the cluster did not start"

# mpi NODES PPN DEVICES PROGRAM ARGS...: a launch onto the first NODES nodes, PPN processes each (block mapping).
# The rsh agent gives the remote side a fresh environment, as ssh would: what the program needs goes with -x.
mpi() {
  local nodes=$1 ppn=$2 devices=$3
  shift 3
  timeout -k 5 90 bash "$cluster" mpirun --state "$state" --nodes "$nodes" --oversubscribe \
    -n $((nodes * ppn)) --map-by "ppr:$ppn:node" -x OMPI_MCA_mpi_yield_when_idle \
    -x OMPI_MCA_btl_vader_single_copy_mechanism -x "DARRAY_HOST_DEVICE_COUNT=$devices" \
    -x DARRAY_SHUTDOWN_TIMEOUT_S -x DARRAY_TIMEOUT_S "$@"
}
# A process whose peers do not answer gives up after DARRAY_TIMEOUT_S (10 s here; off by default) naming them.
export DARRAY_SHUTDOWN_TIMEOUT_S=${DARRAY_SHUTDOWN_TIMEOUT_S:-30} DARRAY_TIMEOUT_S=${DARRAY_TIMEOUT_S:-10}

bytes() {  # total bytes sent by the nodes' links
  bash "$cluster" counters --state "$state" | awk '{s += $6} END {print s}'
}

layouts() {
  local layout nodes ppn devices np g
  for layout in 2x2x2 2x4x1 1x4x1; do
    IFS=x read -r nodes ppn devices <<<"$layout"
    np=$((nodes * ppn))
    say "layout $layout: $nodes node(s) x $ppn processes x $devices device(s): darray-info"
    mpi "$nodes" "$ppn" "$devices" "$info" || fail "darray-info at $layout exited with status $?"
    mpi "$nodes" "$ppn" "$devices" "$info" --json >"$out/$layout.json" || fail "darray-info --json at $layout: status $?"
    "$python" "$checker" --launcher openmpi --nodes "$nodes" --processes $np --host-devices "$devices" \
      "$out/$layout.json" || fail "layout $layout: wrong darray-info report"
    for g in 2 4; do
      mpi "$nodes" "$ppn" "$devices" "$probe" local --gpus $g >"$out/$layout.gpu$g" || fail "cluster_probe local: $?"
      "$python" - "$out/$layout.gpu$g" "$ppn" "$g" <<'EOF' || fail "layout $layout: wrong GPU choice by local rank"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ppn, gpus = int(sys.argv[2]), int(sys.argv[3])
ok = True
for r in lines:
    want = (r["process"] % ppn) % gpus
    good = r["local_rank"] == r["process"] % ppn == r["launcher_local_rank"] and r["gpu_ordinal"] == want
    ok &= good
    print(f"  process {r['process']} on {r['hostname']}: local rank {r['local_rank']}/{r['local_process_count']}"
          f" -> GPU {r['gpu_ordinal']} of {gpus}" + ("" if good else f"  WRONG (expected GPU {want})"))
sys.exit(0 if ok and lines else 1)
EOF
    done
  done
}

exchange() {
  local layout nodes ppn devices before after one two
  for layout in 2x2x2 2x4x1; do
    IFS=x read -r nodes ppn devices <<<"$layout"
    say "layout $layout: allreduce --show-devices"
    mpi "$nodes" "$ppn" "$devices" "$allreduce" --show-devices | tee "$out/allreduce.$layout" ||
      fail "allreduce at $layout exited with status $?"
    [ "$(grep -c '^Process [0-9]* has y=\[8\.\]$' "$out/allreduce.$layout")" = $((nodes * ppn)) ] ||
      fail "allreduce at $layout: not every process has y=[8.]"
  done
  for what in reshard fft; do
    # Shared memory only (no TCP transport at all) on one node: the processes of a node use it, not the network.
    say "$what: 1 node x 4 processes x 2 devices, transports self,vader (shared memory only)"
    before=$(bytes)
    NETNS_CLUSTER_BTL=self,vader mpi 1 4 2 "$probe" $what | tee "$out/$what.one" || fail "cluster_probe $what on one node: status $?"
    after=$(bytes)
    one=$((after - before))
    say "$what: 2 nodes x 2 processes x 2 devices"
    before=$(bytes)
    mpi 2 2 2 "$probe" $what | tee "$out/$what.two" || fail "cluster_probe $what on two nodes: status $?"
    after=$(bytes)
    two=$((after - before))
    bash "$cluster" counters --state "$state"
    say "$what: bytes sent over the nodes' links: $one (one node: launch and wire-up only), $two (two nodes)"
    [ "$(grep hash "$out/$what.one")" = "$(grep hash "$out/$what.two")" ] ||
      fail "$what: the two-node result differs from the one-node result"
    grep -q ' ok$' "$out/$what.two" || fail "$what: wrong result"
    say "$what: bit-exact: $(grep hash "$out/$what.two")"
    # The gathered array alone is 69 KB (reshard) / 30 KB (fft) per process on the other node.
    [ "$two" -gt $((one + 100000)) ] || fail "$what: only $two bytes crossed the links (one node: $one)"
  done
}

node_loss() {  # node_loss kill|link
  local how=$1 pid rc start elapsed elapsed_ms victims ns
  ns=dacl-$(cat "$state/tag")-n1
  say "2 nodes x 2 processes x 1 device: reshard loop; then node dacl-n1 is lost ($how)"
  # mpirun gives up on a connection whose sent data goes unacknowledged after net.ipv4.tcp_retries2 retransmissions
  # (a sysctl of the head's own network namespace): 15 by default, about 15 minutes; 4 here, about 6 s (200 ms
  # doubling). Only that bounds the launch when data is queued to the lost daemon before keepalive notices the cut
  # (see below): measured with keepalive left at 300 s, the survivors' MPI_Abort came first and the launch ended 19.4
  # s after the cut with 4, and never (killed at 90 s) with 15, as in a CI run of the shipped settings.
  bash "$cluster" exec --state "$state" head sysctl -qw net.ipv4.tcp_retries2=4 ||
    fail "cannot set net.ipv4.tcp_retries2 in the head namespace"
  DARRAY_TIMEOUT_S=2 OMPI_MCA_oob_tcp_keepalive_time=3 OMPI_MCA_oob_tcp_keepalive_intvl=1 OMPI_MCA_oob_tcp_keepalive_probes=4 \
    mpi 2 2 1 "$probe" loop --steps 1000000 >"$out/loss" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do grep -q "loop: resharding" "$out/loss" && break; sleep 0.1; done
  grep -q "loop: resharding" "$out/loss" || { cat "$out/loss"; fail "the loop did not start"; }
  start=$(date +%s%N)
  if [ "$how" = kill ]; then
    # A crashed node: its orted and ranks die at once (the holder of its namespaces stays).
    victims=$(ip netns pids "$ns" | grep -vx "$(cat "$state/n1.pid")" | tr '\n' ' ')
    say "killing every process of dacl-n1:$(for p in $victims; do echo -n " $p $(cat /proc/$p/comm 2>/dev/null)"; done)"
    # shellcheck disable=SC2086
    kill -KILL $victims
  else
    # A cut cable: the processes live on, but nothing reaches them any more, and no connection is closed. Open MPI
    # 4.1's daemons have no heartbeat: mpirun notices only through TCP keepalive on its connections to the daemons
    # (oob_tcp_keepalive_*, default: first probe after 300 s idle), here 3 s idle + 4 probes 1 s apart: about 8
    # s after the cut (measured). The survivors stop waiting after DARRAY_TIMEOUT_S=2 s and name the processes they
    # waited for. mpirun should notice before any process calls MPI_Abort (darray::run does 10 s after the error, so
    # 12 s after the cut): an abort in progress queues data to the lost daemon, its keepalive never fires, and
    # mpirun 4.1.4 waits for the retransmissions to give up (tcp_retries2 above; forever within this test's limit at
    # the default 15). A CI run saw the abort come first (the launch killed at 90 s); the cause of the late keepalive
    # there is not known, so the test must pass either way.
    say "dacl-n1: ip link set eth0 down"
    ip -n "$ns" link set eth0 down
  fi
  wait $pid
  rc=$?
  elapsed_ms=$((($(date +%s%N) - start) / 1000000))
  elapsed=$(printf '%d.%03d' $((elapsed_ms / 1000)) $((elapsed_ms % 1000)))
  echo "--- launch output (last 25 lines) ---"
  tail -n 25 "$out/loss"
  say "the launch ended with status $rc, ${elapsed} s after the node was lost"
  [ $rc != 0 ] || fail "the launch reported success although a node was lost"
  [ $rc != 124 ] && [ $rc != 137 ] || fail "the launch did not end by itself (timeout)"
  [ "$elapsed_ms" -lt 60000 ] || fail "the launch took ${elapsed} s to end (limit 60 s)"
  grep -q "finished the loop without noticing" "$out/loss" && fail "a survivor finished its loop"
  grep -q "^loop: process 2 on dacl-n1$" "$out/loss" && grep -q "^loop: process 3 on dacl-n1$" "$out/loss" ||
    fail "the output does not say that processes 2 and 3 ran on dacl-n1"
  if [ "$how" = kill ]; then
    # Open MPI names the node whose daemon it lost; the lines above name the processes that ran there.
    grep -qE "Remote daemon: .* on node dacl-n1" "$out/loss" || fail "the output does not name the lost node dacl-n1"
  else
    # The library's deadline names the processes a survivor waited for in vain.
    grep -qE "waiting for process(es)? [23](, [23])?;" "$out/loss" ||
      fail "no DARRAY_TIMEOUT_S message names process 2 or 3"
  fi
  say "PASS: lost node named, launch ended with status $rc in ${elapsed} s"
}

case $scenario in
  layouts) [ -x "$info" ] && [ -x "$probe" ] || fail "layouts needs --info and --probe"; layouts ;;
  exchange) [ -x "$allreduce" ] && [ -x "$probe" ] || fail "exchange needs --allreduce and --probe"; exchange ;;
  node-loss | link-loss) [ -x "$probe" ] || fail "$scenario needs --probe"
    [ $scenario = node-loss ] && node_loss kill || node_loss link ;;
  *) fail "unknown scenario '$scenario' (layouts, exchange, node-loss)" ;;
esac
say "PASS ($scenario)"
