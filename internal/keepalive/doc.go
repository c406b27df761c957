// Package keepalive provides pure pre-warm and keep-alive policies for serverless instances —
// fixed keep-alive, the hybrid histogram policy (HHP, Shahrad et al., ATC'20) and INFless's
// Long-Short-Term Histogram (LSTH, §3.5) — and a replay harness over per-minute traces.
package keepalive
