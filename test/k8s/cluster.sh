#!/usr/bin/env bash
# `npm run cluster -- up|down|status|load <image>...`: a single-node Kubernetes on this machine, for running the chart as an operator
# would. Everything it makes lives under .data/cluster/, and every address it listens on is the node's own, on a bridge
# of its own (notify0, 10.244.0.1) or 127.0.0.1:
#   - the components, built once from k8s.io/kubernetes at the version test/k8s/kube/go.mod requires, and CoreDNS and
#     kube-router at the versions their own modules require (Go module proxy; about 12 minutes the first time), kept in
#     .data/cluster/bin/;
#   - etcd from Debian's etcd-server package; kube-apiserver (RBAC, the `restricted` Pod Security level by default,
#     kube-system exempt), kube-controller-manager (which gives the node its pod network, 10.244.0.0/24) and
#     kube-scheduler, each with its own client certificate from a CA made here;
#   - the node: containerd and runc from Debian (cgroupfs, cgroup v1), the kubelet (`failCgroupV1: false`), kube-proxy
#     (iptables), the CNI bridge plugin from Debian's containernetworking-plugins, and kube-router enforcing
#     NetworkPolicies (its firewall only: it neither routes nor proxies, the parts its reported flaws concern);
#   - CoreDNS as a pod behind kube-dns (10.96.0.10), answering for cluster.local and nothing else;
#   - metrics-server on the node, serving the resource metrics API through the aggregation layer (for CPU
#     HorizontalPodAutoscalers);
#   - pod traffic stays inside the cluster: the raw table drops any packet from a pod to an address that is neither a
#     pod's nor a Service's, before it could be routed out of the machine;
#   - the images the kubelet runs come from buildah's storage (`npm run images`), imported into containerd, with a
#     pause image compiled here from Kubernetes' own pause.c;
#   - .data/cluster/kubeconfig, an administrator's (system:masters), for .data/cluster/kubectl and helm.
# `load` copies images from buildah's storage into the node (pods run them with imagePullPolicy IfNotPresent).
# `down` deletes every pod through the kubelet (so that CNI and volumes are torn down), stops every process, removes
# the bridge and the rules it added, and removes .data/cluster/ except the built binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."

root="$PWD/.data/cluster"
version="$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' test/k8s/kube/go.mod)"
coredns_version="$(sed -n 's/^\tgithub.com\/coredns\/coredns \(v[0-9.]*\).*$/\1/p' test/k8s/coredns/go.mod)"
kube_router_version="$(sed -n 's/^require github.com\/cloudnativelabs\/kube-router\/v2 \(v[0-9.]*\).*$/\1/p' test/k8s/kube-router/go.mod)"
metrics_server_version="$(sed -n 's/^require sigs.k8s.io\/metrics-server \(v[0-9.]*\).*$/\1/p' test/k8s/metrics-server/go.mod)"
bin="$root/bin/$version"
pki="$root/pki"
logs="$root/logs"
node_name=notify-node
node_ip=10.244.0.1
bridge=notify0
pod_cidr=10.244.0.0/16
service_cidr=10.96.0.0/16
api_port="${CLUSTER_API_PORT:-6443}"
etcd_port="${CLUSTER_ETCD_PORT:-23790}"
containerd_socket="$root/containerd/containerd.sock"
pause_image=localhost/notify-pause:3.10.1
kubectl=("$bin/kubectl" --kubeconfig "$root/kubeconfig")
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

# Builds Go commands of the module in directory $1 into directory $2: go_build <module dir> <out dir> <package>...
go_build() {
  local module=$1 out=$2
  shift 2
  mkdir -p "$out"
  (cd "$module" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$out/" "$@")
}

build() {
  local missing=()
  for component in "${components[@]}"; do [ -x "$bin/$component" ] || missing+=("k8s.io/kubernetes/cmd/$component"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "cluster: building ${missing[*]##*/} $version (Go module proxy; about 10 minutes the first time)"
    go_build test/k8s/kube "$bin" "${missing[@]}"
  fi
  if [ ! -x "$root/bin/coredns-$coredns_version/coredns" ]; then
    echo "cluster: building CoreDNS $coredns_version"
    go_build test/k8s/coredns "$root/bin/coredns-$coredns_version" github.com/coredns/coredns
  fi
  if [ ! -x "$root/bin/kube-router-$kube_router_version/kube-router" ]; then
    echo "cluster: building kube-router $kube_router_version"
    go_build test/k8s/kube-router "$root/bin/kube-router-$kube_router_version" \
      github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  fi
  if [ ! -x "$root/bin/metrics-server-$metrics_server_version/metrics-server" ]; then
    echo "cluster: building metrics-server $metrics_server_version"
    go_build test/k8s/metrics-server "$root/bin/metrics-server-$metrics_server_version" sigs.k8s.io/metrics-server/cmd/metrics-server
  fi
}

install_packages() {
  local missing=() command package
  for pair in etcd:etcd-server openssl:openssl curl:curl containerd:containerd runc:runc iptables:iptables \
    ipset:ipset conntrack:conntrack buildah:buildah gcc:gcc; do
    command=${pair%%:*} package=${pair#*:}
    command -v "$command" >/dev/null || missing+=("$package")
  done
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
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
    "subjectAltName=IP:$node_ip,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
  certificate kubelet-serving "/CN=$node_name" "subjectAltName=IP:$node_ip,DNS:$node_name
extendedKeyUsage=serverAuth"
  certificate admin "/O=system:masters/CN=notify-test-admin" "extendedKeyUsage=clientAuth"
  certificate apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  certificate controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  certificate scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  certificate kubelet "/O=system:nodes/CN=system:node:$node_name" "extendedKeyUsage=clientAuth"
  certificate kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
  certificate kube-router "/CN=kube-router" "extendedKeyUsage=clientAuth"
  # The API server's client certificate towards aggregated APIs (metrics-server), which vouches for the user in headers.
  certificate front-proxy-client "/CN=front-proxy-client" "extendedKeyUsage=clientAuth"
  certificate metrics-server "/CN=metrics-server" "subjectAltName=DNS:metrics-server.kube-system.svc,IP:$node_ip
extendedKeyUsage=serverAuth,clientAuth"
  openssl genrsa -out "$pki/service-accounts.key" 2048 2>/dev/null
  openssl rsa -in "$pki/service-accounts.key" -pubout -out "$pki/service-accounts.pub" 2>/dev/null
}

kubeconfig() {
  local name=$1 file="$root/$1.kubeconfig"
  [ "$name" = admin ] && file="$root/kubeconfig"
  KUBECONFIG="$file" "$bin/kubectl" config set-cluster notify-test --server="https://$node_ip:$api_port" \
    --certificate-authority="$pki/ca.crt" --embed-certs >/dev/null
  KUBECONFIG="$file" "$bin/kubectl" config set-credentials "$name" --client-certificate="$pki/$name.crt" \
    --client-key="$pki/$name.key" --embed-certs >/dev/null
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
  echo "cluster: gave up waiting $seconds s for $what; see $logs/" >&2
  return 1
}

# The node's own address on a bridge of its own, which the CNI bridge plugin then plugs the pods into; forwarding and
# bridged traffic through iptables (kube-proxy and kube-router need both); and the raw-table rule that keeps pod
# traffic inside the cluster.
network() {
  ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
  ip addr replace "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  iptables -t raw -N NOTIFY-CLUSTER 2>/dev/null || iptables -t raw -F NOTIFY-CLUSTER
  iptables -t raw -A NOTIFY-CLUSTER -d "$pod_cidr" -j RETURN
  iptables -t raw -A NOTIFY-CLUSTER -d "$service_cidr" -j RETURN
  iptables -t raw -A NOTIFY-CLUSTER -j DROP
  iptables -t raw -C PREROUTING -s "$pod_cidr" -j NOTIFY-CLUSTER 2>/dev/null ||
    iptables -t raw -I PREROUTING -s "$pod_cidr" -j NOTIFY-CLUSTER
  mkdir -p "$root/cni"
  cat >"$root/cni/10-notify.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "notify",
  "plugins": [
    { "type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.0.0/24", "gateway": "$node_ip" }]],
                "routes": [{ "dst": "0.0.0.0/0" }], "dataDir": "$root/cni/ipam" } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

control_plane() {
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
  run kube-apiserver "$bin/kube-apiserver" --bind-address="$node_ip" --advertise-address="$node_ip" \
    --secure-port="$api_port" --etcd-servers="http://127.0.0.1:$etcd_port" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
    --kubelet-preferred-address-types=InternalIP --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/service-accounts.pub" --service-account-signing-key-file="$pki/service-accounts.key" \
    --service-cluster-ip-range="$service_cidr" --authorization-mode=Node,RBAC --allow-privileged=false \
    --enable-admission-plugins=NodeRestriction --admission-control-config-file="$root/admission.yaml" \
    --requestheader-client-ca-file="$pki/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- --proxy-client-cert-file="$pki/front-proxy-client.crt" \
    --proxy-client-key-file="$pki/front-proxy-client.key" --enable-aggregator-routing=true
  wait_for kube-apiserver 60 "${kubectl[@]}" get --raw /readyz
  run kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$root/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$root/controller-manager.kubeconfig" --authorization-kubeconfig="$root/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file="$pki/service-accounts.key" --root-ca-file="$pki/ca.crt" \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --service-cluster-ip-range="$service_cidr" --allocate-node-cidrs --cluster-cidr="$pod_cidr" --node-cidr-mask-size=24
  run kube-scheduler "$bin/kube-scheduler" --kubeconfig="$root/scheduler.kubeconfig" \
    --authentication-kubeconfig="$root/scheduler.kubeconfig" --authorization-kubeconfig="$root/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
  wait_for "the default service account" 60 "${kubectl[@]}" get serviceaccount default
}

containerd_up() {
  mkdir -p "$root/containerd"
  cat >"$root/containerd/config.toml" <<EOF
version = 2
root = "$root/containerd/root"
state = "$root/containerd/state"
[grpc]
  address = "$containerd_socket"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  # Root here lacks CAP_SYS_RESOURCE, so no process may lower its OOM score below containerd's own (0): the
  # kubelet's -998 for sandboxes (and -997 for Guaranteed pods) becomes 0, as in rootless setups.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$root/cni"
EOF
  run containerd containerd --config "$root/containerd/config.toml"
  wait_for containerd 20 ctr --address "$containerd_socket" version
}

# Every image the cluster runs, from buildah's storage into containerd's k8s.io namespace.
import_images() {
  local image archive="$root/image.tar"
  for image in "$@"; do
    buildah push --quiet "$image" "docker-archive:$archive:$image" >/dev/null
    ctr --address "$containerd_socket" -n k8s.io images import "$archive" >/dev/null
    rm -f "$archive"
  done
}

# The images the node itself needs: pause, compiled from Kubernetes' pause.c (as its own Makefile does, static), and
# CoreDNS; both from scratch, each holding one binary.
node_images() {
  local pause_src container
  if ! buildah inspect --type image "$pause_image" >/dev/null 2>&1; then
    pause_src="$(cd test/k8s/kube && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
    gcc -Os -Wall -Werror -static -DVERSION="v${pause_image##*:}" -o "$root/pause" "$pause_src"
    container="$(buildah from scratch)"
    buildah copy --quiet "$container" "$root/pause" /pause >/dev/null
    buildah config --entrypoint '["/pause"]' --user 65535:65535 "$container"
    buildah commit --quiet --rm "$container" "$pause_image" >/dev/null
    rm -f "$root/pause"
  fi
  if ! buildah inspect --type image "localhost/notify-coredns:$coredns_version" >/dev/null 2>&1; then
    container="$(buildah from scratch)"
    buildah copy --quiet "$container" "$root/bin/coredns-$coredns_version/coredns" /coredns >/dev/null
    buildah config --entrypoint '["/coredns"]' --user 65532:65532 "$container"
    buildah commit --quiet --rm "$container" "localhost/notify-coredns:$coredns_version" >/dev/null
  fi
  import_images "$pause_image" "localhost/notify-coredns:$coredns_version"
}

kubelet_up() {
  mkdir -p "$root/kubelet" "$root/pod-logs"
  : >"$root/resolv.conf"
  cat >"$root/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$containerd_socket
address: $node_ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: $pki/ca.crt }
authorization: { mode: Webhook }
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
resolvConf: $root/resolv.conf
podLogsDir: $root/pod-logs
failSwapOn: false
serializeImagePulls: false
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
  run kubelet "$bin/kubelet" --config="$root/kubelet.yaml" --kubeconfig="$root/kubelet.kubeconfig" \
    --root-dir="$root/kubelet" --cert-dir="$pki" --hostname-override="$node_name" --node-ip="$node_ip"
  run kube-proxy "$bin/kube-proxy" --kubeconfig="$root/kube-proxy.kubeconfig" --hostname-override="$node_name" \
    --cluster-cidr="$pod_cidr" --proxy-mode=iptables --bind-address="$node_ip" --healthz-bind-address=127.0.0.1:10256 \
    --metrics-bind-address=127.0.0.1:10249 --conntrack-max-per-core=0
  wait_for "the node" 60 "${kubectl[@]}" wait --for=condition=Ready "node/$node_name" --timeout=1s
  "${kubectl[@]}" apply -f test/k8s/addons/kube-router.yaml >/dev/null
  run kube-router "$root/bin/kube-router-$kube_router_version/kube-router" --kubeconfig="$root/kube-router.kubeconfig" \
    --hostname-override="$node_name" --run-firewall=true --run-router=false --run-service-proxy=false \
    --health-port=20244 --metrics-port=0
  sed "s/COREDNS_VERSION/$coredns_version/" test/k8s/addons/coredns.yaml | "${kubectl[@]}" apply -f - >/dev/null
  wait_for CoreDNS 120 "${kubectl[@]}" -n kube-system rollout status deployment/coredns --timeout=1s
  metrics_server_up
}

# metrics-server on the node, behind the aggregation layer: HorizontalPodAutoscalers on CPU read it.
metrics_server_up() {
  sed -e "s/NODE_IP/$node_ip/" -e "s/CA_BUNDLE/$(base64 -w0 "$pki/ca.crt")/" test/k8s/addons/metrics-server.yaml |
    "${kubectl[@]}" apply -f - >/dev/null
  local kubeconfig="$root/metrics-server.kubeconfig"
  run metrics-server "$root/bin/metrics-server-$metrics_server_version/metrics-server" --kubeconfig="$kubeconfig" \
    --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig" \
    --bind-address="$node_ip" --secure-port=4443 \
    --tls-cert-file="$pki/metrics-server.crt" --tls-private-key-file="$pki/metrics-server.key" \
    --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$pki/ca.crt" --metric-resolution=15s
  wait_for metrics-server 60 "${kubectl[@]}" get --raw /apis/metrics.k8s.io/v1beta1/nodes
}

up() {
  install_packages
  build
  make_pki
  mkdir -p "$logs" "$root/etcd"
  for name in admin controller-manager scheduler kubelet kube-proxy kube-router metrics-server; do kubeconfig "$name"; done
  network
  control_plane
  containerd_up
  node_images
  kubelet_up
  ln -sf "$bin/kubectl" "$root/kubectl"
  echo "cluster: up, Kubernetes $version, node $node_name at $node_ip; kubectl --kubeconfig $root/kubeconfig"
}

stop() {
  local name=$1 pid
  [ -f "$root/$name.pid" ] || return 0
  pid="$(cat "$root/$name.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$root/$name.pid"
}

down() {
  if [ -f "$root/kubelet.pid" ] && "${kubectl[@]}" get --raw /readyz >/dev/null 2>&1; then
    # Through the kubelet, so that each pod's network and volumes are torn down as in any cluster.
    # Controllers first, or they would start each deleted pod again.
    "${kubectl[@]}" delete namespaces --all --wait=false >/dev/null 2>&1 || true
    "${kubectl[@]}" delete deployments,statefulsets,daemonsets,replicasets,jobs --all --all-namespaces --wait=false >/dev/null 2>&1 || true
    "${kubectl[@]}" delete pods --all --all-namespaces --grace-period=1 --wait=false >/dev/null 2>&1 || true
    wait_for "every pod to end" 30 test -z "$("${kubectl[@]}" get pods --all-namespaces -o name 2>/dev/null)" ||
      "${kubectl[@]}" get pods --all-namespaces -o wide >&2 || true
  fi
  for name in metrics-server kube-router kube-proxy kubelet; do stop "$name"; done
  # The containers the kubelet had not yet collected, and any it could not stop.
  if [ -f "$root/containerd.pid" ]; then
    local ctr=(ctr --address "$containerd_socket" -n k8s.io)
    for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
    sleep 1
    for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$task" >/dev/null 2>&1 || true; done
    for container in $("${ctr[@]}" containers ls -q 2>/dev/null); do "${ctr[@]}" containers delete "$container" >/dev/null 2>&1 || true; done
  fi
  for name in containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$name"; done
  # Network namespaces of sandboxes torn down without CNI (containerd names them cni-<id>; nothing else here does).
  for netns in $(ip netns list 2>/dev/null | awk '/^cni-/ { print $1 }'); do ip netns delete "$netns" 2>/dev/null || true; done
  # Whatever the kubelet could not tear down: mounts below its directory, kube-proxy's and kube-router's rules.
  findmnt -rn -o TARGET | { grep "^$root/" || true; } | sort -r | xargs -r -n1 umount -l
  iptables-save | grep -q KUBE- && "$bin/kube-proxy" --cleanup >/dev/null 2>&1 || true
  "$root/bin/kube-router-$kube_router_version/kube-router" --cleanup-config >/dev/null 2>&1 || true
  iptables -t raw -D PREROUTING -s "$pod_cidr" -j NOTIFY-CLUSTER 2>/dev/null || true
  iptables -t raw -F NOTIFY-CLUSTER 2>/dev/null && iptables -t raw -X NOTIFY-CLUSTER 2>/dev/null || true
  ip link delete "$bridge" 2>/dev/null || true
  [ ! -d "$root" ] || find "$root" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
  echo "cluster: down"
}

status() {
  "${kubectl[@]}" get --raw '/readyz?verbose' | tail -1
  "${kubectl[@]}" get nodes,pods --all-namespaces -o wide
}

case "${1:-}" in
  up) up ;;
  load) shift; import_images "$@" ;;
  down) down ;;
  status) status ;;
  *) echo "usage: npm run cluster -- up|down|status|load <image>..." >&2; exit 2 ;;
esac
