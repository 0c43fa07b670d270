#!/usr/bin/env bash
# Local broker clusters on 127.0.0.1 for the node-failure tests and for
# trying oncely on a cluster. Installs what it needs from Debian's packages
# (like scripts/test.sh), keeps every node's data, config, log and pid under
# one state directory (${ONCELY_CLUSTER_DIR:-${TMPDIR:-/tmp}/oncely-cluster}),
# listens on free ports only, never on the shared services' ports.
#
# Usage:
#   scripts/cluster.sh start CLUSTER    start a cluster; prints NAME=value lines
#   scripts/cluster.sh kill NODE        SIGKILL one node (a crash)
#   scripts/cluster.sh restart NODE     start a killed node again, same ports and data
#   scripts/cluster.sh promote NODE     make a standby the primary (postgres-standby)
#   scripts/cluster.sh pause NODE       SIGSTOP one node (it hangs, its sockets stay open)
#   scripts/cluster.sh resume NODE      SIGCONT a paused node
#   scripts/cluster.sh stop CLUSTER     stop the cluster and remove its data
#   scripts/cluster.sh list             the clusters this script can start
#   scripts/cluster.sh tests CLUSTER    the go test -run pattern of its node-failure tests
#
# Each cluster is one file, scripts/cluster/CLUSTER.sh, defining start_CLUSTER
# (its header says what it starts and prints), tests_CLUSTER (the -run
# pattern of the tests that need it) and, where SIGKILL and removing
# the data is not enough, stop_CLUSTER (likewise kill_CLUSTER, restart_CLUSTER
# and promote_CLUSTER, given a node's directory); the helpers below are shared.
set -euo pipefail

state=${ONCELY_CLUSTER_DIR:-${TMPDIR:-/tmp}/oncely-cluster}

log() { printf '==> %s\n' "$*" >&2; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port seconds
  local i
  for ((i = 0; i < $2 * 4; i++)); do port_open "$1" && return 0; sleep 0.25; done
  return 1
}
apt_install() {
  log "installing $* from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
# free_port sets port to a port of 127.0.0.1 nothing listens on, between
# the shared services' ports and Linux's ephemeral range (32768 and up, where
# an outgoing connection may hold the port), not handed out before by this run.
taken=" "
free_port() {
  while :; do
    port=$((20000 + RANDOM % 12000))
    [[ $taken == *" $port "* ]] && continue
    port_open "$port" && continue
    taken+="$port "
    return
  done
}

# A node is a directory $state/<cluster>/<node> holding cmd (the command
# line that starts it, one argument a line), port, pid, optionally wait (the
# seconds a start may take until port opens, default 30) and its data.
node_dir() {
  local d
  for d in "$state"/*/"$1"; do [ -d "$d" ] && { echo "$d"; return 0; }; done
  die "no node $1 (started clusters: $(ls "$state" 2>/dev/null | tr '\n' ' '))"
}
run_node() { # dir [seconds to wait for its port: default the file wait, else 30; 0: do not wait]
  local dir=$1 wait=${2:-$(cat "$1/wait" 2>/dev/null || echo 30)} args
  mapfile -t args <"$dir/cmd"
  # exec: the pid recorded is the server's own (setsid does not fork in a
  # script's background job), and no shell keeps this script's stdout open.
  (cd "$dir" && exec setsid "${args[@]}") </dev/null >>"$dir/out.log" 2>&1 &
  echo $! >"$dir/pid"
  [ "$wait" = 0 ] && return 0
  wait_port "$(cat "$dir/port")" "$wait" || die "$(basename "$dir") did not start on port $(cat "$dir/port") (see $dir/out.log)"
}
kill_node() { # dir
  local dir=$1 pid i
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$dir/pid"
}

stop_cluster() { # name
  local c=$state/$1 n
  [ -d "$c" ] || return 0
  for n in "$c"/*/; do kill_node "${n%/}"; done
  rm -rf "$c"
}

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cluster
known() { [ -f "$dir/$1.sh" ] || die "no cluster $1 (known: $(cd "$dir" && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' '))"; }

case "${1:-} ${2:-}" in
"start "?*)
  known "$2"
  # shellcheck source=/dev/null
  . "$dir/$2.sh"
  "start_$2"
  ;;
"stop "?*)
  known "$2"
  # shellcheck source=/dev/null
  . "$dir/$2.sh"
  # A cluster file may define stop_CLUSTER for a cleaner stop; SIGKILL and
  # removing the data is the default.
  if declare -F "stop_$2" >/dev/null; then "stop_$2"; else stop_cluster "$2"; fi
  ;;
"list ") cd "$dir" && ls -- *.sh | sed 's/\.sh$//' ;;
"tests "?*)
  known "$2"
  # shellcheck source=/dev/null
  . "$dir/$2.sh"
  v=tests_$2
  [ -n "${!v:-}" ] || die "scripts/cluster/$2.sh sets no $v"
  echo "${!v}"
  ;;
"pause "?*) kill -STOP "$(cat "$(node_dir "$2")/pid")" ;;
"resume "?*) kill -CONT "$(cat "$(node_dir "$2")/pid")" ;;
"kill "?* | "restart "?* | "promote "?*)
  d=$(node_dir "$2")
  cl=$(basename "$(dirname "$d")")
  # shellcheck source=/dev/null
  . "$dir/$cl.sh"
  # A cluster file may define kill_CLUSTER, restart_CLUSTER (given the
  # node's directory) for its own way; promote exists only where it does.
  if declare -F "$1_$cl" >/dev/null; then
    "$1_$cl" "$d"
  elif [ "$1" = kill ]; then
    kill_node "$d"
  elif [ "$1" = restart ]; then
    [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null && die "$2 runs already"
    run_node "$d"
  else
    die "cluster $cl has no $1"
  fi
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
