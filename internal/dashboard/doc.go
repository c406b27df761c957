// Package dashboard serves sloserve's live operator page at /ui: per model, arrival rate and
// forecast, instances by type, tier and state, batch sizes, latency percentiles against the SLO,
// SLO attainment and cost, sampled from a Source into a bounded ring and drawn with the embedded
// Apache ECharts (no CDN, nothing fetched at run time).
package dashboard
