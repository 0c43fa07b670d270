# shellcheck shell=bash
# Sourced by scripts/cluster.sh: a Sentinel setup: primary redis-1, replica
# redis-2 (AOF on, fsync every second), three sentinels redis-sentinel-1..3
# watching master "oncely" (quorum 2, down after 2 s). Prints
# REDIS_SENTINEL_URL=redis+sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/oncely
# and REDIS_SENTINEL_NODES=redis-1=127.0.0.1:p1,...

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_redis='^TestFaultRedisSentinel'

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
  echo "REDIS_SENTINEL_NODES=${nodes%,}"
}
