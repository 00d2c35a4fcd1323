#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432, starting the local cluster if it is down.
set -u
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
ready && exit 0
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "PostgreSQL is down; starting cluster $version/main" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
fi
for _ in $(seq 1 30); do ready && exit 0; sleep 1; done
echo "PostgreSQL is not reachable on 127.0.0.1:5432 and could not be started; the suite needs it (see README, 'Running the tests')." >&2
exit 1
