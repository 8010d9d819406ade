#!/usr/bin/env bash
# `npm run images`: every target of the Dockerfile built on this machine with buildah, with no container registry.
#
# Their base (the Dockerfile's NODE_IMAGE) is made here too: a Debian root filesystem from Debian's packages
# (debootstrap, minbase, with CA certificates), the Node binary of the `node` npm package this checkout runs on, and
# npm from the npm registry, laid out as the official node image lays them out (/usr/local/bin/node, npm's package in
# /usr/local/lib/node_modules). It is built once per Node version and kept in buildah's storage; the services' layers
# are cached by buildah between runs (--layers). Images are tagged localhost/notify-<target>:<tag> (NOTIFY_IMAGE_TAG,
# default dev); `buildah push` sends them to an operator's registry (docs/operations.md).
#
# Needs root (buildah's storage is /var/lib/containers); buildah and debootstrap are installed from Debian's packages
# when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=(gateway auth-svc dispatch-svc mailer-svc webhook-svc bounce-svc toolbox)
tag="${NOTIFY_IMAGE_TAG:-dev}"
debian_suite=bookworm
debian_mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ ! -x node_modules/.bin/node ]; then
  echo "npm run images: installing dependencies first (they include Node itself)"
  npm ci --no-audit --no-fund --loglevel=error
fi
node_bin="$(readlink -f node_modules/node/bin/node)"
node_version="$("$node_bin" -p process.versions.node)"
npm_version="${NOTIFY_IMAGE_NPM_VERSION:-$(npm --version)}"
base="localhost/notify-node-base:$node_version"

missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "npm run images: installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

build_base() {
  local work rootfs container mount
  work="$(mktemp -d)"
  rootfs="$work/rootfs"
  trap 'rm -rf "$work"' RETURN
  echo "npm run images: making $base (Debian $debian_suite, Node $node_version, npm $npm_version)"
  debootstrap --variant=minbase --include=ca-certificates "$debian_suite" "$rootfs" "$debian_mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; return 1; }
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  install -D -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
  tar -xzf "$work"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  container="$(buildah from scratch)"
  mount="$(buildah mount "$container")"
  cp -a "$rootfs/." "$mount/"
  buildah umount "$container" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env NODE_VERSION="$node_version" \
    --cmd node --label org.opencontainers.image.description="Debian $debian_suite with Node $node_version" "$container"
  buildah commit --quiet --rm "$container" "$base" >/dev/null
}

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then build_base; fi

# Where this machine reaches the npm registry through a TLS proxy of its own (NODE_EXTRA_CA_CERTS names its CA, as
# for the host's npm), npm ci in a build step trusts that CA too: the file and an npmrc naming it are mounted for the
# build steps only, never written into an image.
build_volumes=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  npmrc="$(mktemp)"
  trap 'rm -f "$npmrc"' EXIT
  echo "cafile=/run/notify-build-ca.crt" >"$npmrc"
  build_volumes+=(--volume "$NODE_EXTRA_CA_CERTS:/run/notify-build-ca.crt:ro" --volume "$npmrc:/root/.npmrc:ro")
fi

for target in "${targets[@]}"; do
  echo "npm run images: building localhost/notify-$target:$tag"
  # chroot isolation and the host's network: a RUN step (npm ci) needs neither a container runtime's namespaces nor
  # a CNI network, and reaches only the npm registry.
  buildah build --quiet --layers --isolation chroot --network host "${build_volumes[@]}" --build-arg "NODE_IMAGE=$base" \
    --target "$target" --tag "localhost/notify-$target:$tag" . >/dev/null
done

# Each image as the kubelet will run it: its own user (uid 1000), unable to write its code, Node loading the service
# platform's tracing hook. buildah runs the check in a chroot of the image.
check='const fs = require("node:fs");
if (process.getuid() !== 1000 || process.getgid() !== 1000) throw new Error(`runs as ${process.getuid()}:${process.getgid()}`);
try { fs.writeFileSync("/app/written", ""); throw new Error("/app is writable"); } catch (error) { if (error.code !== "EACCES") throw error; }'
for target in "${targets[@]}"; do
  container="$(buildah from --pull-never "localhost/notify-$target:$tag")"
  if ! buildah run --isolation chroot "$container" -- node --import @notify/platform/telemetry-register -e "$check"; then
    buildah rm "$container" >/dev/null
    echo "npm run images: localhost/notify-$target:$tag does not run as uid 1000 with its code read-only" >&2
    exit 1
  fi
  buildah rm "$container" >/dev/null
done

echo
echo "npm run images: built and checked (uid 1000, code read-only), from $base:"
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -E "^localhost/notify-[a-z-]+:$tag " | column -t
