// Package local is the provider that runs instances as `sloserve worker` processes on this
// machine: it starts them, health-checks them, restarts crashed ones and stops them.
package local
