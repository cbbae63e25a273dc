#!/usr/bin/env bash
# Install (Debian's package) and start PostgreSQL on 127.0.0.1 with a `heart` role and a
# `heart_test` database, for the store tests. Idempotent.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if ! pg_lsclusters -h 2>/dev/null | grep -q online; then
  cluster=$(pg_lsclusters -h | awk 'NR==1 {print $1" "$2}')
  if [ -z "$cluster" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -1)
    pg_createcluster "$version" main >/dev/null
    cluster="$version main"
  fi
  pg_ctlcluster $cluster start
fi
as_pg() { su postgres -c "$1"; }
as_pg "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='heart'\"" | grep -q 1 \
  || as_pg "psql -qc \"CREATE ROLE heart LOGIN PASSWORD 'heart' CREATEDB\""
as_pg "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='heart_test'\"" | grep -q 1 \
  || as_pg "createdb -O heart heart_test"
echo "PostgreSQL ready on 127.0.0.1:5432 (database heart_test)"
