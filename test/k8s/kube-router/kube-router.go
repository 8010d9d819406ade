// Package kuberouter pins the kube-router release that enforces NetworkPolicies in the local cluster (test/k8s): go
// build builds its command at the version go.mod requires. Only its firewall runs (no routing, no service proxy).
package kuberouter

import _ "github.com/cloudnativelabs/kube-router/v2/pkg/cmd"
