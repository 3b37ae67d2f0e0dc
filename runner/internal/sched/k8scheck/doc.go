// Package k8scheck holds the tests that hold the Kubernetes export of package sched to the
// official API types and validation of k8s.io/api and k8s.io/apimachinery. Package sched renders
// its manifests from small types of its own and checks names with rules of its own, so that the
// runner binary carries none of those modules; these tests decode every manifest it writes
// strictly into batch/v1 Job and v1 ConfigMap and compare its name rules with the official ones.
//
// This is a module of its own, so that only its tests download the k8s.io modules: the main
// module's `go test ./...` does not reach it. `make test-k8s` runs it, and so does CI:
//
//	cd runner/internal/sched/k8scheck && go test -count=1 ./...
package k8scheck
