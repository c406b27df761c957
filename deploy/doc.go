// Package deploy holds sloserve's Kubernetes manifests — the kustomize base (kustomize/) and the
// Helm chart (helm/sloserve) — and the test that renders both and checks they agree.
package deploy
