// Package leader runs a function on one of several gateway replicas at a time: the holder of a
// coordination.k8s.io Lease, through client-go's leaderelection (docs/deployment.md).
package leader
