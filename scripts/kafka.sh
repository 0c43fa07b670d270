#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft: broker and controller in one process) for
# the test suite, on 127.0.0.1.
#
#   eval "$(scripts/kafka.sh start)"   starts it and prints
#                                      KAFKA_BROKERS=127.0.0.1:<port> KAFKA_DIR=<dir>
#                                      and the secure listener's variables (below)
#   scripts/kafka.sh stop "$KAFKA_DIR" stops it and removes its data
#
# With KAFKA_BROKERS already set, start starts nothing and prints it back
# (with the KAFKA_SASL_* and KAFKA_TLS_CA variables that are set).
#
# Besides the PLAINTEXT listener the broker opens a SASL_SSL one for the
# adapters' TLS and SASL tests, printed as KAFKA_SASL_BROKERS=127.0.0.1:<port>:
# TLS with a certificate for 127.0.0.1 and localhost signed by a CA made
# (openssl, EC P-256) at every start, whose PEM file is KAFKA_TLS_CA; SASL
# PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for the user KAFKA_SASL_USER
# (oncely) with the password KAFKA_SASL_PASSWORD (random at every start). No
# authorizer: an authenticated user may do anything. Controller and
# inter-broker traffic stay on the plaintext listeners.
#
# The broker's jars (scripts/kafka/pom.xml: org.apache.kafka:kafka_2.13 and its
# runtime dependencies) come from Maven Central once and stay cached in
# .tmp/kafka/lib until the pom changes. The data directory is a fresh temporary
# folder on every start. Broker settings for tests: topics are never created
# on first use (the adapter's own topic creation is what is tested), groups
# rebalance without the initial delay, internal topics have one replica.
#
# Environment: KAFKA_PORT (first port tried, default 19092; the controller
# takes the next one, the SASL_SSL listener the one after), KAFKA_HEAP
# (default 1g: a day of benchmarks against one broker ran 512m out of
# heap), KAFKA_START_TIMEOUT (seconds, default 120).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/.tmp/kafka
lib=$cache/lib
pom=$root/scripts/kafka/pom.xml

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'kafka.sh: %s\n' "$*" >&2; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

apt_install() {
  log "installing $* from Debian's packages"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# fetch copies the broker's jars into $lib unless the cached copy was made
# from the current pom.
fetch() {
  local sum
  sum=$(sha256sum "$pom" | cut -d' ' -f1)
  [ "$(cat "$lib/.pom.sha256" 2>/dev/null)" = "$sum" ] && return 0
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  log "fetching Apache Kafka from Maven Central into $lib"
  rm -rf "$lib"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib" >&2 ||
    die "mvn could not fetch the broker's jars (scripts/kafka/pom.xml)"
  echo "$sum" >"$lib/.pom.sha256"
}

# free_ports prints three consecutive free ports, the first at or above $1.
free_ports() {
  local p
  for ((p = $1; p < $1 + 300; p += 3)); do
    if ! port_open "$p" && ! port_open $((p + 1)) && ! port_open $((p + 2)); then
      echo "$p"
      return 0
    fi
  done
  die "no three free consecutive ports from $1 on"
}

# make_tls writes into $1 a test CA (ca.pem) and the broker's PEM keystore
# (broker.pem: its unencrypted PKCS#8 key, then its certificate for 127.0.0.1
# and localhost, then the CA's).
make_tls() {
  local d=$1
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$d"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 30 \
    -subj "/CN=oncely test CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -subj "/CN=127.0.0.1" -keyout "$d/broker.key" -out "$d/broker.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/broker.ext"
  openssl x509 -req -in "$d/broker.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 30 -extfile "$d/broker.ext" -out "$d/broker.crt" 2>/dev/null
  openssl pkcs8 -topk8 -nocrypt -in "$d/broker.key" >"$d/broker.pem"
  cat "$d/broker.crt" "$d/ca.pem" >>"$d/broker.pem"
}

start() {
  if [ -n "${KAFKA_BROKERS:-}" ]; then
    log "using the Kafka at KAFKA_BROKERS=$KAFKA_BROKERS"
    printf 'KAFKA_BROKERS=%q\n' "$KAFKA_BROKERS"
    local v
    for v in KAFKA_SASL_BROKERS KAFKA_TLS_CA KAFKA_SASL_USER KAFKA_SASL_PASSWORD; do
      [ -z "${!v:-}" ] || printf '%s=%q\n' "$v" "${!v}"
    done
    return 0
  fi
  fetch
  local port cport sport dir id pid i user=oncely password
  port=$(free_ports "${KAFKA_PORT:-19092}")
  cport=$((port + 1))
  sport=$((port + 2))
  password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  dir=$(mktemp -d "${TMPDIR:-/tmp}/oncely-kafka.XXXXXX")
  make_tls "$dir/tls" || { rm -rf "$dir"; die "openssl could not make the test certificates"; }
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$sport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL
listener.name.sasl_ssl.ssl.keystore.type=PEM
listener.name.sasl_ssl.ssl.keystore.location=$dir/tls/broker.pem
listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$user="$password";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
EOF
  # A cluster ID is 16 random bytes in unpadded base64url.
  id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  local java=(java "-Xms256m" "-Xmx${KAFKA_HEAP:-1g}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError
    -Djava.awt.headless=true "-Dlog4j2.configurationFile=$root/scripts/kafka/log4j2.properties" -cp "$lib/*")
  "${java[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" \
    --add-scram "SCRAM-SHA-256=[name=$user,password=$password]" \
    --add-scram "SCRAM-SHA-512=[name=$user,password=$password]" >"$dir/format.log" 2>&1 ||
    { cat "$dir/format.log" >&2; rm -rf "$dir"; die "formatting the storage directory failed"; }
  log "starting Apache Kafka on 127.0.0.1:$port, SASL_SSL on 127.0.0.1:$sport (data in $dir)"
  nohup "${java[@]}" kafka.Kafka "$dir/server.properties" </dev/null >"$dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/pid"
  for ((i = 0; i < ${KAFKA_START_TIMEOUT:-120} * 4; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$dir/server.log" >&2
      rm -rf "$dir"
      die "the broker exited during start-up"
    fi
    if grep -q 'Kafka Server started' "$dir/server.log" && port_open "$port" && port_open "$sport"; then
      log "Kafka is up on 127.0.0.1:$port after $((i / 4))s"
      printf 'KAFKA_BROKERS=127.0.0.1:%d KAFKA_DIR=%q\n' "$port" "$dir"
      printf 'KAFKA_SASL_BROKERS=127.0.0.1:%d KAFKA_TLS_CA=%q KAFKA_SASL_USER=%q KAFKA_SASL_PASSWORD=%q\n' \
        "$sport" "$dir/tls/ca.pem" "$user" "$password"
      return 0
    fi
    sleep 0.25
  done
  tail -n 40 "$dir/server.log" >&2
  stop "$dir"
  die "the broker did not start within ${KAFKA_START_TIMEOUT:-120}s"
}

# stop ends the broker started in $1 (SIGTERM, then SIGKILL after 30s) and
# removes its directory. Without a directory it does nothing.
stop() {
  local dir=${1:-} pid i
  [ -n "$dir" ] && [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping Apache Kafka (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 120 && $(kill -0 "$pid" 2>/dev/null && echo 1 || echo 0); i++)); do sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
fetch) fetch ;;
*) die "usage: $0 start | stop DIR | fetch" ;;
esac
