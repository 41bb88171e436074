#!/usr/bin/env bash
# Make the system PostgreSQL on 127.0.0.1:5432 (Debian bookworm, trust auth) have pgvector.
# bookworm ships no pgvector, so build it from Debian trixie's *source* package
# (deb-src only: no trixie binaries are ever installed).
# Exit codes: 0 = installed/already installed, 3 = no PostgreSQL on 127.0.0.1:5432 (skip), other = failure.
set -euo pipefail

WANT=0.8.0
SRC_LIST=/etc/apt/sources.list.d/engram-trixie-src.sources
CHECK_DB=engram_pgvector_check
log() { echo "[pgvector] $*"; }
die() { echo "[pgvector] ERROR: $*" >&2; exit 1; }
q() { PGOPTIONS="-c client_min_messages=warning" psql -h 127.0.0.1 -p 5432 -U postgres -d "${2:-postgres}" -v ON_ERROR_STOP=1 -XAtqc "$1"; }

if ! q 'select 1' >/dev/null 2>&1; then
  log "no PostgreSQL on 127.0.0.1:5432; skipping"
  exit 3
fi
PG_MAJOR=$(( $(q 'show server_version_num') / 10000 ))
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
log "server: $(q 'show server_version') (major $PG_MAJOR)"

have=$(q "select default_version from pg_available_extensions where name='vector'")
if [[ -n $have ]] && [[ $(printf '%s\n' "$WANT" "$have" | sort -V | head -1) == "$WANT" ]]; then
  log "vector $have already installed"
  exit 0
fi
[[ -n $have ]] && log "vector $have is older than $WANT; rebuilding"

[[ $(id -u) == 0 ]] || die "must run as root (apt-get, make install)"
export DEBIAN_FRONTEND=noninteractive
if [[ ! -f $SRC_LIST ]]; then
  log "adding trixie deb-src entry: $SRC_LIST"
  cat >"$SRC_LIST" <<'EOF'
# Added by Engram .ci/pgvector.sh: trixie SOURCE packages only (to build pgvector).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi
log "apt-get update"
apt-get update -qq
log "installing build deps (bookworm): build-essential dpkg-dev postgresql-server-dev-$PG_MAJOR"
apt-get install -y -qq --no-install-recommends build-essential dpkg-dev "postgresql-server-dev-$PG_MAJOR" >/dev/null

versions=$(apt-cache showsrc pgvector | awk '/^Version:/ {print $2}' | sort -uV)
[[ -n $versions ]] || die "no pgvector source package found (is $SRC_LIST reachable?)"
ver=$(grep -m1 "^$WANT-" <<<"$versions" || tail -1 <<<"$versions")
[[ $ver == "$WANT-"* ]] || log "WARNING: trixie has no pgvector $WANT source; using $ver"
log "trixie pgvector source version: $ver"

work=$(mktemp -d /tmp/engram-pgvector.XXXXXX)
trap 'rm -rf "$work"' EXIT
chown _apt "$work" 2>/dev/null || true  # lets apt download sandboxed
cd "$work"
apt-get source -qq "pgvector=$ver" || die "apt-get source pgvector=$ver failed"
cd pgvector-*/
# OPTFLAGS="": upstream defaults to -march=native, which crashes on other CPUs.
# with_llvm=no: skip JIT bitcode (would need clang; PGXS on Debian enables it).
mk=(make -s OPTFLAGS="" with_llvm=no PG_CONFIG="$PG_CONFIG")
log "building ($PWD)"
"${mk[@]}" -j"$(nproc)"
log "installing"
"${mk[@]}" install

log "verifying in scratch database $CHECK_DB"
q "drop database if exists $CHECK_DB" >/dev/null
q "create database $CHECK_DB" >/dev/null
dist=$(q "create extension if not exists vector; select '[1,2,3]'::vector <=> '[1,2,4]'" "$CHECK_DB")
ext=$(q "select extversion from pg_extension where extname='vector'" "$CHECK_DB")
q "drop database $CHECK_DB" >/dev/null
log "OK: vector $ext works (cosine distance [1,2,3] <=> [1,2,4] = $dist)"
