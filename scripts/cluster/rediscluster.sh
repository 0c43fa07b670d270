# shellcheck shell=bash
# Sourced by scripts/cluster.sh: a Redis Cluster of three primaries with one
# replica each (AOF on, fsync every second, cluster-node-timeout 2 s),
# created with redis-cli --cluster create … --cluster-replicas 1. Prints
# REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/
# (oncely's form for a cluster's seed nodes, like redis+sentinel://) and
# REDIS_CLUSTER_NODES=redis-cluster-1=127.0.0.1:p1,...
#
# The nodes are redis-cluster-1..redis-cluster-6, not redis-1..6: the
# Sentinel setup (scripts/cluster/redis.sh) owns redis-1 and redis-2, and
# `scripts/cluster.sh kill NODE` looks a name up in every cluster, so node
# names are unique across all of them. Which node is a primary changes with
# every failover; REDIS_CLUSTER_NODES maps names to addresses, CLUSTER NODES
# says who holds which slots.

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_rediscluster='^TestFaultRedisCluster'

start_rediscluster() {
  command -v redis-server >/dev/null || apt_install redis-server
  command -v redis-cli >/dev/null || apt_install redis-tools
  local c=$state/rediscluster i n url="" nodes="" addrs=()
  [ -d "$c" ] && die "a rediscluster runs already (scripts/cluster.sh stop rediscluster first)"
  mkdir -p "$c"
  for i in 1 2 3 4 5 6; do
    n=$c/redis-cluster-$i
    mkdir -p "$n"
    free_port
    cat >"$n/redis.conf" <<CONF
bind 127.0.0.1
port $port
dir $n
logfile $n/redis.log
cluster-enabled yes
cluster-config-file $n/nodes.conf
cluster-node-timeout 2000
save ""
appendonly yes
appendfsync everysec
maxmemory 64mb
maxmemory-policy noeviction
CONF
    printf '%s\n' "$(command -v redis-server)" "$n/redis.conf" >"$n/cmd"
    echo "$port" >"$n/port"
    addrs+=("127.0.0.1:$port")
    nodes+="redis-cluster-$i=127.0.0.1:$port,"
    [ "$i" -le 3 ] && url+="127.0.0.1:$port,"
  done
  log "starting redis-cluster-1..6 (data in $c)"
  for i in 1 2 3 4 5 6; do run_node "$c/redis-cluster-$i"; done
  # The first three addresses become the primaries, the last three their
  # replicas (redis-cli may pair them in any order).
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$c/create.log" 2>&1 ||
    die "redis-cli --cluster create failed (see $c/create.log)"
  for ((i = 0; i < 120; i++)); do
    rediscluster_ok "${addrs[@]}" && break
    sleep 0.25
  done
  rediscluster_ok "${addrs[@]}" || die "the cluster did not reach cluster_state:ok in 30 s"
  echo "REDIS_CLUSTER_URL=redis+cluster://${url%,}/"
  echo "REDIS_CLUSTER_NODES=${nodes%,}"
}

# rediscluster_ok reports whether every node says cluster_state:ok and knows
# all six nodes.
rediscluster_ok() {
  local a info
  for a in "$@"; do
    info=$(redis-cli -h "${a%:*}" -p "${a##*:}" cluster info 2>/dev/null) || return 1
    [[ $info == *cluster_state:ok* && $info == *cluster_known_nodes:6* ]] || return 1
  done
}
