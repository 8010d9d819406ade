// kube-strict decodes every object of a rendered chart (multi-document YAML on stdin) into the Kubernetes API's own Go
// types with strict field validation, as the API server does for `kubectl apply` (--validate=strict): an unknown or
// duplicated field, or a value of the wrong type, is an error. Kinds the built-in scheme does not know (CRDs) are
// reported as skipped; the Node test validates those against the CRD schemas of the kubernetes-models packages.
// Output: one JSON line per object, {"kind","name","status":"ok"|"skipped"|"error","error"}.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

type result struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

type meta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func main() {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
	failed := false
	for {
		document, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kube-strict: cannot read input:", err)
			os.Exit(2)
		}
		if len(bytes.TrimSpace(document)) == 0 {
			continue
		}
		var m meta
		if err := yaml.Unmarshal(document, &m); err != nil {
			failed = true
			_ = out.Encode(result{Status: "error", Error: "not a YAML object: " + err.Error()})
			continue
		}
		if m.Kind == "" {
			continue // a document holding only comments
		}
		r := result{Kind: m.Kind, Name: m.Metadata.Name, Status: "ok"}
		if _, _, err := decoder.Decode(document, nil, nil); err != nil {
			if runtime.IsNotRegisteredError(err) {
				r.Status = "skipped"
			} else {
				failed = true
				r.Status = "error"
				r.Error = err.Error()
			}
		}
		_ = out.Encode(r)
	}
	if failed {
		os.Exit(1)
	}
}
