#!/usr/bin/env bash
# `npm run images [-- <name>...]`: Notify's images and those of the chart's dev dependencies, built on this machine with
# buildah, with no container registry. Each is tagged localhost/notify-<name>:<tag> (NOTIFY_IMAGE_TAG, default dev);
# names given as arguments (gateway, dev-redis, ...) build and check only those. `buildah push` sends them to an
# operator's registry (docs/operations.md).
#
# Everything starts from a Debian root filesystem made here from Debian's packages (debootstrap, minbase, with CA
# certificates), kept in buildah's storage as localhost/notify-debian-base:<suite>.
#   - The services: every target of the Dockerfile, on a base (its NODE_IMAGE) that adds the Node binary of the `node`
#     npm package this checkout runs on and npm from the npm registry, laid out as the official node image lays them out
#     (/usr/local/bin/node, npm's package in /usr/local/lib/node_modules). That base is made once per Node version; the
#     services' layers are cached by buildah between runs (--layers).
#   - The chart's dev dependencies (helm/notify/templates/dev/), from Debian's packages: dev-postgresql (PostgreSQL 15,
#     set up by cli/images/postgresql-entrypoint.sh), dev-redis, dev-nats (nats-server 2.9), and dev-mail-sink: Mailpit,
#     which Debian lacks, built from the Go module proxy at the version cli/images/mailpit/go.mod requires. Each is
#     rebuilt only when its recipe changes.
# Each image is then run once as the chart runs it, and the script fails if one does not work.
#
# Needs root (buildah's storage is /var/lib/containers) and, for Mailpit, Go; buildah, debootstrap and curl are
# installed from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

service_targets=(gateway auth-svc dispatch-svc mailer-svc webhook-svc bounce-svc toolbox)
dev_targets=(postgresql redis nats mail-sink)
tag="${NOTIFY_IMAGE_TAG:-dev}"
debian_suite=bookworm
debian_mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debian_security_mirror="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
debian_base="localhost/notify-debian-base:$debian_suite"
# The checks' clients reach the dev images' servers through an IPv4 address of the machine's, as other pods do, rather
# than through loopback only.
address="$(hostname -I | tr ' ' '\n' | grep -m1 -E '^[0-9.]+$' || echo 127.0.0.1)"

services=()
devs=()
[ "$#" -gt 0 ] || set -- "${service_targets[@]}" "${dev_targets[@]/#/dev-}"
for name in "$@"; do
  if [[ " ${service_targets[*]} " == *" $name "* ]]; then
    services+=("$name")
  elif [[ $name == dev-* && " ${dev_targets[*]} " == *" ${name#dev-} "* ]]; then
    devs+=("${name#dev-}")
  else
    echo "npm run images: no image $name; the images: ${service_targets[*]} ${dev_targets[*]/#/dev-}" >&2
    exit 2
  fi
done

missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "npm run images: installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

make_debian_base() {
  local work rootfs container
  work="$(mktemp -d)"
  rootfs="$work/rootfs"
  trap 'rm -rf "$work"' RETURN
  echo "npm run images: making $debian_base (debootstrap, minbase)"
  debootstrap --variant=minbase --include=ca-certificates "$debian_suite" "$rootfs" "$debian_mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; return 1; }
  # Packages the dev images install come with the suite's updates and security fixes (debootstrap lists the release
  # only), and without what is removed here: documentation but the copyright notices, man pages, translations.
  printf 'deb %s %s main\n' "$debian_mirror" "$debian_suite" "$debian_mirror" "$debian_suite-updates" \
    "$debian_security_mirror" "$debian_suite-security" >"$rootfs/etc/apt/sources.list"
  printf 'path-exclude %s\n' '/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*' \
    >"$rootfs/etc/dpkg/dpkg.cfg.d/notify-slim"
  echo 'path-include /usr/share/doc/*/copyright' >>"$rootfs/etc/dpkg/dpkg.cfg.d/notify-slim"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
    "$rootfs"/usr/share/locale/*
  find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
  container="$(buildah from scratch)"
  cp -a "$rootfs/." "$(buildah mount "$container")/"
  buildah umount "$container" >/dev/null
  apt_install "$container"
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label org.opencontainers.image.description="Debian $debian_suite, minbase" "$container"
  buildah commit --quiet --rm "$container" "$debian_base" >/dev/null
}

make_node_base() {
  local work container root
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  echo "npm run images: making $node_base ($debian_base, Node $node_version, npm $npm_version)"
  (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
  container="$(buildah from --pull-never "$debian_base")"
  root="$(buildah mount "$container")"
  install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules/npm"
  tar -xzf "$work"/npm-*.tgz -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  buildah umount "$container" >/dev/null
  buildah config --env NODE_VERSION="$node_version" --cmd node \
    --label org.opencontainers.image.description="Debian $debian_suite with Node $node_version" "$container"
  buildah commit --quiet --rm "$container" "$node_base" >/dev/null
}

build_services() {
  local build_volumes=() npmrc target
  # Where this machine reaches the npm registry through a TLS proxy of its own (NODE_EXTRA_CA_CERTS names its CA, as
  # for the host's npm), npm ci in a build step trusts that CA too: the file and an npmrc naming it are mounted for the
  # build steps only, never written into an image.
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    npmrc="$(mktemp)"
    trap 'rm -f "$npmrc"' RETURN
    echo "cafile=/run/notify-build-ca.crt" >"$npmrc"
    build_volumes+=(--volume "$NODE_EXTRA_CA_CERTS:/run/notify-build-ca.crt:ro" --volume "$npmrc:/root/.npmrc:ro")
  fi
  for target in "${services[@]}"; do
    echo "npm run images: building localhost/notify-$target:$tag"
    # chroot isolation and the host's network: a RUN step (npm ci) needs neither a container runtime's namespaces nor
    # a CNI network, and reaches only the npm registry.
    buildah build --quiet --layers --isolation chroot --network host "${build_volumes[@]}" \
      --build-arg "NODE_IMAGE=$node_base" --target "$target" --tag "localhost/notify-$target:$tag" . >/dev/null
  done
}

# Each service image as the kubelet will run it: its own user (uid 1000), unable to write its code, Node loading the
# service platform's tracing hook. buildah runs the check in a chroot of the image.
check_services() {
  local target container check='const fs = require("node:fs");
if (process.getuid() !== 1000 || process.getgid() !== 1000) throw new Error(`runs as ${process.getuid()}:${process.getgid()}`);
try { fs.writeFileSync("/app/written", ""); throw new Error("/app is writable"); } catch (error) { if (error.code !== "EACCES") throw error; }'
  for target in "${services[@]}"; do
    container="$(buildah from --pull-never "localhost/notify-$target:$tag")"
    if ! buildah run --isolation chroot "$container" -- node --import @notify/platform/telemetry-register -e "$check"; then
      buildah rm "$container" >/dev/null
      echo "npm run images: localhost/notify-$target:$tag does not run as uid 1000 with its code read-only" >&2
      exit 1
    fi
    buildah rm "$container" >/dev/null
  done
}

# `buildah run` in a working container, with chroot isolation and the host's network as for the services' RUN steps.
in_container() {
  local container=$1
  shift
  buildah run --isolation chroot --network host "$container" -- "$@"
}

# apt-get in a working container: the suite's current fixes for the packages it holds, then the packages named (none
# for the Debian base), leaving no package lists or caches behind; the base's dpkg configuration leaves documentation
# and translations out.
apt_install() {
  local container=$1
  shift
  in_container "$container" sh -c 'export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
    apt-get update -q && apt-get upgrade -y -q && apt-get install -y -q --no-install-recommends "$@" && apt-get clean &&
    rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old' sh "$@" >/dev/null
}

# PostgreSQL as the official image runs it, but as the alpine image's postgres user, uid 70, which the chart's pod runs
# as (postgres needs its uid in /etc/passwd). postgresql-common keeps a postgres user that exists; Debian's own cluster
# (/etc/postgresql, /var/lib/postgresql/15) is not made, the entrypoint makes PGDATA. PATH leads to the server's own
# binaries (pg_isready for the chart's probe) rather than /usr/bin's wrappers, which look for Debian's clusters.
# JIT compilation is left out, LLVM and PostgreSQL's bitcode being 40% of the image: without llvmjit.so PostgreSQL
# runs every query interpreted, silently. dpkg removes LLVM although postgresql-15 depends on it (--force-depends).
build_dev_postgresql() {
  local container=$1
  in_container "$container" sh -c 'groupadd --system --gid 70 postgres &&
    useradd --system --uid 70 --gid 70 --home-dir /var/lib/postgresql --shell /bin/sh postgres &&
    mkdir -p /etc/postgresql-common/createcluster.d &&
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/notify.conf &&
    printf "path-exclude /usr/lib/postgresql/*/lib/%s\n" "bitcode/*" "llvmjit*" >/etc/dpkg/dpkg.cfg.d/notify-no-jit'
  apt_install "$container" postgresql-15
  in_container "$container" dpkg --purge --force-depends libllvm14 libz3-4 >/dev/null 2>&1 ||
    { echo "npm run images: dpkg could not remove LLVM from the PostgreSQL image" >&2; return 1; }
  buildah copy --chmod 0755 "$container" cli/images/postgresql-entrypoint.sh /usr/local/bin/ >/dev/null
  in_container "$container" install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
  in_container "$container" install -d -o postgres -g postgres -m 2775 /run/postgresql
  buildah config --user 70:70 --env PGDATA=/var/lib/postgresql/data \
    --env PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --entrypoint '["postgresql-entrypoint.sh"]' --cmd postgres --port 5432 --stop-signal SIGINT "$container"
}

# Redis under uid 1000, its user made before the package, whose scripts then keep it; /usr/local/bin/redis-server
# turns protected mode off (cli/images/redis-server.sh).
build_dev_redis() {
  local container=$1
  in_container "$container" useradd --uid 1000 --user-group --home-dir /var/lib/redis --shell /usr/sbin/nologin redis
  apt_install "$container" redis-server
  buildah copy --chmod 0755 "$container" cli/images/redis-server.sh /usr/local/bin/redis-server >/dev/null
  in_container "$container" install -d -o redis -g redis /data
  buildah config --user 1000:1000 --workingdir /data --cmd '["redis-server", "--dir", "/data"]' --port 6379 "$container"
}

# nats-server under uid 1000: its package makes a system user nats and refuses one made before, so the user is
# renumbered after (it owns no file).
build_dev_nats() {
  local container=$1
  apt_install "$container" nats-server
  in_container "$container" sh -c 'usermod --uid 1000 nats && groupmod --gid 1000 nats &&
    install -d -o nats -g nats /data'
  buildah config --user 1000:1000 --workingdir /data --entrypoint '["nats-server"]' \
    --cmd '["--jetstream", "--store_dir=/data", "--http_port=8222"]' --port 4222 --port 8222 "$container"
}

# Mailpit, built with CGO_ENABLED=0 (static; its SQLite is pure Go) straight into the container. The module zip lacks
# Mailpit's built web UI (made by npm in its release builds): its page loads no interface, /dist/ answering 404, while
# SMTP, the HTTP API, /readyz and /livez, all that the chart and the tests use, work. Without MP_DATABASE it keeps its
# database in a temporary file under /tmp, the chart's one writable directory. It does not ask GitHub for newer
# releases (MP_DISABLE_VERSION_CHECK): a test cluster may not reach it, and this build is pinned anyway.
build_dev_mail_sink() {
  local container=$1 module=cli/images/mailpit version
  command -v go >/dev/null || { echo "npm run images: building Mailpit needs Go (https://go.dev/dl/)" >&2; return 1; }
  version="$(sed -n 's/^require github.com\/axllent\/mailpit \(v[0-9.]*\)$/\1/p' "$module/go.mod")"
  echo "npm run images: building Mailpit $version (Go module proxy)"
  (cd "$module" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/axllent/mailpit/config.Version=$version" \
    -o "$(buildah mount "$container")/usr/local/bin/mailpit" github.com/axllent/mailpit)
  buildah umount "$container" >/dev/null
  in_container "$container" useradd --uid 1000 --user-group --no-create-home --home-dir /tmp \
    --shell /usr/sbin/nologin mailpit
  buildah config --user 1000:1000 --env MP_DISABLE_VERSION_CHECK=true --entrypoint '["mailpit"]' --cmd '[]' \
    --port 1025 --port 8025 "$container"
}

# localhost/notify-dev-<name>:<tag> from build_dev_<name>, unless the image was made from the same recipe: its hash
# (the build functions, cli/images/, the Debian base) is a label of the image. The image it replaces is removed.
build_dev() {
  local name=$1 image="localhost/notify-dev-$1:$tag" recipe previous container
  recipe="$({
    declare -f "build_dev_${name//-/_}" in_container apt_install
    find cli/images -type f | sort | xargs cat
    buildah inspect --type image --format '{{.FromImageID}}' "$debian_base"
  } | sha256sum | cut -c1-16)"
  previous="$(buildah inspect --type image \
    --format '{{.FromImageID}} {{index .OCIv1.Config.Labels "io.notify.recipe"}}' "$image" 2>/dev/null || true)"
  if [ "${previous#* }" = "$recipe" ]; then return; fi
  echo "npm run images: building $image"
  container="$(buildah from --pull-never "$debian_base")"
  "build_dev_${name//-/_}" "$container"
  buildah config --label io.notify.recipe="$recipe" \
    --label org.opencontainers.image.description="Notify's dev $name, from Debian $debian_suite" "$container"
  buildah commit --quiet --rm "$container" "$image" >/dev/null
  if [ -n "$previous" ]; then buildah rmi "${previous%% *}" >/dev/null || true; fi
}

# Starts a command of a working container in the background as the chart's pod runs it: as uid:uid (the pod's
# runAsUser and runAsGroup), the image's root file system read-only with an empty directory at each of the chart's
# emptyDir mounts, its own mount and PID namespaces, the image's environment and the chart's, the machine's network.
# $server is unshare's process id; its output goes to $server_log.
start_like_chart() { # container uid "emptyDirs" [NAME=value...] -- command...
  local container=$1 uid=$2 dirs=$3 root env=()
  shift 3
  root="$(buildah mount "$container")"
  mapfile -t env < <(buildah inspect --type container --format '{{range .OCIv1.Config.Env}}{{println .}}{{end}}' \
    "$container")
  while [ "$1" != -- ]; do
    env+=("$1")
    shift
  done
  shift
  # A mount path resolves inside the image (its /var/run is /run), as the kubelet resolves it.
  unshare --mount --pid --fork bash -c 'set -e
    root=$1 uid=$2 dirs=$3
    shift 3
    mount --bind "$root" "$root" && mount -o remount,bind,ro "$root"
    mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev"
    for dir in $dirs; do mount -t tmpfs -o mode=0777 tmpfs "$root$(chroot "$root" readlink -f "$dir")"; done
    exec chroot --userspec="$uid:$uid" "$root" "$@"' \
    bash "$root" "$uid" "$dirs" env -i "${env[@]}" "$@" >"$server_log" 2>&1 &
  server=$!
}

# The image's own entrypoint and command, one word a line, as the chart runs them when it sets no command.
image_command() {
  local field
  for field in Entrypoint Cmd; do
    buildah inspect --type container --format "{{range .OCIv1.Config.$field}}{{println .}}{{end}}" "$1"
  done
}

# A command run in the working container as uid:uid beside the server, as the kubelet runs an exec probe.
probe() {
  local container=$1 uid=$2
  shift 2
  buildah run --isolation chroot --network host --user "$uid:$uid" "$container" -- "$@" 2>&1
}

# Polls a check every half second until it passes, for 30 seconds at most and while the server runs.
wait_for() {
  local deadline=$((SECONDS + 30))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$server" 2>/dev/null; then return 1; fi
    sleep 0.5
  done
}

# PostgreSQL initializes the chart's empty PGDATA, answers the chart's probe and lets POSTGRES_USER in over TCP with
# POSTGRES_PASSWORD only.
check_dev_postgresql() {
  local container=$1 command login
  mapfile -t command < <(image_command "$container")
  start_like_chart "$container" 70 "/var/lib/postgresql/data /var/run/postgresql /tmp" POSTGRES_USER=notify \
    POSTGRES_DB=notify PGDATA=/var/lib/postgresql/data/pgdata POSTGRES_PASSWORD=image-check -- "${command[@]}" -p 55432
  login=(psql -h "$address" -p 55432 -U notify -d notify -tAc 'select current_user || current_database()')
  wait_for probe "$container" 70 pg_isready -h 127.0.0.1 -p 55432 -U notify -d notify &&
    [ "$(probe "$container" 70 env PGPASSWORD=image-check "${login[@]}")" = notifynotify ] &&
    ! probe "$container" 70 env PGPASSWORD=wrong "${login[@]}" >/dev/null
}

# Redis (run as uid 999, as the chart's pod is) answers the chart's probe, and a client that is not on loopback.
check_dev_redis() {
  local container=$1
  start_like_chart "$container" 999 /data -- redis-server --save "" --appendonly no --dir /data --port 56379
  wait_for probe "$container" 999 redis-cli -p 56379 ping &&
    [ "$(probe "$container" 999 redis-cli -h "$address" -p 56379 ping)" = PONG ]
}

# NATS answers the chart's probes, the readiness one with the js-enabled-only query nats-server 2.9 knows (it fails
# while JetStream, which the chart turns on, has not started), and runs JetStream with its store in the emptyDir.
check_dev_nats() {
  local container=$1
  start_like_chart "$container" 1000 "/data /tmp" -- \
    nats-server --jetstream --store_dir=/data --http_port=58222 --port=54222
  wait_for curl -fsS "http://$address:58222/healthz?js-enabled-only=true" &&
    curl -fsS "http://$address:58222/healthz" >/dev/null &&
    curl -fsS "http://$address:58222/jsz" | grep -q '"store_dir": *"/data/jetstream"'
}

# Mailpit answers the chart's probes, takes a message over SMTP and lists it in its API.
check_dev_mail_sink() {
  local container=$1 command
  mapfile -t command < <(image_command "$container")
  start_like_chart "$container" 1000 /tmp MP_SMTP_BIND_ADDR=0.0.0.0:51025 MP_UI_BIND_ADDR=0.0.0.0:58025 \
    MP_MAX_MESSAGES=5000 -- "${command[@]}"
  wait_for curl -fsS "http://$address:58025/readyz" &&
    curl -fsS "http://$address:58025/livez" >/dev/null &&
    printf 'From: check@notify.test\r\nTo: sink@notify.test\r\nSubject: image check\r\n\r\nHello.\r\n' |
    curl -fsS "smtp://$address:51025" --mail-from check@notify.test --mail-rcpt sink@notify.test --upload-file - &&
    curl -fsS "http://$address:58025/api/v1/messages" | grep -q '"Subject":"image check"'
}

# Each dev image as the chart runs it, on ports of its own: this machine may run PostgreSQL, Redis or NATS itself.
check_dev() {
  local name=$1 image="localhost/notify-dev-$1:$tag" container status=0
  container="$(buildah from --pull-never "$image")"
  server_log="$(mktemp)"
  "check_dev_${name//-/_}" "$container" || status=$?
  # The server is the namespace's first process, whose end ends every process in it.
  pkill -KILL --parent "$server" || true
  wait "$server" 2>/dev/null || true
  buildah rm "$container" >/dev/null
  if [ "$status" -ne 0 ]; then
    echo "npm run images: $image does not work as the chart runs it; its output:" >&2
    tail -20 "$server_log" >&2
  fi
  rm -f "$server_log"
  return "$status"
}

if ! buildah inspect --type image "$debian_base" >/dev/null 2>&1; then make_debian_base; fi
if [ "${#services[@]}" -gt 0 ]; then
  if [ ! -x node_modules/.bin/node ]; then
    echo "npm run images: installing dependencies first (they include Node itself)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
  node_bin="$(readlink -f node_modules/node/bin/node)"
  node_version="$("$node_bin" -p process.versions.node)"
  npm_version="${NOTIFY_IMAGE_NPM_VERSION:-$(npm --version)}"
  node_base="localhost/notify-node-base:$node_version"
  if ! buildah inspect --type image "$node_base" >/dev/null 2>&1; then make_node_base; fi
  build_services
  check_services
fi
for name in "${devs[@]}"; do build_dev "$name"; done
for name in "${devs[@]}"; do check_dev "$name"; done

built="$(IFS='|' && echo "${services[*]}|${devs[*]/#/dev-}")"
echo
echo "npm run images: built and checked:"
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -E "^localhost/notify-($built):$tag " | column -t
