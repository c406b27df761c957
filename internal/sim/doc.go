// Package sim provides the discrete-event simulator: a virtual clock and event heap, a virtual
// cloud with billing, spot interruptions and a serverless tier, virtual backends driven by
// service-time profiles, and the policy registry that bundles the same pure decision code the
// live runtime uses (batching, fleet scaling, routing).
package sim
