// Package kubernetes is the provider.Provider that runs each sloserve instance as one Pod through
// client-go, reads readiness from the API server, and replaces instances on nodes marked for
// spot interruption.
package kubernetes
