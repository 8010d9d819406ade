#!/usr/bin/env bash
# `npm run cluster -- up|down|status`: a Kubernetes control plane on this machine, for trying the chart against a real
# API server. Everything lives under .data/cluster/ and listens on 127.0.0.1 only:
#   - the components, built once from k8s.io/kubernetes at the version test/k8s/kube/go.mod requires (Go module proxy;
#     about 10 minutes the first time), kept in .data/cluster/bin/<version>/;
#   - etcd from Debian's etcd-server package, its data in .data/cluster/etcd/;
#   - kube-apiserver (RBAC, the `restricted` Pod Security level by default), kube-controller-manager and kube-scheduler,
#     each with its own client certificate from a CA made here;
#   - .data/cluster/kubeconfig, an administrator's (system:masters), for kubectl and helm.
# It has no node yet: pods are admitted, validated and scheduled nowhere. `down` stops every process and removes
# .data/cluster/ except the built binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."

root=.data/cluster
module=test/k8s/kube
version="$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$module/go.mod")"
bin="$root/bin/$version"
pki="$root/pki"
logs="$root/logs"
api_port="${CLUSTER_API_PORT:-6443}"
etcd_port="${CLUSTER_ETCD_PORT:-23790}"
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

build() {
  local missing=()
  for component in "${components[@]}"; do [ -x "$bin/$component" ] || missing+=("k8s.io/kubernetes/cmd/$component"); done
  [ "${#missing[@]}" -eq 0 ] && return
  echo "cluster: building ${missing[*]##*/} $version (Go module proxy; about 10 minutes the first time)"
  mkdir -p "$bin"
  (cd "$module" && GOFLAGS=-mod=mod go build -o "$OLDPWD/$bin/" "${missing[@]}")
}

install_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "cluster: installing ${missing[*]} from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

# A key and a certificate signed by the cluster's CA: subject CN (and O, a group), extensions for a client or a server.
certificate() {
  local name=$1 subject=$2 extensions=$3
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile <(printf '%s\n' "$extensions") -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr"
}

make_pki() {
  [ -f "$pki/ca.crt" ] && return
  mkdir -p "$pki"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=notify-test-cluster-ca" -days 30 \
    -out "$pki/ca.crt" 2>/dev/null
  certificate apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
  certificate admin "/O=system:masters/CN=notify-test-admin" "extendedKeyUsage=clientAuth"
  certificate controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  certificate scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  openssl genrsa -out "$pki/service-accounts.key" 2048 2>/dev/null
  openssl rsa -in "$pki/service-accounts.key" -pubout -out "$pki/service-accounts.pub" 2>/dev/null
}

kubeconfig() {
  local name=$1 file="$root/$1.kubeconfig"
  [ "$name" = admin ] && file="$root/kubeconfig"
  KUBECONFIG="$file" "$bin/kubectl" config set-cluster notify-test --server="https://127.0.0.1:$api_port" \
    --certificate-authority="$PWD/$pki/ca.crt" --embed-certs >/dev/null
  KUBECONFIG="$file" "$bin/kubectl" config set-credentials "$name" --client-certificate="$PWD/$pki/$name.crt" \
    --client-key="$PWD/$pki/$name.key" --embed-certs >/dev/null
  KUBECONFIG="$file" "$bin/kubectl" config set-context notify-test --cluster=notify-test --user="$name" >/dev/null
  KUBECONFIG="$file" "$bin/kubectl" config use-context notify-test >/dev/null
}

# Starts a process in the background, its output in logs/<name>.log and its pid in <name>.pid.
run() {
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  echo $! >"$root/$name.pid"
}

wait_for() {
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq 1 "$((seconds * 4))"); do
    if "$@" >/dev/null 2>&1; then return; fi
    sleep 0.25
  done
  echo "cluster: $what did not come up within $seconds s; see $logs/" >&2
  return 1
}

up() {
  install_packages
  build
  make_pki
  mkdir -p "$logs" "$root/etcd"
  for name in admin controller-manager scheduler; do kubeconfig "$name"; done
  run etcd etcd --name notify-test --data-dir "$root/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls http://127.0.0.1:0
  wait_for etcd 20 curl -fsS "http://127.0.0.1:$etcd_port/health"
  cat >"$root/admission.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults: { enforce: restricted, enforce-version: latest, audit: restricted, warn: restricted }
      exemptions: { namespaces: [kube-system] }
EOF
  run kube-apiserver "$bin/kube-apiserver" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$api_port" --etcd-servers="http://127.0.0.1:$etcd_port" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/service-accounts.pub" --service-account-signing-key-file="$pki/service-accounts.key" \
    --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC --allow-privileged=false \
    --admission-control-config-file="$root/admission.yaml"
  wait_for kube-apiserver 60 "$bin/kubectl" --kubeconfig "$root/kubeconfig" get --raw /readyz
  run kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$root/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$root/controller-manager.kubeconfig" --authorization-kubeconfig="$root/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file="$pki/service-accounts.key" --root-ca-file="$pki/ca.crt" \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --service-cluster-ip-range=10.96.0.0/16
  run kube-scheduler "$bin/kube-scheduler" --kubeconfig="$root/scheduler.kubeconfig" \
    --authentication-kubeconfig="$root/scheduler.kubeconfig" --authorization-kubeconfig="$root/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
  wait_for "the default service account" 60 "$bin/kubectl" --kubeconfig "$root/kubeconfig" get serviceaccount default
  echo "cluster: up, Kubernetes $version at https://127.0.0.1:$api_port; kubectl --kubeconfig $root/kubeconfig"
}

down() {
  for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    if [ -f "$root/$name.pid" ]; then
      kill "$(cat "$root/$name.pid")" 2>/dev/null || true
      rm -f "$root/$name.pid"
    fi
  done
  sleep 1
  find "$root" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
  echo "cluster: down"
}

status() {
  "$bin/kubectl" --kubeconfig "$root/kubeconfig" get --raw '/readyz?verbose' | tail -1
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: npm run cluster -- up|down|status" >&2; exit 2 ;;
esac
