// Package report reads a simulation run directory (Summaries and time series) and renders the
// figures a reader of the papers expects as PNG, SVG and one self-contained HTML page.
package report
