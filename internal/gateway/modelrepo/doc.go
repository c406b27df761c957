// Package modelrepo loads, reloads and unloads the models of a model repository
// (internal/repository's layout: <dir>/<model>/<version>/model.onnx with a config.yaml) on the
// gateway: each version's generation is a model of the gateway (VersionKey) with the instances
// its config asks the provider for; the gateway publishes the loaded versions under their
// public names (Host.Publish) and serves Triton's repository extension over it.
package modelrepo
