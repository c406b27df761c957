// Package provider defines where instances come from: the Provider interface that the local,
// kubernetes and simulated clouds implement, and the instance lifecycle they share.
package provider
