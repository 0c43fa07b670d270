#!/usr/bin/env bash
# Local broker clusters on 127.0.0.1 for the node-failure tests and for
# trying oncely on a cluster. Installs what it needs from Debian's packages
# (like scripts/test.sh), keeps every node's data, config, log and pid under
# one state directory (${ONCELY_CLUSTER_DIR:-${TMPDIR:-/tmp}/oncely-cluster}),
# listens on free ports only, never on the shared services' ports.
#
# Usage:
#   scripts/cluster.sh start nats|redis   start a cluster; prints NAME=value lines
#   scripts/cluster.sh kill NODE          SIGKILL one node (a crash)
#   scripts/cluster.sh restart NODE       start a killed node again, same ports and data
#   scripts/cluster.sh stop nats|redis    stop the cluster and remove its data
#
# nats:  three nats-servers in one cluster with JetStream (nodes nats-1..nats-3).
#        Prints NATS_CLUSTER_URL=nats://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3 (the form
#        both oncely's nats:// URLs and nats.go's Connect read as a server list)
#        and NATS_CLUSTER_NODES=nats-1=127.0.0.1:p1,...
# redis: a Sentinel setup: primary redis-1, replica redis-2 (AOF on, fsync
#        every second), three sentinels redis-sentinel-1..3 watching master
#        "oncely" (quorum 2, down after 2 s). Prints
#        REDIS_SENTINEL_URL=redis+sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/oncely
#        and REDIS_CLUSTER_NODES=redis-1=127.0.0.1:p1,...
# kafka, rabbitmq, postgres: not yet (exit 2).
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
# line that starts it, one argument a line), port, pid and its data.
node_dir() {
  local d
  for d in "$state"/*/"$1"; do [ -d "$d" ] && { echo "$d"; return 0; }; done
  die "no node $1 (started clusters: $(ls "$state" 2>/dev/null | tr '\n' ' '))"
}
run_node() { # dir
  local dir=$1 args
  mapfile -t args <"$dir/cmd"
  # exec: the pid recorded is the server's own (setsid does not fork in a
  # script's background job), and no shell keeps this script's stdout open.
  (cd "$dir" && exec setsid "${args[@]}") </dev/null >>"$dir/out.log" 2>&1 &
  echo $! >"$dir/pid"
  wait_port "$(cat "$dir/port")" 30 || die "$(basename "$dir") did not start on port $(cat "$dir/port") (see $dir/out.log)"
}
kill_node() { # dir
  local dir=$1 pid i
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$dir/pid"
}

start_nats() {
  command -v nats-server >/dev/null || apt_install nats-server
  local c=$state/nats i n port client=() route=() routes="" url="" nodes=""
  [ -d "$c" ] && die "a nats cluster runs already (scripts/cluster.sh stop nats first)"
  mkdir -p "$c"
  for i in 1 2 3; do free_port; client[i]=$port; free_port; route[i]=$port; routes+="nats-route://127.0.0.1:${route[i]}, "; done
  for i in 1 2 3; do
    n=$c/nats-$i
    mkdir -p "$n/store"
    cat >"$n/nats.conf" <<EOF
server_name: nats-$i
listen: 127.0.0.1:${client[i]}
jetstream { store_dir: "$n/store", max_memory_store: 64MB, max_file_store: 1GB }
cluster { name: oncely, listen: 127.0.0.1:${route[i]}, routes: [${routes%, }] }
EOF
    printf '%s\n' "$(command -v nats-server)" -c "$n/nats.conf" -l "$n/nats.log" >"$n/cmd"
    echo "${client[i]}" >"$n/port"
  done
  log "starting nats-1..3 (data in $c)"
  for i in 1 2 3; do run_node "$c/nats-$i"; url+="127.0.0.1:${client[i]},"; nodes+="nats-$i=127.0.0.1:${client[i]},"; done
  echo "NATS_CLUSTER_URL=nats://${url%,}"
  echo "NATS_CLUSTER_NODES=${nodes%,}"
}

start_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
  local c=$state/redis i n p port primary sentinels="" nodes=""
  [ -d "$c" ] && die "a redis cluster runs already (scripts/cluster.sh stop redis first)"
  mkdir -p "$c"
  free_port
  primary=$port
  for i in 1 2; do
    n=$c/redis-$i
    mkdir -p "$n"
    p=$primary
    [ "$i" = 1 ] || { free_port; p=$port; }
    cat >"$n/redis.conf" <<EOF
bind 127.0.0.1
port $p
dir $n
logfile $n/redis.log
save ""
appendonly yes
appendfsync everysec
maxmemory 128mb
maxmemory-policy noeviction
EOF
    [ "$i" = 1 ] || echo "replicaof 127.0.0.1 $primary" >>"$n/redis.conf"
    printf '%s\n' "$(command -v redis-server)" "$n/redis.conf" >"$n/cmd"
    echo "$p" >"$n/port"
    nodes+="redis-$i=127.0.0.1:$p,"
  done
  for i in 1 2 3; do
    n=$c/redis-sentinel-$i
    mkdir -p "$n"
    free_port
    p=$port
    cat >"$n/sentinel.conf" <<EOF
bind 127.0.0.1
port $p
dir $n
logfile $n/sentinel.log
sentinel monitor oncely 127.0.0.1 $primary 2
sentinel down-after-milliseconds oncely 2000
sentinel failover-timeout oncely 10000
sentinel parallel-syncs oncely 1
EOF
    printf '%s\n' "$(command -v redis-server)" "$n/sentinel.conf" --sentinel >"$n/cmd"
    echo "$p" >"$n/port"
    sentinels+="127.0.0.1:$p,"
    nodes+="redis-sentinel-$i=127.0.0.1:$p,"
  done
  log "starting redis-1 (primary), redis-2 (replica), redis-sentinel-1..3 (data in $c)"
  for n in redis-1 redis-2 redis-sentinel-1 redis-sentinel-2 redis-sentinel-3; do run_node "$c/$n"; done
  echo "REDIS_SENTINEL_URL=redis+sentinel://${sentinels%,}/oncely"
  echo "REDIS_CLUSTER_NODES=${nodes%,}"
}

stop_cluster() { # name
  local c=$state/$1 n
  [ -d "$c" ] || return 0
  for n in "$c"/*/; do kill_node "${n%/}"; done
  rm -rf "$c"
}

not_yet() { echo "cluster.sh: $1 clusters are not yet supported (nats and redis are)" >&2; exit 2; }

case "${1:-} ${2:-}" in
"start nats") start_nats ;;
"start redis") start_redis ;;
"stop nats" | "stop redis") stop_cluster "$2" ;;
"start kafka" | "start rabbitmq" | "start postgres" | "stop kafka" | "stop rabbitmq" | "stop postgres") not_yet "$2" ;;
"kill "?*) kill_node "$(node_dir "$2")" ;;
"restart "?*)
  d=$(node_dir "$2")
  [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null && die "$2 runs already"
  run_node "$d"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
