#!/usr/bin/env bash
# Gives the local RabbitMQ a TLS listener for the amqps:// tests: a test CA
# and a server certificate for localhost and 127.0.0.1 (openssl, EC P-256,
# valid ten years) in $DIR, and /etc/rabbitmq/conf.d/90-oncely-tls.conf (read
# by RabbitMQ 3.9+ besides rabbitmq.conf) adding a listener on
# 127.0.0.1:5671. The plain listener (5672) is left as it is, and clients are
# not asked for certificates (verify_none).
#
# Idempotent: files already in place (and a certificate valid for another
# day) are kept. Prints "changed" when it wrote something, so the caller
# knows a running broker must restart to load it. It neither starts nor stops
# RabbitMQ; scripts/test.sh does. Run as root after rabbitmq-server is
# installed (the key is made readable by the rabbitmq user).
#
# Environment: RABBITMQ_TLS_DIR (default /var/lib/rabbitmq/oncely-tls).
set -euo pipefail

DIR=${RABBITMQ_TLS_DIR:-/var/lib/rabbitmq/oncely-tls}
CONF=/etc/rabbitmq/conf.d/90-oncely-tls.conf
changed=

mkdir -p "$DIR"
if [ ! -s "$DIR/ca.pem" ] || [ ! -s "$DIR/server.pem" ] || [ ! -s "$DIR/server.key" ] ||
	! openssl x509 -checkend 86400 -noout -in "$DIR/server.pem" >/dev/null 2>&1; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj "/CN=oncely test CA" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=localhost" -keyout "$tmp/server.key" -out "$tmp/server.csr" 2>/dev/null
	printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature' \
		'extendedKeyUsage=serverAuth' 'subjectAltName=DNS:localhost,IP:127.0.0.1' >"$tmp/server.ext"
	openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
		-days 3650 -extfile "$tmp/server.ext" -out "$tmp/server.pem" 2>/dev/null
	install -m 0644 "$tmp/ca.pem" "$tmp/server.pem" "$DIR/"
	install -m 0600 "$tmp/server.key" "$DIR/"
	changed=1
fi
chown -R rabbitmq:rabbitmq "$DIR" 2>/dev/null || true

want="# Written by oncely's scripts/rabbitmq-tls.sh: a TLS listener for the amqps:// tests.
listeners.ssl.1 = 127.0.0.1:5671
ssl_options.cacertfile = $DIR/ca.pem
ssl_options.certfile = $DIR/server.pem
ssl_options.keyfile = $DIR/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false"
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
	mkdir -p "$(dirname "$CONF")"
	printf '%s\n' "$want" >"$CONF"
	changed=1
fi
[ -z "$changed" ] || echo changed
