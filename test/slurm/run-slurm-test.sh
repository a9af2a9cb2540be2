#!/bin/bash
# Starts a real, private, single-node Slurm cluster on this machine (munged + slurmctld + slurmd, all in a temporary
# directory, on free ports, with their own munge key and socket, so nothing of the host's Slurm or munge is touched),
# launches darray-info through it and checks what the processes report:
#   1. srun --mpi=pmix -n 4 darray-info --json: 4 MPI processes started by srun (PMIx wire-up, no mpirun); each must
#      detect Slurm as its launcher, and MPI's rank / node-local rank must equal SLURM_PROCID / SLURM_LOCALID.
#   2. sbatch --wait of the templates that fit one node (scripts/slurm/cpu-host-devices.sbatch and
#      gpu-1node-1proc-per-gpu.sbatch; the node advertises 4 GPUs as GRES backed by /dev/null, so Slurm's GPU
#      binding runs for real even without GPUs) and the same checks on the job output.
# The daemons are always stopped at exit (trap), and the exit fails if any process of this cluster survives.
# Needs root (slurmd starts job steps as the submitting user). A daemon that does not come up is a FAILURE with
# its log printed, never a skip.
#
# With --netns-cluster <test/cluster/netns-cluster.sh>, the cluster has two nodes instead: a netns test cluster is
# started (network + UTS + mount namespaces joined by a bridge, hostnames dacl-n0 and dacl-n1), slurmctld and every
# client command (srun, sbatch, sinfo, ...) run in its head namespace, and one slurmd runs in each node namespace,
# with its own hostname, spool directory, pid and log file. Then:
#   1. srun -N 2 -n 4 --mpi=pmix darray-info --json: the tasks in blocks of 2 per node; SLURM_NODEID and
#      SLURM_LOCALID must agree with the node and node-local rank MPI and libdarray detect;
#   2. sbatch --wait of the two-node templates (gpu-2node-1proc-per-gpu.sbatch, gpu-2node-multi-gpu-per-node.sbatch)
#      with 4 GRES GPUs per node (backed by /dev/null), the same checks, plus each template's GPU binding.
# The namespaces go with the daemons at exit. Skipped (77) where network namespaces cannot be created.
#
# usage: run-slurm-test.sh --info <darray-info executable> [--templates <scripts/slurm>] [--netns-cluster <script>]
#                          [--keep]
set -u -o pipefail

info=
templates=
netns=
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --info) info=$2; shift 2 ;;
    --templates) templates=$2; shift 2 ;;
    --netns-cluster) netns=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "run-slurm-test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

say() { echo "[slurm-test $(date +%T)] $*"; }

work=
pids=()          # daemons we started: munged slurmctld slurmd
python=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)

# ctl CMD...: a client command (srun, sbatch, sinfo, ...) where the controller is reachable: in the head namespace of
# the two-node cluster, here otherwise.
ctl() {
  if [ -n "$netns" ]; then bash "$netns" exec --state "$work/cluster" head "$@"; else "$@"; fi
}

dump_logs() {
  [ -n "$work" ] && [ -d "$work/log" ] || return 0
  for f in "$work"/log/*; do
    [ -s "$f" ] || continue
    echo "----- $f (last 60 lines) -----"
    tail -n 60 "$f"
  done
}

fail() {
  echo "FAIL: $*" >&2
  dump_logs
  exit 1
}

# Processes of this cluster that outlived their daemons (slurmstepd, job tasks): found by an open file or an
# environment entry under our private directory, so nothing else on the machine is ever matched.
our_leftovers() {
  local pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
    if ls -l "$d/fd" 2>/dev/null | grep -qF -- "$work/" || { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qF -- "=$work/"; then
      # Our own helpers (this shell's subshells, ls, grep) read the same paths but are gone by now or are us.
      [ -r "$d/cmdline" ] && echo "$pid"
    fi
  done
}

stop_pid() {  # stop_pid <pid> <name>: TERM, wait up to 15 s, then KILL
  local pid=$1 name=$2 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.5
  done
  say "$name (pid $pid) ignored SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

cleanup() {
  local rc=$? i left
  set +e
  trap - EXIT INT TERM
  if [ -n "$work" ] && [ -f "$work/slurm.conf" ] && [ ${#pids[@]} -ge 2 ] && kill -0 "${pids[1]}" 2>/dev/null; then
    # Cancel whatever still runs so slurmstepd and the tasks end before their slurmd does.
    jobs=$(ctl squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
      say "cancelling leftover jobs: $jobs"
      ctl scancel $jobs 2>/dev/null
      for i in $(seq 1 20); do [ -z "$(ctl squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${pids[i]}" "$(cat "/proc/${pids[i]}/comm" 2>/dev/null || echo daemon)"
  done
  # The namespaces, and whatever still runs in them (slurmstepd, tasks), before the leftover scan below.
  if [ -n "$netns" ] && [ -n "$work" ] && [ -d "$work/cluster" ]; then
    bash "$netns" stop --state "$work/cluster" || rc=1
  fi
  # Our own helpers (ls, tr, grep) must not match the leftover scan through an inherited SLURM_CONF=<work>/...
  unset SLURM_CONF
  if [ -n "$work" ] && [ -d "$work" ]; then
    left=$(our_leftovers)
    if [ -n "$left" ]; then
      say "killing leftover processes of this cluster: $left"
      for p in $left; do ps -o pid=,args= -p "$p"; kill -KILL "$p" 2>/dev/null; done
      sleep 1
      left=$(our_leftovers)
      if [ -n "$left" ]; then
        echo "FAIL: processes of the test cluster still running: $left" >&2
        rc=1
      fi
    fi
    if [ $keep = 1 ] || [ $rc != 0 ]; then
      say "kept $work for inspection"
    else
      rm -rf "$work"
    fi
  fi
  say "daemons stopped; exit $rc"
  exit $rc
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------------------------------------------------- checks
[ -n "$info" ] && [ -x "$info" ] || fail "--info must name the darray-info executable (got '$info')"
if [ "$(id -u)" != 0 ]; then
  echo "run-slurm-test.sh: needs root: slurmd must start job steps as the submitting user (running as $(id -un))" >&2
  exit 77   # ctest SKIP_RETURN_CODE: reported as skipped with this message, never as passed
fi
export PATH="$PATH:/usr/sbin:/sbin"
for tool in munged mungekey munge unmunge slurmctld slurmd srun sbatch squeue scancel sinfo scontrol; do
  command -v "$tool" >/dev/null || fail "'$tool' not found: install the Debian packages munge slurmctld slurmd slurm-client"
done
[ -x "$python" ] || fail "$python not found (Debian package python3)"
if [ -n "$netns" ]; then
  bash "$netns" check-root || exit $?
fi
# Nothing inherited from an enclosing Slurm job (ctest run inside an allocation) may leak into our cluster, and the
# device layout is set per run below.
unset DARRAY_HOST_DEVICE_COUNT DARRAY_LOCAL_DEVICE_IDS DARRAY_BACKEND CUDA_VISIBLE_DEVICES
for v in $(compgen -e | grep -E '^(SLURM_|SLURMD_|SBATCH_|SRUN_|SALLOC_|PMIX_|PMI_)'); do unset "$v"; done

# The UNIX sockets live here: keep the path short (108-byte limit), hence /tmp rather than a deep TMPDIR.
work=$(mktemp -d /tmp/darray-slurm.XXXXXX) || fail "mktemp failed"
chmod 755 "$work"   # munged requires every directory above its socket to be searchable by all
mkdir -p "$work/log" "$work/state" "$work/spool" "$work/tmp" "$work/pmix" "$work/jobs" "$work/dev"
mkdir -m 755 "$work/munge"
say "work directory $work"
if [ -n "$netns" ]; then
  # PMIx's per-step directory (mpi.conf below) is node-local on a real cluster: each node gets its own.
  bash "$netns" start --state "$work/cluster" --nodes 2 --node-local "$work/pmix" || fail "the netns cluster did not start"
  # MPI between the nodes over the test subnet only; Open MPI's session directories (named after the host, the
  # same in every such cluster) in our tree.
  export OMPI_MCA_btl_tcp_if_include=10.199.19.0/24 OMPI_MCA_orte_tmpdir_base=$work/tmp
fi

# ---------------------------------------------------------------------------------------------------------- munge
mungekey --create --keyfile="$work/munge/munge.key" 2>"$work/log/mungekey.err" ||
  dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 2>/dev/null || fail "cannot create a munge key"
chmod 400 "$work/munge/munge.key"
munge_socket=$work/munge/munge.socket
munged --foreground --force --socket="$munge_socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" --log-file="$work/log/munged.log" \
  >"$work/log/munged.out" 2>&1 &
pids+=($!)
for i in $(seq 1 40); do [ -S "$munge_socket" ] && break; kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.25; done
munge -S "$munge_socket" -n 2>>"$work/log/munged.out" | unmunge -S "$munge_socket" >"$work/log/unmunge.out" 2>&1 ||
  fail "munged did not start or cannot validate its own credential"
say "munged up (pid ${pids[0]}, socket $munge_socket)"

# ---------------------------------------------------------------------------------------------------------- slurm.conf
read -r ctld_port slurmd_port < <("$python" -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
[ -n "$ctld_port" ] && [ -n "$slurmd_port" ] || fail "could not find two free TCP ports"
node=$(hostname -s)
ctld_host="${node}(127.0.0.1)"
nodes=("$node")
node_lines="NodeName=${node} NodeAddr=127.0.0.1 CPUs=16 Gres=gpu:4 State=UNKNOWN"
if [ -n "$netns" ]; then
  ctld_host="dacl-head(10.199.19.1)"
  nodes=(dacl-n0 dacl-n1)
  node_lines="NodeName=dacl-n0 NodeAddr=10.199.19.10 CPUs=16 Gres=gpu:4 State=UNKNOWN
NodeName=dacl-n1 NodeAddr=10.199.19.11 CPUs=16 Gres=gpu:4 State=UNKNOWN"
fi
# Four fake GPUs: Slurm only needs character devices to hand out, and binds them per task (CUDA_VISIBLE_DEVICES)
# exactly as on a GPU node.
for g in 0 1 2 3; do ln -s /dev/null "$work/dev/gpu$g"; done
cat >"$work/slurm.conf" <<EOF
# Generated by test/slurm/run-slurm-test.sh: a private one-node cluster.
ClusterName=darraytest
SlurmctldHost=${ctld_host}
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${munge_socket}
StateSaveLocation=${work}/state
SlurmdSpoolDir=${work}/spool/%n
TmpFS=${work}/tmp
SlurmctldPidFile=${work}/slurmctld.pid
SlurmdPidFile=${work}/slurmd.%n.pid
SlurmctldLogFile=${work}/log/slurmctld.log
SlurmdLogFile=${work}/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
# The node advertises 16 CPUs on this 2-core machine (the GPU template asks for 4 tasks x 4 CPUs): take the
# configuration, not the hardware.
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
ReturnToService=2
KillWait=5
MinJobAge=2
GresTypes=gpu
${node_lines}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$work/gres.conf" <<EOF
AutoDetect=off
NodeName=$(IFS=,; echo "${nodes[*]}") Name=gpu File=${work}/dev/gpu[0-3]
EOF
# PMIx's per-step client directory defaults to /tmp/spmix_appdir_<uid>_<job>.<step>: keep it in our tree, so a
# stale one from an earlier cluster (job ids restart at 1) can never collide.
echo "PMIxCliTmpDirBase=${work}/pmix" >"$work/mpi.conf"
export SLURM_CONF=$work/slurm.conf
say "slurm.conf: node(s) ${nodes[*]}, slurmctld ${ctld_host} port ${ctld_port}, slurmd port ${slurmd_port}"

# ---------------------------------------------------------------------------------------------------------- daemons
ctl slurmctld -D -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
for n in "${nodes[@]}"; do
  mkdir -p "$work/spool/$n"
  if [ -n "$netns" ]; then
    bash "$netns" exec --state "$work/cluster" "${n#dacl-}" slurmd -D -f "$SLURM_CONF" -N "$n" >"$work/log/slurmd.$n.out" 2>&1 &
  else
    slurmd -D -f "$SLURM_CONF" -N "$n" >"$work/log/slurmd.$n.out" 2>&1 &
  fi
  pids+=($!)
done
say "slurmctld pid ${pids[1]}, slurmd pid(s) ${pids[*]:2}; waiting for node(s) ${nodes[*]} to be idle"
state=
for i in $(seq 1 120); do
  for p in "${pids[@]:1}"; do
    kill -0 "$p" 2>/dev/null || fail "$(cat /proc/$p/comm 2>/dev/null || echo "daemon $p") exited"
  done
  state=$(ctl sinfo -h -N -o %T 2>/dev/null | sort -u | tr '\n' ' ')
  [ "$state" = "idle " ] && [ "$(ctl sinfo -h -N -o %N 2>/dev/null | wc -l)" = ${#nodes[@]} ] && break
  case "$state" in
    *drain* | *inval* | *down*) fail "node(s) ${state}: $(ctl sinfo -h -R 2>&1)" ;;
  esac
  sleep 0.5
done
[ "$state" = "idle " ] || fail "node(s) ${nodes[*]} not idle after 60 s (state '${state}')"
ctl sinfo -N -O nodelist,statelong,cpus,gres
say "srun --mpi=list:"
ctl srun --mpi=list 2>&1 | sed 's/^/    /'
ctl srun --mpi=list 2>&1 | grep -qw pmix || fail "Slurm has no pmix MPI plugin (Debian package slurm-wlm-basic-plugins)"

# Oversubscribed ranks (4 tasks, 2 cores) must yield while they wait; containers often forbid the cross-memory
# attach that Open MPI's vader uses for single copies.
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# ---------------------------------------------------------------------------------------------------------- 1. srun
# One node: -n 4. Two nodes: -N 2 -n 4, two tasks per node (block distribution), checked per node.
srun_layout=(-n 4)
node_check=()
if [ -n "$netns" ]; then
  srun_layout=(-N 2 -n 4)
  node_check=(--nodes 2)
fi
say "srun ${srun_layout[*]} --mpi=pmix $info --json   (DARRAY_HOST_DEVICE_COUNT=2)"
DARRAY_HOST_DEVICE_COUNT=2 ctl timeout -k 5 45 srun "${srun_layout[@]}" --mpi=pmix "$info" --json >"$work/jobs/srun.out" 2>"$work/jobs/srun.err"
rc=$?
cat "$work/jobs/srun.out"
[ -s "$work/jobs/srun.err" ] && { echo "--- srun stderr ---"; cat "$work/jobs/srun.err"; }
[ $rc = 0 ] || fail "srun exited with status $rc"
"$python" "$here/check_darray_info.py" --processes 4 --host-devices 2 "${node_check[@]}" "$work/jobs/srun.out" ||
  fail "srun: wrong darray-info report"

say "srun ${srun_layout[*]} --mpi=pmix $info   (text)"
DARRAY_HOST_DEVICE_COUNT=2 ctl timeout -k 5 45 srun "${srun_layout[@]}" --mpi=pmix "$info" ||
  fail "srun (text) exited with status $?"

# ---------------------------------------------------------------------------------------------------------- 2. sbatch
run_template() {  # run_template <file> <processes> <host devices> [check_darray_info.py options...]
  local file=$1 np=$2 hd=$3 out
  shift 3
  [ -f "$file" ] || fail "template $file not found"
  out="$work/jobs/$(basename "$file" .sbatch).out"
  say "sbatch --wait $(basename "$file")   (APP=darray-info APP_ARGS=--json)"
  APP="$info" APP_ARGS=--json ctl timeout -k 5 45 sbatch --wait --chdir="$work/jobs" --output="$out" "$file"
  local rc=$?
  [ $rc = 124 ] && { echo "sbatch --wait timed out; the queue:"; ctl squeue -o '%i %j %T %R'; }
  echo "--- job output ---"
  cat "$out" 2>/dev/null
  [ $rc = 0 ] || fail "sbatch --wait $(basename "$file") exited with status $rc"
  "$python" "$here/check_darray_info.py" --processes "$np" --host-devices "$hd" "$@" "$out" ||
    fail "$(basename "$file"): wrong darray-info report"
}
if [ -n "$templates" ] && [ -n "$netns" ]; then
  run_template "$templates/gpu-2node-1proc-per-gpu.sbatch" 4 1 --nodes 2 --distinct-gpus
  run_template "$templates/gpu-2node-multi-gpu-per-node.sbatch" 4 1 --nodes 2 --node-gpus 2
elif [ -n "$templates" ]; then
  run_template "$templates/cpu-host-devices.sbatch" 2 4
  run_template "$templates/gpu-1node-1proc-per-gpu.sbatch" 4 1 --distinct-gpus
fi

say "PASS"
