#!/bin/bash
# A test cluster on one machine: "nodes" that are Linux network + UTS + mount namespaces, joined by veth pairs to a
# bridge that lives in a namespace of its own (the switch), so the private test subnet exists only inside those
# namespaces and nothing is added to the host's network. A "head" namespace on the same bridge runs the launchers
# (mpirun, srun, slurmctld). Each node has its own hostname and its own /etc/hosts (bind-mounted inside its mount
# namespace), so Open MPI and Slurm see separate hosts: processes on different nodes talk over TCP through the veth
# links, processes on one node over shared memory (/dev/shm is still shared, as on a real node).
#
#   netns-cluster.sh start   --state DIR [--nodes N] [--node-local D] [--owner PID]
#                                                           create the cluster (prints its layout); DIR must not exist.
#                                                           D (an existing directory) becomes node-local: each node
#                                                           sees its own empty one there, as a real node's /tmp.
#                                                           PID (default: the caller) owns the cluster: the next
#                                                           start removes clusters whose owner is gone
#   netns-cluster.sh stop    --state DIR                    kill every process in its namespaces, delete them
#   netns-cluster.sh exec    --state DIR NODE CMD...        run CMD inside NODE (head, n0, n1, ...), environment kept
#   netns-cluster.sh rsh     --state DIR HOST CMD...        Open MPI's rsh agent: run the shell command CMD on HOST
#                                                           (a hostname) with a login-like environment, as ssh would
#   netns-cluster.sh mpirun  --state DIR [--nodes K] ARGS... mpirun in the head namespace, onto the first K nodes
#   netns-cluster.sh counters --state DIR                   bytes received/sent by each node's link (one line each)
#   netns-cluster.sh check-root                             exit 77 with the reason when namespaces cannot be made
#
# mpirun's transports are NETNS_CLUSTER_BTL (default self,vader,tcp; TCP only on the test subnet).
# Names: namespaces dacl-<tag>-{sw,head,n0,n1,...} (tag: 4 hex digits, in DIR/tag), hostnames dacl-head, dacl-n0, ...
# subnet 10.199.19.0/24 (head .1, node i .(10+i)). Everything is found again from DIR, so stop works from any shell.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")
subnet_prefix=10.199.19
# Running clusters: one file per tag, "owner-pid owner-start-time state-dir".
registry=/run/dacl-netns-cluster
owner=$PPID
export PATH="$PATH:/usr/sbin:/sbin"

die() { echo "netns-cluster: $*" >&2; exit 1; }

check_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "netns-cluster: needs root to create network namespaces (running as $(id -un)): skipped" >&2
    return 77
  fi
  local probe="dacl-probe-$$"
  local err
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "netns-cluster: 'ip netns add' is refused here ($err): skipped" >&2
    return 77
  fi
  ip netns del "$probe"
  command -v nsenter >/dev/null && command -v unshare >/dev/null || die "nsenter/unshare not found (Debian util-linux)"
  return 0
}

node_names() { cat "$state/nodes"; }                 # n0 n1 ... (not head)
ns_of() { echo "dacl-$(cat "$state/tag")-$1"; }      # namespace of a node
host_of() { echo "dacl-$1"; }                        # hostname of a node
addr_of() {
  case $1 in
    head) echo "$subnet_prefix.1" ;;
    n*) echo "$subnet_prefix.$((10 + ${1#n}))" ;;
  esac
}
holder_of() { cat "$state/$1.pid"; }

start() {
  local nodes=$1 node_local=$2 tag sw i n local_mount
  [ -e "$state" ] && die "state directory $state exists already"
  mkdir -p "$state" "$registry" || die "cannot create $state"
  reap
  tag=$(od -An -N2 -tx2 /dev/urandom | tr -d ' ')
  while ip netns list | grep -q "^dacl-$tag-"; do tag=$(od -An -N2 -tx2 /dev/urandom | tr -d ' '); done
  echo "$tag" >"$state/tag"
  echo "$owner $(start_time "$owner") $state" >"$registry/$tag"
  : >"$state/nodes"
  for ((i = 0; i < nodes; i++)); do echo "n$i" >>"$state/nodes"; done

  # /etc/hosts of every namespace: the cluster's names only (plus localhost), so no lookup ever leaves the subnet.
  {
    echo "127.0.0.1 localhost"
    for n in head $(node_names); do echo "$(addr_of "$n") $(host_of "$n")"; done
  } >"$state/hosts"
  : >"$state/hostfile"

  sw=$(ns_of sw)
  ip netns add "$sw" || die "ip netns add $sw failed"
  ip -n "$sw" link add br0 type bridge || die "cannot create the bridge in $sw"
  ip -n "$sw" link set br0 up
  ip -n "$sw" link set lo up
  for n in head $(node_names); do
    local ns
    ns=$(ns_of "$n")
    ip netns add "$ns" || die "ip netns add $ns failed"
    # Both ends are created inside namespaces: the host's namespace never sees them.
    ip -n "$sw" link add "$n" type veth peer name eth0 netns "$ns" || die "cannot create the veth pair of $n"
    ip -n "$sw" link set "$n" master br0
    ip -n "$sw" link set "$n" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(addr_of "$n")/24" dev eth0
    ip -n "$ns" link set eth0 up
    # The holder: a process that keeps the node's UTS and mount namespaces (own hostname, own /etc/hosts, a /sys
    # showing the node's interfaces, with the host's cgroup tree moved into it as slurmd needs it). Everything later
    # enters its namespaces with nsenter.
    mkdir "$state/$n.cgroup"
    local_mount=true
    if [ -n "$node_local" ]; then
      mkdir "$state/$n.local"
      local_mount="mount --bind '$state/$n.local' '$node_local'"
    fi
    setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private /bin/sh -c "
      hostname $(host_of "$n") && mount --bind '$state/hosts' /etc/hosts &&
      mount --rbind /sys/fs/cgroup '$state/$n.cgroup' && mount -t sysfs sysfs /sys &&
      mount --move '$state/$n.cgroup' /sys/fs/cgroup && $local_mount && echo \$\$ >'$state/$n.pid.tmp' &&
      mv '$state/$n.pid.tmp' '$state/$n.pid' && exec sleep infinity" </dev/null >"$state/$n.holder.log" 2>&1 &
    [ "$n" != head ] && echo "$(host_of "$n")" >>"$state/hostfile"
  done
  for n in head $(node_names); do
    for i in $(seq 1 100); do [ -s "$state/$n.pid" ] && break; sleep 0.05; done
    [ -s "$state/$n.pid" ] || die "the holder of $n did not start: $(cat "$state/$n.holder.log")"
  done
  # The links: every node must reach every other through the bridge.
  for n in $(node_names); do
    # No ping in a minimal image: a TCP connect to a closed port is refused at once when the peer is reachable.
    # The links take a moment to come up: try for 10 s.
    for i in $(seq 1 50); do
      case $(enter "$n" timeout 2 bash -c "exec 3<>/dev/tcp/$(addr_of head)/9" 2>&1) in *refused*) break ;; esac
      sleep 0.2
    done
    [ "$i" -lt 50 ] || die "$(host_of "$n") cannot reach $(host_of head) over the bridge"
  done
  echo "netns-cluster: tag $tag, subnet $subnet_prefix.0/24, state $state"
  for n in head $(node_names); do
    echo "  $(host_of "$n")  $(addr_of "$n")  namespace $(ns_of "$n")  holder pid $(holder_of "$n")" \
      "hostname '$(enter "$n" hostname)', interfaces $(enter "$n" ls /sys/class/net | tr '\n' ' ')"
  done
}

enter() {  # enter NODE CMD...: CMD in NODE's network, UTS and mount namespaces, in the current directory
  local n=$1
  shift
  [ -s "$state/$n.pid" ] || die "no node '$n' in $state"
  # exec: the caller's process becomes CMD (a daemon started through "exec" keeps the pid its starter saw).
  exec nsenter --target "$(holder_of "$n")" --net --uts --mount --wd="$PWD" -- "$@"
}

rsh() {  # rsh HOST CMD...: what ssh HOST CMD would do: a fresh environment, CMD run by a shell
  local host=$1 n
  shift
  n=${host#dacl-}
  [ "$host" != "$n" ] && [ -s "$state/$n.pid" ] || die "rsh: unknown host '$host' (hosts: $(cat "$state/hostfile" | tr '\n' ' '))"
  nsenter --target "$(holder_of "$n")" --net --uts --mount --wd=/ -- \
    env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/sh PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    /bin/sh -c "$*"
}

mpirun_in_head() {  # [--nodes K] ARGS...: onto the first K nodes (default all)
  local k
  k=$(wc -l <"$state/nodes")
  [ "${1:-}" = --nodes ] && { k=$2; shift 2; }
  head -n "$k" "$state/hostfile" >"$state/hostfile.$k"
  # The agent is a file (Open MPI runs it as "agent host command"); it brings the state directory along.
  printf '#!/bin/sh\nexec %q rsh --state %q "$@"\n' "$self" "$state" >"$state/agent.sh"
  chmod 755 "$state/agent.sh"
  # Open MPI's session directories (one per host name) go under DIR, so a node lost with its daemon leaves none.
  mkdir -p "$state/tmp"
  enter head mpirun --mca orte_tmpdir_base "$state/tmp" --hostfile "$state/hostfile.$k" --mca plm_rsh_agent "$state/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl "${NETNS_CLUSTER_BTL:-self,vader,tcp}" --mca btl_tcp_if_include "$subnet_prefix.0/24" \
    --mca oob_tcp_if_include "$subnet_prefix.0/24" "$@"
}

counters() {
  local n
  for n in $(node_names); do
    echo "$(host_of "$n") eth0: rx_bytes $(ip netns exec "$(ns_of "$n")" cat /sys/class/net/eth0/statistics/rx_bytes)" \
      "tx_bytes $(ip netns exec "$(ns_of "$n")" cat /sys/class/net/eth0/statistics/tx_bytes)"
  done
}

# Kills every process inside the namespaces dacl-TAG-* (holders, orted, ranks, slurmd, ...: TERM, then KILL) and
# deletes the namespaces (their veth ends and the bridge go with them).
stop_tag() {
  local tag=$1 ns p sig i left=0
  our_namespaces() { ip netns list | awk -v t="dacl-$tag-" 'index($1, t) == 1 {print $1}'; }
  for sig in TERM KILL; do
    for ns in $(our_namespaces); do
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill -"$sig" "$p" 2>/dev/null; done
    done
    for i in $(seq 1 20); do
      [ -z "$(for ns in $(our_namespaces); do ip netns pids "$ns"; done)" ] && break
      sleep 0.1
    done
  done
  for ns in $(our_namespaces); do ip netns del "$ns" || left=1; done
  if [ -n "$(our_namespaces)" ]; then
    echo "netns-cluster: namespaces left behind: $(our_namespaces | tr '\n' ' ')" >&2
    left=1
  fi
  rm -f "$registry/$tag"
  rmdir "$registry" 2>/dev/null
  return $left
}

stop() {
  local tag rc
  [ -f "$state/tag" ] || return 0
  tag=$(cat "$state/tag")
  stop_tag "$tag"
  rc=$?
  rm -f "$state"/*.pid
  echo "netns-cluster: stopped (tag $tag)"
  return $rc
}

# A cluster whose owner (the shell that started it) is gone was left by a test that was killed before its trap ran
# (ctest's timeout sends SIGKILL): remove it before starting a new one. Owners are told apart from a reused pid by
# their start time.
start_time() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }
reap() {
  local f tag pid started
  for f in "$registry"/*; do
    [ -f "$f" ] || continue
    tag=$(basename "$f")
    read -r pid started _ <"$f"
    if [ "$(start_time "$pid")" != "$started" ]; then
      echo "netns-cluster: removing cluster $tag, left behind by process $pid (gone)" >&2
      stop_tag "$tag"
    fi
  done
}

cmd=${1:-}
shift || true
state=
if [ "${1:-}" = --state ]; then
  state=$2
  shift 2
fi
case $cmd in
  check-root) check_root ;;
  start)
    nodes=2 node_local=
    while [ $# -gt 0 ]; do
      case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --owner) owner=$2; shift 2 ;;
        --node-local) node_local=$(cd "$2" && pwd) || die "--node-local: no directory '$2'"; shift 2 ;;
        *) die "start: unknown argument '$1'" ;;
      esac
    done
    [ -n "$state" ] || die "start: --state DIR is required"
    start "$nodes" "$node_local"
    ;;
  stop) stop ;;
  exec) enter "$@" ;;
  rsh) rsh "$@" ;;
  mpirun) mpirun_in_head "$@" ;;
  counters) counters ;;
  *) die "usage: netns-cluster.sh start|stop|exec|rsh|mpirun|counters|check-root --state DIR ... (got '$cmd')" ;;
esac
