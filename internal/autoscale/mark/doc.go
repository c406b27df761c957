// Package mark is MArk's autoscaler (MArk §4) as one autoscale.Scaler that the simulator's mark
// policy and the live controller both drive: arrival monitor → forecaster → greedy planner
// (Alg. 1), SLO monitor (§4.4), spot interruptions covered by burstable standbys (§4.5), and the
// Bouncer's view of the fleet (§4.3).
package mark
