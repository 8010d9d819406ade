#!/bin/sh
# Entrypoint of localhost/notify-dev-postgresql (cli/bin/images.sh): Debian's PostgreSQL set up from the environment
# as the official postgres image sets it up, for the chart's dev mode (helm/notify/templates/dev/postgresql.yaml).
#
# On an empty PGDATA it makes a cluster whose superuser is POSTGRES_USER (default postgres) with the password
# POSTGRES_PASSWORD, which every TCP connection must give (scram-sha-256; the Unix socket, reached from inside the
# container only, trusts), and the database POSTGRES_DB (default: the user's name). Then it runs the command, postgres
# by default, which listens on all addresses. It writes nothing outside PGDATA and /var/run/postgresql, so the root
# file system can be read-only.
set -eu

# `docker run <image> -c name=value` passes options to postgres, as with the official image.
case "${1:-}" in -*) set -- postgres "$@" ;; esac

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?must be set to initialize an empty PGDATA: TCP connections log in with it}"
  user="${POSTGRES_USER:-postgres}"
  database="${POSTGRES_DB:-$user}"
  # C.UTF-8 comes with glibc: the image generates no other locale.
  printf '%s\n' "$POSTGRES_PASSWORD" | initdb --username="$user" --pwfile=/dev/stdin --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$database" != postgres ]; then
    # On a server that only this container reaches (no TCP), as the official image does it.
    pg_ctl --silent --wait --options="-c listen_addresses=''" start
    echo 'CREATE DATABASE :"database";' | psql --quiet --no-psqlrc -v ON_ERROR_STOP=1 -v database="$database" \
      --username="$user" --dbname=postgres
    pg_ctl --silent --wait --mode=fast stop
  fi
fi

exec "$@"
