// Package discovery turns the API server's view of sloserve's worker pods into add, drain and
// remove events with instance addresses, for the gateway's endpoint set.
package discovery
