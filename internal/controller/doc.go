// Package controller is the live control loop: every sample period it reads the gateway's
// counters and the provider's fleet, asks each model's autoscale.Scaler (the same objects the
// simulator drives) for a decision, and applies it — launch through the provider, drain through
// the gateway, then terminate.
package controller
