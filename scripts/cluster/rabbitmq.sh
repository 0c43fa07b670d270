# shellcheck shell=bash
# Sourced by scripts/cluster.sh: a RabbitMQ cluster of three nodes
# (rabbitmq-1..rabbitmq-3, Erlang node names rabbitmq-N@localhost, never the
# shared node's rabbit@<host>), joined with rabbitmqctl join_cluster. Each node
# has its own AMQP and distribution ports on 127.0.0.1, its own config,
# database and logs under the cluster directory, no plugins (management off),
# and a small footprint (one scheduler, a 256 MiB memory watermark). The
# nodes share an Erlang cookie of their own (HOME is the cluster directory)
# and the host's epmd. Quorum queues get all three nodes as members
# (quorum_cluster_size 3). The at-least-once dead-letter worker publishes
# again what its target queue did not confirm after 10 s (3 min by default):
# a retry copy expired into a source queue whose leader died waits no longer
# (see docs/brokers.md). Prints
# RABBITMQ_CLUSTER_URL=amqp://guest:guest@127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/
# (oncely's multi-host form), RABBITMQ_CLUSTER_NODES=rabbitmq-1=127.0.0.1:p1,...
# and RABBITMQ_CLUSTER_CTL, a rabbitmqctl for these nodes: CTL NODE ARGS...

rabbitmq_bin=/usr/lib/rabbitmq/bin

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_rabbitmq='^TestFaultRabbitMQCluster'

start_rabbitmq() {
  command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
  local c=$state/rabbitmq i n amqp=() dist=() url="" nodes="" t0=$SECONDS
  [ -d "$c" ] && die "a rabbitmq cluster runs already (scripts/cluster.sh stop rabbitmq first)"
  mkdir -p "$c"
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$c/.erlang.cookie"
  chmod 400 "$c/.erlang.cookie"
  # The CLI runs as this user with the cluster's cookie, straight from
  # RabbitMQ's own bin directory (Debian's wrapper would switch to the
  # rabbitmq user and the shared node's cookie).
  cat >"$c/rabbitmqctl" <<EOF
#!/bin/sh
# rabbitmqctl for the node NODE of this cluster: rabbitmqctl NODE ARGS...
node=\$1
shift
HOME=$c exec $rabbitmq_bin/rabbitmqctl -n "\$node@localhost" "\$@"
EOF
  chmod +x "$c/rabbitmqctl"
  for i in 1 2 3; do free_port; amqp[i]=$port; free_port; dist[i]=$port; done
  for i in 1 2 3; do
    n=$c/rabbitmq-$i
    mkdir -p "$n/conf.d" "$n/log" "$n/mnesia"
    cat >"$n/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:${amqp[i]}
vm_memory_high_watermark.absolute = 256MiB
disk_free_limit.absolute = 50MB
cluster_partition_handling = pause_minority
log.file.level = warning
log.console = false
EOF
    cat >"$n/advanced.config" <<EOF
[{rabbit, [{quorum_cluster_size, 3}, {dead_letter_worker_publisher_confirm_timeout, 10000}]},
 {kernel, [{inet_dist_use_interface, {127,0,0,1}}]}].
EOF
    : >"$n/enabled_plugins.conf"
    : >"$n/rabbitmq-env.conf"
    # RABBITMQ_ALLOW_INPUT makes the start script exec the VM instead of
    # running it as a child, so the pid cluster.sh records (and kill sends
    # SIGKILL to) is the beam process's; -noinput keeps the shell off.
    printf '%s\n' env "HOME=$c" "RABBITMQ_NODENAME=rabbitmq-$i@localhost" \
      RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 "RABBITMQ_NODE_PORT=${amqp[i]}" "RABBITMQ_DIST_PORT=${dist[i]}" \
      "RABBITMQ_CONFIG_FILE=$n/rabbitmq.conf" "RABBITMQ_CONFIG_FILES=$n/conf.d" \
      "RABBITMQ_ADVANCED_CONFIG_FILE=$n/advanced.config" "RABBITMQ_CONF_ENV_FILE=$n/rabbitmq-env.conf" \
      "RABBITMQ_ENABLED_PLUGINS_FILE=$n/enabled_plugins.conf" RABBITMQ_ENABLED_PLUGINS= \
      "RABBITMQ_PLUGINS_EXPAND_DIR=$n/plugins" "RABBITMQ_MNESIA_BASE=$n/mnesia" "RABBITMQ_LOG_BASE=$n/log" \
      "RABBITMQ_PID_FILE=$n/beam.pid" RABBITMQ_ALLOW_INPUT=1 \
      "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-noinput +S 1:1 +A 4 +sbwt none +sbwtdcpu none +sbwtdio none" \
      "$rabbitmq_bin/rabbitmq-server" >"$n/cmd"
    echo "${amqp[i]}" >"$n/port"
    echo 180 >"$n/wait" # a loaded 2-core machine boots a node in 30-60 s
    url+="127.0.0.1:${amqp[i]},"
    nodes+="rabbitmq-$i=127.0.0.1:${amqp[i]},"
  done
  log "starting rabbitmq-1..3 (data in $c)"
  # Booting takes the longest: the three boot side by side.
  local pids=()
  for i in 1 2 3; do run_node "$c/rabbitmq-$i" & pids[i]=$!; done
  for i in 1 2 3; do wait "${pids[i]}" || die "rabbitmq-$i did not start"; done
  for i in 1 2 3; do timeout 120 "$c/rabbitmqctl" "rabbitmq-$i" -q await_startup >/dev/null || die "rabbitmq-$i did not boot (see $c/rabbitmq-$i/log)"; done
  for i in 2 3; do
    log "rabbitmq-$i joins rabbitmq-1"
    "$c/rabbitmqctl" "rabbitmq-$i" -q stop_app >/dev/null
    "$c/rabbitmqctl" "rabbitmq-$i" -q join_cluster rabbitmq-1@localhost >/dev/null
    "$c/rabbitmqctl" "rabbitmq-$i" -q start_app >/dev/null
  done
  for i in 1 2 3; do timeout 120 "$c/rabbitmqctl" "rabbitmq-$i" -q await_startup >/dev/null || die "rabbitmq-$i did not start again after joining"; done
  [ "$("$c/rabbitmqctl" rabbitmq-1 -q eval 'length(rabbit_nodes:all_running()).')" = 3 ] || die "the cluster does not have three running nodes"
  log "rabbitmq cluster up in $((SECONDS - t0)) s"
  echo "RABBITMQ_CLUSTER_URL=amqp://guest:guest@${url%,}/"
  echo "RABBITMQ_CLUSTER_NODES=${nodes%,}"
  echo "RABBITMQ_CLUSTER_CTL=$c/rabbitmqctl"
}
