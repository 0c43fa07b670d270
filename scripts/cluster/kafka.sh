# shellcheck shell=bash
# Sourced by scripts/cluster.sh: an Apache Kafka cluster of three KRaft nodes
# kafka-1..kafka-3, each broker and controller in one JVM (a controller
# quorum of three), with the jars scripts/kafka.sh fetches (fetched once,
# cached in .tmp/kafka/lib). Topics get replication factor 3 and
# min.insync.replicas=2 by default (internal topics too), so the cluster
# keeps every acknowledged (acks=all) record and stays writable with one
# node down. Small for a 2-core machine: 384 MB heaps, 1 MB segments, few
# threads and partitions. Prints KAFKA_CLUSTER_BROKERS=127.0.0.1:p1,... (the
# brokers' listeners) and KAFKA_CLUSTER_NODES=kafka-1=127.0.0.1:p1,...
#
# Environment: KAFKA_CLUSTER_HEAP (the JVMs' -Xmx, default 384m).

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_kafka='^TestFaultKafkaCluster'

start_kafka() {
  local root c i n port id lib props broker=() controller=() formats=() voters="" brokers="" nodes="" began=$SECONDS
  root=$(cd "$dir/../.." && pwd)
  lib=$root/.tmp/kafka/lib
  c=$state/kafka
  [ -d "$c" ] && die "a kafka cluster runs already (scripts/cluster.sh stop kafka first)"
  "$root/scripts/kafka.sh" fetch
  mkdir -p "$c"
  for i in 1 2 3; do free_port; broker[i]=$port; free_port; controller[i]=$port; voters+="$i@127.0.0.1:${controller[i]},"; done
  # A cluster ID is 16 random bytes in unpadded base64url.
  id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  local java=("$(command -v java)" -Xms128m "-Xmx${KAFKA_CLUSTER_HEAP:-384m}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$root/scripts/kafka/log4j2.properties" -cp "$lib/*")
  for i in 1 2 3; do
    n=$c/kafka-$i
    props=$n/server.properties
    mkdir -p "$n"
    cat >"$props" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=${voters%,}
listeners=PLAINTEXT://127.0.0.1:${broker[i]},CONTROLLER://127.0.0.1:${controller[i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${broker[i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$n/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
unclean.leader.election.enable=false
offsets.topic.replication.factor=3
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
log.segment.bytes=1048576
log.retention.bytes=67108864
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
background.threads=2
num.recovery.threads.per.data.dir=1
EOF
    # The three formats run side by side (a JVM start each).
    "${java[@]}" kafka.tools.StorageTool format -t "$id" -c "$props" >"$n/format.log" 2>&1 &
    formats[i]=$!
    printf '%s\n' "${java[@]}" kafka.Kafka "$props" >"$n/cmd"
    echo "${broker[i]}" >"$n/port"
    # A restarted node recovers its logs and catches up with the metadata
    # before it opens its listener: on a loaded machine that took over 30 s.
    echo 180 >"$n/wait"
    brokers+="127.0.0.1:${broker[i]},"
    nodes+="kafka-$i=127.0.0.1:${broker[i]},"
  done
  for i in 1 2 3; do
    wait "${formats[i]}" || { cat "$c/kafka-$i/format.log" >&2; die "formatting kafka-$i's storage failed"; }
  done
  log "starting kafka-1..3 (data in $c)"
  # The brokers open their listener only once the controller quorum (two of
  # three) elected a leader: start all three, then wait for each.
  for i in 1 2 3; do run_node "$c/kafka-$i" 0; done
  for i in 1 2 3; do wait_port "${broker[i]}" 180 || die "kafka-$i did not start on port ${broker[i]} (see $c/kafka-$i/out.log)"; done
  log "kafka-1..3 up after $((SECONDS - began))s"
  echo "KAFKA_CLUSTER_BROKERS=${brokers%,}"
  echo "KAFKA_CLUSTER_NODES=${nodes%,}"
}
