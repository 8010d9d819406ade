// The CustomResourceDefinitions the production values' objects need, from their projects' own modules at these
// releases (test/k8s/crds.ts applies them): cert-manager (deploy/crds), KEDA (config/crd/bases) and the Prometheus
// operator (example/prometheus-operator-crd). go.sum pins each module's content.
module notify.local/crds

go 1.26.0

require (
	github.com/cert-manager/cert-manager v1.21.2
	github.com/kedacore/keda/v2 v2.20.2
	github.com/prometheus-operator/prometheus-operator v0.85.0
)
