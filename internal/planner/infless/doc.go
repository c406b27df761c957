// Package infless provides INFless's scheduling decisions (INFless §3.2 and §3.4): per-instance
// rate bounds (Eq. 1), the α-band that splits a function's load over its non-uniform instances and
// asks for scaling, and the batch-size-first greedy scheduler with resource-efficiency placement
// (Alg. 1, Eq. 10), plus sloserve's fragment-aware additions where §3.4 and §5.3 leave room: a
// share-priced form of Eq. 10 (MetricShare), releasing on the emptiest servers first
// (ReleaseEmptiestFirst) and emptying half-empty servers (Defragment). All of it is pure: given
// the facts, it returns a decision with its reasons.
//
//	R > R_max                                  → every instance at r_up; schedule R − R_max (Alg. 1)
//	αR_min + (1−α)R_max ≤ R ≤ R_max            → r_i = r_up − (R_max−R)/(R_max−R_min)·(r_up−r_low)
//	R < αR_min + (1−α)R_max                    → release instances until back in the band
package infless
