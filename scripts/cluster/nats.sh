# shellcheck shell=bash
# Sourced by scripts/cluster.sh: a NATS cluster of three nats-servers with
# JetStream (nodes nats-1..nats-3). Prints
# NATS_CLUSTER_URL=nats://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3 (the form both
# oncely's nats:// URLs and nats.go's Connect read as a server list) and
# NATS_CLUSTER_NODES=nats-1=127.0.0.1:p1,...

# The node-failure tests that need this cluster (scripts/test.sh runs them with it).
tests_nats='^TestFaultNATSCluster'

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
