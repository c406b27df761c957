// Package measure runs real classifiers over a labelled sample and collects their answers and
// per-request latencies as ensemble.Answers, for `sloserve ensemble eval`.
package measure
