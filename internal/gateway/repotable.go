package gateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway/modelrepo"
	"github.com/sloserve/sloserve/internal/oip"
)

// The model repository's public names on the gateway: the table the repository manager
// (package modelrepo) publishes, lookups through it, and the gateway as modelrepo's Host.

// The Gateway serves Triton's repository extension when a Repository is attached.
var _ oip.RepositoryManager = (*Gateway)(nil)

// errNoRepository answers load/unload on a gateway without a model repository.
var errNoRepository = fmt.Errorf("gateway: %w: no model repository is configured (model_repository, --model-repository)", oip.ErrNotImplemented)

// repoTable is the published view of the repository's loaded models: each public name's
// versions and the batcher key (internal model name, modelrepo.VersionKey) serving each. It is replaced, never
// modified.
type repoTable struct {
	models   map[string]*repoEntry
	internal map[string]bool // batcher keys of repository versions: not addressable by name
	live     map[string]bool // the keys of the published versions (not loading, not retiring)
}

type repoEntry struct {
	def      string            // the default version (highest)
	versions map[string]string // version ("3") -> batcher key
	list     []string          // versions, ascending, for the metadata
}

// lookup finds the batcher serving (model, version): a repository model's version ("" is its
// default) or a configured model (whose version the handler checks). It returns the version
// served for a repository model, "" otherwise.
func (g *Gateway) lookup(model, version string) (*served, string, error) {
	if t := g.repo.Load(); t != nil {
		if e, ok := t.models[model]; ok {
			v := version
			if v == "" {
				v = e.def
			}
			key, ok := e.versions[v]
			if !ok {
				return nil, "", fmt.Errorf("%w: model %q has no version %q (versions %v)", ErrModelNotFound, model, v, e.list)
			}
			b, err := g.batcher(key)
			if err != nil && g.repo.Load() != t {
				// A reload published a new generation and retired this one since t was read:
				// publishing precedes retiring, so the new table has the version's new key.
				return g.lookup(model, version)
			}
			return b, v, err
		}
		if t.internal[model] {
			return nil, "", fmt.Errorf("%w: %q", ErrModelNotFound, model)
		}
	}
	b, err := g.batcher(model)
	return b, "", err
}

// acquire is lookup for Infer: a repository version's batcher is held (users) until release,
// so that RemoveModel waits for the request's answer.
func (g *Gateway) acquire(model, version string) (*served, string, func(), error) {
	for {
		b, v, err := g.lookup(model, version)
		if err != nil || v == "" {
			return b, v, func() {}, err
		}
		b.Hold()
		if cur, ok := (*g.batchers.Load())[b.Name()]; ok && cur == b {
			return b, v, b.Release, nil
		}
		b.Release() // removed meanwhile: look again (the new generation, or not found)
	}
}

// repoMetadata is a repository version's metadata under its public name, with the model's
// versions.
func (g *Gateway) repoMetadata(model string, md *oip.ModelMetadata) *oip.ModelMetadata {
	t := g.repo.Load()
	if t == nil {
		return md
	}
	e, ok := t.models[model]
	if !ok {
		return md
	}
	out := *md
	out.Name = model
	out.Versions = e.list
	return &out
}

// removeModelPoll is how often RemoveModel checks that a removed model's requests are answered.
const removeModelPoll = 5 * time.Millisecond

// RemoveModel stops serving a model: new requests get ErrModelNotFound at once; the requests
// that hold it (repository versions, see acquire) and those queued are answered, batches in
// flight complete, then its batcher stops. When ctx ends first, what is left fails with
// ErrShuttingDown.
func (g *Gateway) RemoveModel(ctx context.Context, name string) error {
	g.mu.Lock()
	old := *g.batchers.Load()
	b, ok := old[name]
	if !ok {
		g.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrModelNotFound, name)
	}
	next := maps.Clone(old)
	delete(next, name)
	g.batchers.Store(&next)
	g.mu.Unlock()
	t := time.NewTicker(removeModelPoll)
	defer t.Stop()
	for b.Users() > 0 || b.Queued() > 0 {
		select {
		case <-ctx.Done():
			b.Stop(ctx)
			return fmt.Errorf("remove model %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
	b.Stop(ctx)
	g.metrics.Drop(name)
	g.log.Info("model removed", "model", name)
	return ctx.Err()
}

// LoadModel implements oip.RepositoryManager with the attached Repository.
func (g *Gateway) LoadModel(ctx context.Context, model string, params map[string]any) error {
	r := g.repoMgr.Load()
	if r == nil {
		return errNoRepository
	}
	return r.Load(ctx, model, params)
}

// UnloadModel implements oip.RepositoryManager with the attached Repository.
func (g *Gateway) UnloadModel(ctx context.Context, model string) error {
	r := g.repoMgr.Load()
	if r == nil {
		return errNoRepository
	}
	return r.Unload(ctx, model)
}

// DefaultModel is the model of the SageMaker routes: the first configured model, else the
// first repository model loaded at start.
func DefaultModel(cfg config.Config, g *Gateway) string {
	if len(cfg.Models) > 0 {
		return cfg.Models[0].Name
	}
	if t := g.repo.Load(); t != nil && len(t.models) > 0 {
		return slices.Sorted(maps.Keys(t.models))[0]
	}
	return ""
}

// ServedKey is the internal model name (name@version.generation) serving model's default
// repository version, or "" when the model is not loaded from the repository.
func (g *Gateway) ServedKey(model string) string {
	t := g.repo.Load()
	if t == nil {
		return ""
	}
	e, ok := t.models[model]
	if !ok {
		return ""
	}
	return e.versions[e.def]
}

// Repository loads, reloads and unloads a model repository's models on a Gateway
// (modelrepo.Repository).
type Repository = modelrepo.Repository

// RepositoryOptions configure NewRepository (modelrepo.Options).
type RepositoryOptions = modelrepo.Options

// NewRepository returns the Repository of opts.Dir on g and attaches it: g then serves the
// repository's load and unload routes. It loads nothing; call Step.
func NewRepository(g *Gateway, opts RepositoryOptions) (*Repository, error) {
	r, err := modelrepo.New(repoHost{g}, opts)
	if err != nil {
		return nil, err
	}
	empty := &repoTable{models: map[string]*repoEntry{}, internal: map[string]bool{}, live: map[string]bool{}}
	g.repo.CompareAndSwap(nil, empty)
	g.repoMgr.Store(r)
	return r, nil
}

// repoHost is the gateway as its repository manager's modelrepo.Host.
type repoHost struct{ *Gateway }

// Configured reports whether name is a model of the configuration (not the repository's).
func (h repoHost) Configured(name string) bool {
	t := h.repo.Load()
	if t == nil {
		return true
	}
	if _, ok := t.models[name]; ok {
		return false
	}
	_, err := h.batcher(name)
	return err == nil
}

// Hide makes key internal before its batcher is added: a loading generation is neither
// addressable by name nor counted by Ready. The repository manager serialises Hide and Publish.
func (h repoHost) Hide(key string) {
	old := h.repo.Load()
	t := &repoTable{models: old.models, internal: maps.Clone(old.internal), live: old.live}
	t.internal[key] = true
	h.repo.Store(t)
}

// Publish stores the table of the loaded models (name -> version -> key).
func (h repoHost) Publish(loaded map[string]map[string]string) {
	t := &repoTable{models: map[string]*repoEntry{}, internal: map[string]bool{}, live: map[string]bool{}}
	for name, versions := range loaded {
		e := &repoEntry{versions: versions}
		for v, key := range versions {
			e.list = append(e.list, v)
			t.internal[key] = true
			t.live[key] = true
		}
		slices.SortFunc(e.list, func(a, b string) int {
			x, _ := strconv.ParseInt(a, 10, 64)
			y, _ := strconv.ParseInt(b, 10, 64)
			return int(min(max(x-y, -1), 1))
		})
		e.def = e.list[len(e.list)-1]
		t.models[name] = e
	}
	// Keys of generations being retired stay internal: a retired version is not addressable.
	if old := h.repo.Load(); old != nil {
		bs := *h.batchers.Load()
		for k := range old.internal {
			if _, ok := bs[k]; ok {
				t.internal[k] = true
			}
		}
	}
	h.repo.Store(t)
}
