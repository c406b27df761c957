// Package k8s is the end-to-end test of the kubernetes provider and its endpoint discovery
// against a real control plane (scripts/k8s-controlplane.sh); build tag e2e, run by make e2e-k8s.
package k8s
