package analytic

// modelCache keeps the batching models (NewModel) and their batch laws (Model.At) built by
// the optimisations of one PolicyConfig.Solve: the reference's problem (Reference.Floor) and
// the plan's own are solved on the same fitted arrivals, and a model depends only on the
// arrivals, B and the timeout grid, not on the service times, prices or SLO, so the second
// optimisation reuses the first one's instead of rebuilding them (the hourly re-plans of a
// week-long trace are most of its run, issue #17). Models and laws are immutable, so sharing
// them leaves every plan bit-identical. A nil *modelCache keeps nothing.
type modelCache struct {
	models map[modelKey]*Model
	laws   map[lawKey]*Batching
}

type modelKey struct {
	a             *MAP
	b             int
	step, horizon float64
}

type lawKey struct {
	md      *Model
	timeout float64
	start   StartPhase
}

func newModelCache() *modelCache {
	return &modelCache{models: map[modelKey]*Model{}, laws: map[lawKey]*Batching{}}
}

// model returns NewModel(a, b, step, horizon), built once per cache.
func (c *modelCache) model(a *MAP, b int, step, horizon float64) (*Model, error) {
	if c == nil {
		return NewModel(a, b, step, horizon)
	}
	k := modelKey{a, b, step, horizon}
	if md, ok := c.models[k]; ok {
		return md, nil
	}
	md, err := NewModel(a, b, step, horizon)
	if err == nil {
		c.models[k] = md
	}
	return md, err
}

// law returns md.law(timeout, start) (filled on demand, Batching.fill), computed once per
// cache.
func (c *modelCache) law(md *Model, timeout float64, start StartPhase) (*Batching, error) {
	if c == nil {
		return md.law(timeout, start)
	}
	k := lawKey{md, timeout, start}
	if bt, ok := c.laws[k]; ok {
		return bt, nil
	}
	bt, err := md.law(timeout, start)
	if err == nil {
		c.laws[k] = bt
	}
	return bt, err
}
