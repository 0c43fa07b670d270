#!/usr/bin/env bash
# The whole oncely test suite, as CI runs it. It starts every service the tests
# need, installing it from Debian's packages or npm when missing:
#   PostgreSQL (127.0.0.1:5432), RabbitMQ (127.0.0.1:5672, and 5671 for TLS with
#   a test CA from scripts/rabbitmq-tls.sh: RABBITMQ_TLS_URL, RABBITMQ_TLS_CA), the local-aws-sqs
#   emulator (127.0.0.1:9324), a NATS server with JetStream (127.0.0.1:4222,
#   Debian's nats-server; NATS_URL), and Apache Kafka (scripts/kafka.sh: fetched from
#   Maven Central, one KRaft node on 127.0.0.1, stopped when this script exits;
#   its address is exported as KAFKA_BROKERS, its SASL_SSL listener's as
#   KAFKA_SASL_BROKERS, KAFKA_TLS_CA, KAFKA_SASL_USER and KAFKA_SASL_PASSWORD,
#   and a KAFKA_BROKERS already set is used instead), and Redis
#   (127.0.0.1:6379, no persistence: REDIS_URL). Unit tests that need
#   kfake's hooks run it in-process. The browser tests (internal/browsertest)
#   drive Debian's chromium, headless: CHROMIUM_PATH.
# Then: gofmt, go vet, staticcheck, oncely's own analyzers (cmd/oncelyvet as
# go vet's vettool: any report fails), `go test -race ./...`, and last, serially,
# the fault tests that stop and restart shared services (build tag `faults`),
# then the node-failure tests, one cluster at a time (scripts/cluster.sh).
#
# Usage: ./scripts/test.sh            (everything)
#        ./scripts/test.sh ./consumer  (only these packages; no fault step)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# This script starts every service the tests need, so a missing one is a
# failure here, never a skip.
export CI=true

export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
export RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
export SQS_ENDPOINT=${SQS_ENDPOINT:-http://127.0.0.1:9324}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

log() { printf '==> %s\n' "$*"; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port seconds
  local i
  for ((i = 0; i < $2 * 4; i++)); do port_open "$1" && return 0; sleep 0.25; done
  return 1
}
apt_install() {
  log "installing $* from Debian's packages"
  if [ -z "${apt_updated:-}" ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_go() {
  command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin; }
  command -v go >/dev/null || { echo "Go is required (https://go.dev/dl); not found on PATH" >&2; exit 1; }
}

ensure_postgres() {
  if ! port_open 5432; then
    command -v pg_ctlcluster >/dev/null || apt_install postgresql
    log "starting PostgreSQL"
    pg_trust_local
    pg_ctlcluster --skip-systemctl-redirect "$(pg_version)" main start || true
    wait_port 5432 60 || { echo "PostgreSQL did not start on 127.0.0.1:5432" >&2; exit 1; }
  elif [ -d /etc/postgresql ] && ! psql "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" -qtAc 'select 1' >/dev/null 2>&1; then
    log "reloading PostgreSQL to trust local connections"
    pg_trust_local
    pg_ctlcluster --skip-systemctl-redirect "$(pg_version)" main reload
  fi
  if ! psql "$TEST_DATABASE_URL" -qtAc 'select 1' >/dev/null 2>&1; then
    log "creating database test"
    psql "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" -qc 'create database test' >/dev/null
  fi
}
pg_version() { ls /etc/postgresql | sort -V | tail -1; }
# The tests connect as postgres without a password from 127.0.0.1: trust local
# connections, also on a machine whose PostgreSQL came preinstalled.
pg_trust_local() {
  sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/; s/^(local\s+all\s+all\s+)\S+/\1trust/' "/etc/postgresql/$(pg_version)/main/pg_hba.conf"
}

ensure_rabbitmq() {
  command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
  command -v openssl >/dev/null || apt_install openssl
  # The amqps:// tests' TLS listener (127.0.0.1:5671, test CA): its config must
  # be in place before the broker starts, so a broker running without it (or
  # with certificates since renewed) is restarted; so is one that accepts
  # connections but does not answer the AMQP protocol header (a wedged node).
  local tls data
  tls=$("$root/scripts/rabbitmq-tls.sh")
  if port_open 5672 && { [ -n "$tls" ] || ! port_open 5671 || ! amqp_answers || rabbitmq_few_sockets; }; then
    log "restarting RabbitMQ (TLS listener to load, the node does not answer, or it allows too few sockets)"
    stop_rabbitmq
  fi
  if ! port_open 5672; then
    # A fresh node database on every start, like Kafka's: queues left by
    # earlier runs are not recovered (hundreds of quorum queues were, and a
    # node recovering them stopped answering new connections).
    data=$(mktemp -d "${TMPDIR:-/tmp}/oncely-rabbitmq.XXXXXX")
    chown rabbitmq:rabbitmq "$data"
    log "starting RabbitMQ (node data in $data)"
    # Parallel test packages open many connections: give the broker as many
    # file descriptors as this machine allows (raising the soft limit to the
    # hard one; a fixed number over the hard limit fails and changes nothing).
    # The node is started as the rabbitmq user with setpriv, not through
    # Debian's wrapper run as root: that wrapper switches user with su, whose
    # PAM session resets the soft limit to 1024, and a node limited to 832
    # sockets stops accepting AMQP connections halfway through the suite.
    (ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
      cd /var/lib/rabbitmq && RABBITMQ_MNESIA_BASE=$data setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups \
        env HOME=/var/lib/rabbitmq rabbitmq-server -detached >/dev/null 2>&1) || true
    wait_port 5672 120 || { echo "RabbitMQ did not start on 127.0.0.1:5672" >&2; exit 1; }
  fi
  # The fault tests stop_app the broker; make sure a previous run left it up.
  timeout 60 rabbitmqctl -q await_startup >/dev/null 2>&1 || { rabbitmqctl -q start_app >/dev/null 2>&1 || true; timeout 60 rabbitmqctl -q await_startup; }
  wait_port 5671 30 || { echo "RabbitMQ has no TLS listener on 127.0.0.1:5671 (see /etc/rabbitmq/conf.d/90-oncely-tls.conf)" >&2; exit 1; }
  amqp_answers || { echo "RabbitMQ on 127.0.0.1:5672 does not answer the AMQP protocol header" >&2; exit 1; }
  ! rabbitmq_few_sockets || { echo "RabbitMQ still allows too few sockets (see 'Limiting to' in /var/log/rabbitmq)" >&2; exit 1; }
  export RABBITMQ_TLS_URL=${RABBITMQ_TLS_URL:-amqps://guest:guest@localhost:5671/}
  export RABBITMQ_TLS_CA=${RABBITMQ_TLS_CA:-${RABBITMQ_TLS_DIR:-/var/lib/rabbitmq/oncely-tls}/ca.pem}
  rabbitmq_test_user
}

# amqp_answers reports whether the broker on 5672 answers the AMQP 0-9-1
# protocol header with its connection.start within 10 seconds.
amqp_answers() {
  local n
  n=$(timeout -s KILL 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672 && printf "AMQP\x00\x00\x09\x01" >&3 && head -c 7 <&3 | wc -c' 2>/dev/null) || return 1
  [ "${n:-0}" -gt 0 ]
}

# rabbitmq_few_sockets reports whether the running node limits itself to
# fewer sockets than the suite's parallel packages open (a node logs its
# limit when it starts; the newest line is the running node's).
rabbitmq_few_sockets() {
  local n
  n=$(grep -ho 'file handles ([0-9]* sockets)' /var/log/rabbitmq/rabbit@*.log 2>/dev/null | tail -1 | tr -dc '0-9')
  [ -n "$n" ] && [ "$n" -lt 4000 ]
}

# stop_rabbitmq stops the local node: rabbitmqctl stop, and when that does
# not end it within a minute (a wedged node), SIGKILL to its processes.
stop_rabbitmq() {
  local i=0
  timeout -s KILL 60 rabbitmqctl -q stop >/dev/null 2>&1 || true
  while port_open 5672 && ((i++ < 40)); do sleep 0.25; done
  if port_open 5672; then
    pkill -KILL -u rabbitmq beam.smp || true
    i=0
    while port_open 5672 && ((i++ < 40)); do sleep 0.25; done
  fi
}

# rabbitmq_test_user makes sure the tests' login works before any test runs:
# a broker left on this machine by hand may have lost or changed the default
# guest user, and every AMQP test would then fail at its handshake.
rabbitmq_test_user() {
  [ "$RABBITMQ_URL" = "amqp://guest:guest@127.0.0.1:5672/" ] || return 0
  if ! timeout 30 rabbitmqctl -q authenticate_user guest guest >/dev/null 2>&1; then
    log "RabbitMQ refuses guest/guest: restoring the test user"
    rabbitmqctl -q add_user guest guest >/dev/null 2>&1 || rabbitmqctl -q change_password guest guest >/dev/null
    rabbitmqctl -q set_user_tags guest administrator >/dev/null
  fi
  rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx / || rabbitmqctl -q add_vhost / >/dev/null
  rabbitmqctl -q set_permissions -p / guest '.*' '.*' '.*' >/dev/null
  timeout 30 rabbitmq-diagnostics -q check_port_connectivity >/dev/null ||
    { echo "RabbitMQ does not accept connections on its ports" >&2; rabbitmq-diagnostics -q listeners >&2 || true; exit 1; }
}

ensure_sqs() {
  command -v npm >/dev/null || apt_install nodejs npm
  "$root/scripts/sqs-emulator.sh"
}

# ensure_nats starts Debian's nats-server with JetStream on 127.0.0.1:4222
# (daemonized; its store and log under ${TMPDIR:-/tmp}/oncely-nats) unless a
# server already listens there.
ensure_nats() {
  port_open 4222 && return 0
  command -v nats-server >/dev/null || apt_install nats-server
  local dir=${TMPDIR:-/tmp}/oncely-nats
  mkdir -p "$dir/store"
  log "starting nats-server with JetStream (store and log in $dir)"
  (setsid nats-server -js -a 127.0.0.1 -p 4222 -sd "$dir/store" -l "$dir/nats-server.log" -P "$dir/nats-server.pid" </dev/null >/dev/null 2>&1 &)
  wait_port 4222 30 || { echo "nats-server did not start on 127.0.0.1:4222 (see $dir/nats-server.log)" >&2; exit 1; }
}

ensure_kafka() {
  local vars
  KAFKA_DIR=
  vars=$("$root/scripts/kafka.sh" start)
  eval "$vars"
  export KAFKA_BROKERS
  # The SASL_SSL listener of the adapters' TLS and SASL tests (set only when
  # kafka.sh started the broker or they were set already).
  export KAFKA_SASL_BROKERS KAFKA_TLS_CA KAFKA_SASL_USER KAFKA_SASL_PASSWORD
  if [ -n "$KAFKA_DIR" ]; then
    trap '"$root/scripts/kafka.sh" stop "$KAFKA_DIR"' EXIT
  fi
}

# ensure_redis starts Debian's redis-server on 127.0.0.1:6379 when nothing
# listens there: daemonized, no persistence (the tests need none), bound to
# 127.0.0.1 in protected mode. REDIS_URL points the tests at it.
ensure_redis() {
  export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
  port_open 6379 && return 0
  command -v redis-server >/dev/null || apt_install redis-server
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --protected-mode yes \
    --save '' --appendonly no --logfile "${TMPDIR:-/tmp}/oncely-redis.log" >/dev/null
  wait_port 6379 30 || { echo "Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
}

# ensure_chromium installs Debian's chromium for the browser tests when it is
# missing (they drive it headless; internal/browsertest) and exports its path
# as CHROMIUM_PATH, unless CHROMIUM_PATH names a browser already.
ensure_chromium() {
  if [ -z "${CHROMIUM_PATH:-}" ]; then
    command -v chromium >/dev/null || apt_install chromium
    CHROMIUM_PATH=$(command -v chromium)
  fi
  [ -x "$CHROMIUM_PATH" ] || command -v "$CHROMIUM_PATH" >/dev/null ||
    { echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable" >&2; exit 1; }
  export CHROMIUM_PATH
}

ensure_tools() {
  # kcat produces records for the Kafka interoperability test.
  command -v kcat >/dev/null || apt_install kcat
}

# cluster_faults runs the node-failure tests one cluster at a time: it
# starts the cluster (scripts/cluster.sh; private ports, never the shared
# services'), exports the variables it prints (NATS_CLUSTER_URL, …), runs
# the tests its file names (scripts/cluster.sh tests) in the packages that
# hold them, and stops it, so only one cluster loads the machine at a time.
cluster_faults() {
  local b line vars run
  local -a pkgs
  for b in $("$root/scripts/cluster.sh" list); do
    run=$("$root/scripts/cluster.sh" tests "$b")
    mapfile -t pkgs < <(grep -rlE --include='*_test.go' "^func ${run#^}" . | xargs -n1 dirname | sort -u)
    [ ${#pkgs[@]} -gt 0 ] || { echo "no tests match $run for cluster $b" >&2; return 1; }
    "$root/scripts/cluster.sh" stop "$b"
    vars=$("$root/scripts/cluster.sh" start "$b")
    while IFS= read -r line; do export "${line?}"; done <<<"$vars"
    log "node-failure tests on the $b cluster ($run)"
    go test -race -count=1 -timeout 20m -tags faults -p 1 -run "$run" "${pkgs[@]}" || { "$root/scripts/cluster.sh" stop "$b"; return 1; }
    "$root/scripts/cluster.sh" stop "$b"
  done
}

ensure_go
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

ensure_tools
ensure_chromium
ensure_postgres
ensure_rabbitmq
ensure_sqs
ensure_nats
ensure_kafka
ensure_redis

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tmp/*'))
[ -z "$unformatted" ] || { echo "gofmt would change:"; echo "$unformatted"; exit 1; }
log "go vet"
go vet -tags faults "${pkgs[@]}"
log "staticcheck"
go run "$STATICCHECK" -tags faults "${pkgs[@]}"

log "oncely vet (txescape, nodedupe, escape, settle)"
vettool=$(mktemp -d "${TMPDIR:-/tmp}/oncelyvet.XXXXXX")/oncelyvet
go build -o "$vettool" ./cmd/oncelyvet
go vet -tags faults -vettool="$vettool" "${pkgs[@]}"
rm -rf "$(dirname "$vettool")"

log "go test -race"
if [ $# -eq 0 ]; then
  # The crash tests (internal/crashrun) spend most of their time waiting on
  # the processes they kill and restart, leaving the CPU idle: they run
  # beside the other packages, four at a time, and print when they end.
  mapfile -t test_pkgs < <(go list ./... | grep -v '/internal/crashrun$')
  crash_log=$(mktemp "${TMPDIR:-/tmp}/oncely-crashrun.XXXXXX")
  go test -race -count=1 -timeout 25m -parallel 4 ./internal/crashrun/ >"$crash_log" 2>&1 &
  crash_pid=$!
  status=0
  go test -race -count=1 -timeout 25m "${test_pkgs[@]}" || status=$?
  crash_status=0
  wait "$crash_pid" || crash_status=$?
  cat "$crash_log"
  rm -f "$crash_log"
  [ "$status" -eq 0 ] && [ "$crash_status" -eq 0 ] || exit 1
else
  go test -race -count=1 -timeout 25m "${pkgs[@]}"
fi

if [ $# -eq 0 ]; then
  log "fault tests (serial: they stop and restart shared services)"
  mapfile -t fault_pkgs < <(grep -rl --include='*_test.go' '^//go:build faults' . | xargs -n1 dirname | sort -u)
  if [ ${#fault_pkgs[@]} -eq 0 ]; then
    echo "no fault tests found (files with //go:build faults)" >&2
    exit 1
  fi
  skip=""
  for b in $("$root/scripts/cluster.sh" list); do skip+="${skip:+|}$("$root/scripts/cluster.sh" tests "$b")"; done
  go test -race -count=1 -timeout 25m -tags faults -p 1 -run '^TestFault' -skip "$skip" "${fault_pkgs[@]}"
  cluster_faults
fi
log "all tests passed"
