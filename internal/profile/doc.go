// Package profile provides service-time profiles — how long a batch of size b takes on an
// instance type — with readers for the measured profiles the papers published and for sloserve's own.
package profile
