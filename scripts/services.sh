#!/usr/bin/env bash
# Make sure the services the integration tests need are installed and running (CI runs on a fresh machine).
# PostgreSQL and Redis: started if down, installed from Debian if absent. moto's S3 server is started by the tests.
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
[ -d /etc/postgresql ] || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
# Tests connect as postgres over TCP; a fresh Debian cluster wants a password there, so allow trust on loopback.
if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc 'select 1' >/dev/null 2>&1; then
  hba=$(ls /etc/postgresql/*/main/pg_hba.conf | head -n1)
  sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main reload
  sleep 1
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
echo "services ready: PostgreSQL 127.0.0.1:5432, Redis 127.0.0.1:6379"
