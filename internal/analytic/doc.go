// Package analytic implements BATCH's analytic model of a batching buffer in front of serverless
// functions (Ali et al., SC'20, §III–§VI): the buffer CTMC for Poisson, MMPP(2) and MAP(2) arrivals,
// the batch-size and latency distributions, MAP(2) fitting, service-time regression and the
// exhaustive (memory, max batch, timeout) optimiser; see README.md for the equations.
package analytic
