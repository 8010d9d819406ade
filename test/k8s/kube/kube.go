// Package kube pins the Kubernetes release whose components the local cluster runs (test/k8s): go build builds each
// command of k8s.io/kubernetes at the version go.mod requires.
package kube
