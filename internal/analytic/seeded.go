package analytic

import "fmt"

// NewOnlineSeeded is NewOnline that starts from plan instead of vanilla Lambda until its first
// fit: a configuration solved offline on the load the operator already knows (e.g. the mean rate
// of the trace's tuning part, BATCH §VI-D's "initial" plan made from history rather than from
// none). The online re-fits replace it as NewOnline's would. plan must have MaxBatch ≥ 1 and a
// memory inside svc's domain.
func NewOnlineSeeded(cfg PolicyConfig, svc ServiceModel, plan Plan) (*Online, error) {
	o, err := NewOnline(cfg, svc)
	if err != nil {
		return nil, err
	}
	if _, _, mlo, mhi := svc.Domain(); plan.MaxBatch < 1 || plan.MemoryMB < mlo || plan.MemoryMB > mhi {
		return nil, fmt.Errorf("batch policy: seed plan %d MB, B %d outside the service's domain [%d, %d] MB, B ≥ 1", plan.MemoryMB, plan.MaxBatch, mlo, mhi)
	}
	if plan.Reason == "" {
		plan.Reason = "seeded"
	}
	o.plan = plan
	return o, nil
}
