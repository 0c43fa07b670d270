# shellcheck shell=bash
# Sourced by scripts/cluster.sh: PostgreSQL with a streaming standby (nodes
# postgres-primary and postgres-standby, hot standby, synchronous
# replication: a commit returns only once the standby flushed it, so a
# promotion never loses a committed claim or effect). Prints
# PG_CLUSTER_URL=postgres://postgres@127.0.0.1:p1,127.0.0.1:p2/test?sslmode=disable&target_session_attrs=read-write
# (pgx and libpq try the hosts in turn and keep the one that accepts writes)
# and PG_CLUSTER_NODES=postgres-primary=127.0.0.1:p1,postgres-standby=127.0.0.1:p2.
#
# `promote postgres-standby` (or whichever node is the standby) promotes it
# and lets it commit alone until a standby rejoins. `kill NODE` SIGKILLs the
# node's postmaster and its backends (a machine crash). `restart NODE`
# starts the node again on its data; if it was the primary and the other
# node has been promoted since, it would come back as a second writable
# primary, so it is rebuilt from the new primary (pg_basebackup) and rejoins
# as its synchronous standby instead.

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
# as_postgres runs a command as the postgres user when this script runs as
# root: PostgreSQL refuses to run as root.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups "$@"; else "$@"; fi
}
pg_sql() { # port sql
  "$(pg_bin)/psql" "postgres://postgres@127.0.0.1:$1/postgres?sslmode=disable" -qtAXc "$2"
}
pg_wait_ready() { # port
  local i
  for ((i = 0; i < 120; i++)); do pg_sql "$1" 'select 1' >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "PostgreSQL on port $1 does not answer"
}
pg_node_cmd() { # node-dir port
  printf '%s\n' "$(pg_bin)/postgres" -D "$1/data" -p "$2" -k "$1" -c listen_addresses=127.0.0.1 >"$1/cmd"
  echo "$2" >"$1/port"
  [ "$(id -u)" = 0 ] && sed -i '1i setpriv\n--reuid=postgres\n--regid=postgres\n--init-groups' "$1/cmd"
  return 0
}
# pg_clone_standby makes node-dir a streaming standby of the server on port,
# named node (its application_name, which synchronous_standby_names lists).
pg_clone_standby() { # node-dir node primary-port
  rm -rf "$1/data"
  as_postgres "$(pg_bin)/pg_basebackup" -d "host=127.0.0.1 port=$3 user=postgres" -D "$1/data" -R -X stream -c fast \
    || die "pg_basebackup from port $3 failed"
  echo "primary_conninfo = 'host=127.0.0.1 port=$3 user=postgres application_name=$2'" >>"$1/data/postgresql.auto.conf"
}

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_postgres='^TestFaultPostgresCluster'

start_postgres() {
  [ -x "$(pg_bin)/initdb" ] || apt_install postgresql
  local c=$state/postgres p s
  [ -d "$c" ] && die "a postgres cluster runs already (scripts/cluster.sh stop postgres first)"
  mkdir -p "$c/postgres-primary" "$c/postgres-standby"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$c"
  free_port; p=$port
  free_port; s=$port
  log "starting postgres-primary and postgres-standby (data in $c)"
  as_postgres "$(pg_bin)/initdb" -D "$c/postgres-primary/data" -U postgres --auth=trust -E UTF8 >"$c/postgres-primary/initdb.log" 2>&1 \
    || die "initdb failed (see $c/postgres-primary/initdb.log)"
  cat >>"$c/postgres-primary/data/postgresql.conf" <<CONF
shared_buffers = 16MB
max_connections = 60
wal_level = replica
max_wal_senders = 4
wal_keep_size = 128MB
hot_standby = on
synchronous_commit = on
ssl = off
CONF
  pg_node_cmd "$c/postgres-primary" "$p"
  run_node "$c/postgres-primary"
  pg_wait_ready "$p"
  pg_sql "$p" 'create database test' >/dev/null
  pg_clone_standby "$c/postgres-standby" postgres-standby "$p"
  pg_node_cmd "$c/postgres-standby" "$s"
  run_node "$c/postgres-standby"
  pg_wait_ready "$s"
  pg_make_sync "$p" postgres-standby
  echo "PG_CLUSTER_URL=postgres://postgres@127.0.0.1:$p,127.0.0.1:$s/test?sslmode=disable&target_session_attrs=read-write"
  echo "PG_CLUSTER_NODES=postgres-primary=127.0.0.1:$p,postgres-standby=127.0.0.1:$s"
}

# pg_make_sync makes node the synchronous standby of the primary on port
# (set once the standby streams: before, every commit would wait for it) and
# waits until it is.
pg_make_sync() { # port node
  local i
  pg_sql "$1" "alter system set synchronous_standby_names = '\"$2\"'" >/dev/null
  pg_sql "$1" 'select pg_reload_conf()' >/dev/null
  for ((i = 0; i < 120; i++)); do
    [ "$(pg_sql "$1" "select sync_state from pg_stat_replication where application_name = '$2'" 2>/dev/null)" = sync ] && return 0
    sleep 0.25
  done
  die "$2 does not stream synchronously from port $1"
}

# pg_other prints the directory of the cluster's other node.
pg_other() { # node-dir
  local d
  for d in "$(dirname "$1")"/postgres-*/; do
    if [ "${d%/}" != "$1" ]; then echo "${d%/}"; fi
  done
}
pg_running() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

kill_postgres() { # node-dir
  local pid i
  [ -f "$1/pid" ] || return 0
  pid=$(cat "$1/pid")
  # The postmaster leads its own process group (setsid): kill it with its
  # backends, as a crash of the machine would.
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$1/pid"
}

restart_postgres() { # node-dir
  local d=$1 o op
  pg_running "$d" && die "$(basename "$d") runs already"
  o=$(pg_other "$d")
  op=$(cat "$o/port")
  if [ ! -f "$d/data/standby.signal" ] && pg_running "$o" && [ "$(pg_sql "$op" 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; then
    log "$(basename "$o") was promoted: rebuilding $(basename "$d") as its standby"
    pg_clone_standby "$d" "$(basename "$d")" "$op"
    run_node "$d"
    pg_wait_ready "$(cat "$d/port")"
    pg_make_sync "$op" "$(basename "$d")"
    return
  fi
  run_node "$d"
  pg_wait_ready "$(cat "$d/port")"
}

promote_postgres() { # node-dir
  local d=$1 p
  p=$(cat "$d/port")
  pg_running "$d" || die "$(basename "$d") does not run"
  [ "$(pg_sql "$p" 'select pg_is_in_recovery()')" = t ] || die "$(basename "$d") is not a standby"
  [ "$(pg_sql "$p" 'select pg_promote(true, 60)')" = t ] || die "promoting $(basename "$d") failed"
  # Alone, the new primary would wait forever for a synchronous standby:
  # it commits alone until restart_postgres rebuilds the other node as its
  # standby.
  pg_sql "$p" "alter system set synchronous_standby_names = ''" >/dev/null
  pg_sql "$p" 'select pg_reload_conf()' >/dev/null
}

stop_postgres() {
  local n
  [ -d "$state/postgres" ] || return 0
  for n in "$state"/postgres/*/; do kill_postgres "${n%/}"; done
  rm -rf "$state/postgres"
}
