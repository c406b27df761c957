// Package autoscale provides pure fleet scalers: given a snapshot of the fleet and the observed
// load, and now, they return the instances to launch and terminate, a reason and when to ask again.
package autoscale
