// Package metricsserver pins the metrics-server release that serves the resource metrics API (metrics.k8s.io) in the
// local cluster (test/k8s), which HorizontalPodAutoscalers on CPU read: go build builds its command at the version
// go.mod requires.
package metricsserver

import _ "sigs.k8s.io/metrics-server/pkg/server"
