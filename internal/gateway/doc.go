// Package gateway is sloserve's live front end: an Open Inference Protocol v2 server that queues
// each model's requests in a batcher driven by a batching.Policy, sends batches to the model's
// ready instances and answers every request exactly once.
package gateway
