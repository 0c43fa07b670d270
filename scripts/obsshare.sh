#!/usr/bin/env bash
# obsshare.sh BROKER [ROUNDS] — the share of the realistic pipeline's CPU
# spent in observability code, from CPU profiles of the broker's
# BenchmarkObservability (BROKER: kafka or rabbitmq; ROUNDS default 5).
#
# The rate ratios that benchmark prints swing by 30–60 % a round on a shared
# machine; a profile's shares barely move with load. For each drain with
# metrics, and with metrics plus unsampled tracing, it prints the share of
# the samples whose stack holds oncely's metrics or tracing middleware,
# Prometheus or OpenTelemetry (the handler's own work below the middleware
# excluded), and the GC workers' share next to the bare drain's: tracing's
# allocations cost GC time outside those stacks. The drain is CPU-bound
# here (two cores, a 25 µs handler), so a share of CPU is the rate it costs.
# The last line is the medians.
#
# Needs the broker (KAFKA_BROKERS, or kfake in a child process; RABBITMQ_URL)
# as the benchmark does.
set -euo pipefail
broker=${1:?usage: obsshare.sh kafka|rabbitmq [rounds]}
rounds=${2:-5}
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

case $broker in
kafka)
	ONCELY_KAFKA_BENCH_PROFILE=$dir/p ONCELY_BENCH_HANDLER=json ONCELY_KAFKA_BENCH_RECORDS=${ONCELY_KAFKA_BENCH_RECORDS:-300000} \
		ONCELY_BENCH_ROUNDS=$rounds go test -timeout 60m -run '^$' -bench Observability -benchtime 1x ./adapters/kafka/ >&2 ;;
rabbitmq)
	ONCELY_BENCH_PROFILE=$dir/p ONCELY_BENCH_HANDLER=json ONCELY_BENCH_MESSAGES=${ONCELY_BENCH_MESSAGES:-60000} \
		ONCELY_BENCH_ROUNDS=$rounds go test -timeout 60m -run '^$' -bench Observability -benchtime 1x ./adapters/rabbitmq/ >&2 ;;
*)
	echo "obsshare.sh: unknown broker $broker (kafka or rabbitmq)" >&2
	exit 2 ;;
esac

obs='oncely/middleware/metrics|oncely/middleware/tracing|prometheus|opentelemetry'
gc='gcBgMarkWorker|gcAssist|bgsweep|bgscavenge'
# share PROFILE FOCUS [IGNORE]: the focused samples' percentage of the total.
share() {
	go tool pprof -top -nodecount=1000000 -focus="$2" ${3:+-ignore="$3"} "$1" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for [^,]*, \([0-9.]*\)% of .*/\1/p' | head -1
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : "n/a")}'; }

for mode in oncely oncely-metrics oncely-tracing; do
	: >"$dir/$mode.obs"
	: >"$dir/$mode.gc"
	for p in "$dir"/p.obs-"$mode"-[0-9]*; do
		[[ $p == *.alloc ]] && continue
		o=$(share "$p" "$obs" benchtest)
		g=$(share "$p" "$gc")
		echo "${o:-0}" >>"$dir/$mode.obs"
		echo "${g:-0}" >>"$dir/$mode.gc"
		echo "$broker $(basename "$p"): observability ${o:-0}% of CPU, GC workers ${g:-0}%"
	done
done
echo "$broker medians over $rounds rounds: observability metrics $(median <"$dir/oncely-metrics.obs")%," \
	"metrics+unsampled tracing $(median <"$dir/oncely-tracing.obs")% of CPU;" \
	"GC workers bare $(median <"$dir/oncely.gc")%, metrics $(median <"$dir/oncely-metrics.gc")%," \
	"metrics+tracing $(median <"$dir/oncely-tracing.gc")%"
