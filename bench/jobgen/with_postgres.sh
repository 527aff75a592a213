#!/bin/sh
# with_postgres.sh BIN PGDATA PORT -- COMMAND...: COMMAND with a PostgreSQL of its own.
#
# Why: the jobgen benchmark's two sides do much of their work inside PostgreSQL (the COPY
# peer: nearly all of it). Started here, the postmaster and its backends belong to the side's
# process tree (pg_ctl's postmaster is orphaned to the runner's subreaper, which reaps it at
# the stop), so their CPU is counted for the side that used them, start and stop included.
# Run as root, PostgreSQL runs as the user embedded_postgres (as harvestflow.services does).
set -u
bin=$1 pgdata=$2 port=$3
shift 4
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid=embedded_postgres --regid=embedded_postgres --clear-groups "$@"
  else
    "$@"
  fi
}
opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='' -c shared_buffers=128MB"
(cd / && as_pg "$bin/pg_ctl" -D "$pgdata" -w -t 60 -l "$pgdata/server.log" -o "$opts" start) \
  >/dev/null || { echo "with_postgres.sh: PostgreSQL did not start (see $pgdata/server.log)" >&2; exit 3; }
"$@"
rc=$?
(cd / && as_pg "$bin/pg_ctl" -D "$pgdata" -w -t 60 -m fast stop) >/dev/null || rc=3
exit $rc
