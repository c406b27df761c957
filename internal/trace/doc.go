// Package trace provides workload traces — readers for the published rate series, arrival lists
// and MAP fits — and deterministic arrival generators (Poisson per step, MMPP(2), MAP(2)).
package trace
