# Sourced by scripts/test: starts a throwaway PostgreSQL for the tests of
# store/pgstore and the replica tests, and exports its URL as
# AIBUDDY_TEST_PG_URL (and AIBUDDY_REQUIRE_PG=1, so those tests fail rather
# than skip when it is missing). The server lives in a temporary folder:
# data, log and unix socket (in sock/); it listens on the socket and on 127.0.0.1 at
# a free port; a trap stops it and removes the folder when the calling
# shell exits. initdb refuses to run as root: as root the server runs as
# the unprivileged user nobody. Needs PostgreSQL's server binaries
# (Debian package postgresql; installed when missing).
#
#   source scripts/pgtemp.sh && pgtemp_start   # then AIBUDDY_TEST_PG_URL is set

pgtemp_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { printf '%s\n' "$d"; return 0; }
  done
  return 1
}

pgtemp_start() {
  local bin
  if ! bin=$(pgtemp_bin); then
    local sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
    printf '==> installing Debian package postgresql\n' >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql
    bin=$(pgtemp_bin) || { echo "pgtemp: no PostgreSQL server binaries after installing postgresql" >&2; return 1; }
  fi
  PGTEMP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/aibuddy-pg.XXXXXX")
  # The socket sits in a subfolder: the local sandbox masks the host's
  # unix sockets down to /tmp/*/*, and one there it cannot reach would
  # stop every confined command of the tests.
  mkdir -m 0755 "$PGTEMP_DIR/sock"
  chmod 0755 "$PGTEMP_DIR"
  local run=()
  if [[ $(id -u) == 0 ]]; then
    chown nobody "$PGTEMP_DIR" "$PGTEMP_DIR/sock"
    run=(runuser -u nobody --)
  fi
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${run[@]}" "$bin/initdb" -D "$PGTEMP_DIR/data" -U aibuddy --auth=trust -E UTF8 --no-locale >"$PGTEMP_DIR/initdb.log" 2>&1 ||
    { cat "$PGTEMP_DIR/initdb.log" >&2; return 1; }
  # fsync off: a throwaway server; the tests kill clients, never the server.
  "${run[@]}" "$bin/pg_ctl" -D "$PGTEMP_DIR/data" -l "$PGTEMP_DIR/server.log" -w -t 60 \
    -o "-k $PGTEMP_DIR/sock -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null ||
    { cat "$PGTEMP_DIR/server.log" >&2; return 1; }
  PGTEMP_STOP=("${run[@]}" "$bin/pg_ctl" -D "$PGTEMP_DIR/data" -m immediate -w stop)
  trap pgtemp_stop EXIT
  export AIBUDDY_TEST_PG_URL="postgres://aibuddy@/postgres?host=$PGTEMP_DIR/sock&port=$port&sslmode=disable"
  export AIBUDDY_REQUIRE_PG=1
  printf '==> throwaway PostgreSQL on port %s (socket in %s)\n' "$port" "$PGTEMP_DIR/sock" >&2
}

pgtemp_stop() {
  if [[ -n ${PGTEMP_DIR:-} ]]; then
    "${PGTEMP_STOP[@]}" >/dev/null 2>&1 || true
    rm -rf "$PGTEMP_DIR"
    PGTEMP_DIR=""
  fi
}
