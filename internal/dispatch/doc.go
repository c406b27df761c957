// Package dispatch provides pure instance picks — which instance of a snapshot gets the next batch.
package dispatch
