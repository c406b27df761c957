// Package app is sloserve's composition root for serving: Start builds the provider the
// configuration names (local worker processes, or pods through client-go), launches and waits
// for each model's fleet, starts the gateway with its models, ensembles and model repository,
// the controller over the configured policy, the dashboard and the SageMaker routes, and serves
// them on the gateway's listeners (gateway.Listen). `sloserve serve` and `sloserve demo` run it.
package app
