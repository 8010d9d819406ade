// Package coredns pins the CoreDNS release that serves the local cluster's DNS (test/k8s): go build builds its
// command at the version go.mod requires.
package coredns

import _ "github.com/coredns/coredns/core/plugin"
