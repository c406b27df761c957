// Package cluster provides the resource model of a cluster of servers with CPU cores and GPU
// streaming-multiprocessor shares, with placement, release and the fragment ratio of INFless §5.3.
package cluster
