package modelrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/repository"
)

// readyWaiter is a provider that can wait for one instance (local.Provider): a load waits on it
// per launched instance.
type readyWaiter interface {
	WaitReady(ctx context.Context, id string) (provider.Instance, error)
}

// VersionKey is the internal model name of one generation of a repository model's version:
// the batcher's name, the worker's model name and the metrics' model label. A reload makes a
// new generation, so that old and new run side by side until the new one is ready.
func VersionKey(model string, version int64, gen int) string {
	return fmt.Sprintf("%s@%d.%d", model, version, gen)
}

// Options configure New.
type Options struct {
	// Dir is the model repository (<dir>/<model>/<version>/model.onnx).
	Dir string
	// Stage is the directory the workers read models from (their --model-dir): it receives a
	// link <key>.onnx to each served version's model file.
	Stage string
	// Provider launches and terminates the versions' instances; one with WaitReady (the local
	// provider) is waited on per instance.
	Provider provider.Provider
	// StartTimeout bounds the wait for one instance to be ready.
	StartTimeout time.Duration
	// Policies builds each version's batching policy; nil means batching.Builtin().
	Policies batching.Registry
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
}

// Host is what a Repository needs of the gateway it serves the models on.
type Host interface {
	// AddModel starts serving a model (a version's generation, under its key).
	AddModel(m batcher.Model) error
	// AddInstance adds an instance to a served model.
	AddInstance(ctx context.Context, model string, in batcher.Instance) error
	// Instances returns the ids of a served model's instances that take new batches.
	Instances(model string) ([]string, error)
	// RemoveModel stops serving a model once its requests are answered.
	RemoveModel(ctx context.Context, name string) error
	// Configured reports whether name is served and not a repository model (a model of the
	// configuration).
	Configured(name string) bool
	// Hide makes key internal before its batcher is added: a loading generation is neither
	// addressable by name nor counted as ready.
	Hide(key string)
	// Publish routes each loaded model's name to its versions (version -> key); the keys of
	// generations being retired stay internal.
	Publish(loaded map[string]map[string]string)
}

// Repository loads, reloads and unloads the models of a model repository on a Gateway: each
// version of a model is a batcher (VersionKey) with the instances its config.yaml asks for;
// the highest version is the default. Its methods are safe for concurrent use and serialised.
type Repository struct {
	g    Host
	opts Options
	log  *slog.Logger

	mu     sync.Mutex                 // serialises Load, Unload and Step
	index  atomic.Pointer[[]indexRow] // the models' states for Index, set by snap
	gen    int
	models map[string]*repoModel // every model seen: loaded, loading, failed or unloaded
	seen   map[string]string     // the stamp of each changed model at the previous poll (settle)
	bg     sync.WaitGroup        // retirements of replaced generations
}

// repoModel is one model's state in the repository.
type repoModel struct {
	scan     repository.Model  // the last scan (its Stamp decides reloads)
	state    string            // oip.StateReady (loaded), StateLoading or StateUnavailable
	reason   string            // why it is unavailable
	loaded   map[string]string // served version -> batcher key; nil when not loaded
	insts    map[string][]string
	unloaded bool // unloaded on request: the poll loads it again only when its files change
}

// New returns the Repository of opts.Dir on g. It loads nothing; call Step.
func New(g Host, opts Options) (*Repository, error) {
	if opts.Provider == nil {
		return nil, errors.New("model repository: nil provider")
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("model_repository: %q is not a directory", opts.Dir)
	}
	if opts.Policies == nil {
		opts.Policies = batching.Builtin()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = time.Minute
	}
	r := &Repository{g: g, opts: opts, log: opts.Logger, models: map[string]*repoModel{}, seen: map[string]string{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Load loads model from the repository, or reloads it (its new versions replace the old ones
// once ready; requests in flight on the old are answered). Params are refused: the model's
// settings are its config.yaml.
func (r *Repository) Load(ctx context.Context, model string, params map[string]any) error {
	if len(params) > 0 {
		return fmt.Errorf("%w: load %s: parameters %v are not supported (settings come from %s)", oip.ErrBadRequest, model,
			slices.Sorted(maps.Keys(params)), repository.ConfigFile)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	scan, err := repository.ScanModel(r.opts.Dir, model)
	if err != nil {
		return fmt.Errorf("%w: load %s: %v", oip.ErrNotFound, model, err)
	}
	return r.load(ctx, scan)
}

// Unload stops serving model; it is not an error when it is not loaded.
func (r *Repository) Unload(ctx context.Context, model string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.models[model]
	if !ok || m.loaded == nil {
		if _, err := repository.ScanModel(r.opts.Dir, model); err != nil && !ok {
			return fmt.Errorf("%w: unload %s: %v", oip.ErrNotFound, model, err)
		}
		if ok {
			m.unloaded = true
		}
		return nil
	}
	m.unloaded = true
	return r.unload(ctx, model, m, "unloaded")
}

// load starts every version of scan in a new generation, waits until each has its instances
// ready, publishes them and retires the generation they replace. On failure the old
// generation keeps serving. Called with mu held.
func (r *Repository) load(ctx context.Context, scan repository.Model) error {
	name := scan.Name
	m := r.models[name]
	if m == nil {
		m = &repoModel{state: oip.StateUnavailable}
		r.models[name] = m
	}
	m.scan, m.unloaded = scan, false
	defer r.snap()
	if scan.Err != nil {
		if m.loaded == nil {
			m.state, m.reason = oip.StateUnavailable, scan.Err.Error()
		}
		r.log.Warn("model repository: model not loaded", "model", name, "err", scan.Err)
		return fmt.Errorf("%w: load %s: %v", oip.ErrBadRequest, name, scan.Err)
	}
	if r.g.Configured(name) {
		err := fmt.Errorf("%w: load %s: a configured model (models[]) has this name", oip.ErrBadRequest, name)
		m.state, m.reason = oip.StateUnavailable, err.Error()
		return err
	}
	if m.loaded == nil {
		m.state = oip.StateLoading
	}
	r.snap()
	defer r.snap()
	r.gen++
	keys, insts, err := r.start(ctx, scan, r.gen)
	if err != nil {
		r.retire(context.Background(), keys, insts)
		if m.loaded == nil {
			m.state, m.reason = oip.StateUnavailable, err.Error()
		}
		r.log.Warn("model repository: loading failed", "model", name, "err", err)
		return err
	}
	oldKeys, oldInsts := m.loaded, m.insts
	m.loaded, m.insts, m.state, m.reason = keys, insts, oip.StateReady, ""
	r.publish()
	if oldKeys != nil {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			r.retire(context.Background(), oldKeys, oldInsts)
		}()
	}
	vs := slices.Collect(maps.Keys(keys))
	slices.Sort(vs)
	r.log.Info("model repository: model loaded", "model", name, "versions", vs, "default", strconv.FormatInt(scan.Latest().Number, 10))
	return nil
}

// start adds the batchers of scan's versions and launches their instances. It returns what it
// started, also on error (for retire).
func (r *Repository) start(ctx context.Context, scan repository.Model, gen int) (map[string]string, map[string][]string, error) {
	keys, insts := map[string]string{}, map[string][]string{}
	c := scan.Config
	for _, v := range scan.Versions {
		key := VersionKey(scan.Name, v.Number, gen)
		link := filepath.Join(r.opts.Stage, key+".onnx")
		if err := stageFile(v.Path, link); err != nil {
			return keys, insts, fmt.Errorf("load %s: stage version %d: %w", scan.Name, v.Number, err)
		}
		r.hide(key)
		pol, err := r.opts.Policies.New(c.Batching)
		if err != nil {
			return keys, insts, fmt.Errorf("%w: load %s: %s: batching: %v", oip.ErrBadRequest, scan.Name, repository.ConfigFile, err)
		}
		if err := r.g.AddModel(batcher.Model{Name: key, SLO: c.SLO.Spec(), Policy: pol, QueueLimit: c.QueueLimit, Slots: c.Slots,
			MaxRows: c.MaxRows, MaxBatchBytes: c.MaxBatchBytes}); err != nil {
			return keys, insts, fmt.Errorf("load %s: %w", scan.Name, err)
		}
		keys[strconv.FormatInt(v.Number, 10)] = key
		for range c.Instances {
			in, err := r.opts.Provider.Launch(ctx, provider.Spec{Model: key, Type: c.InstanceType.Name, Tier: provider.TierVM})
			if err != nil {
				return keys, insts, fmt.Errorf("load %s version %d: %w", scan.Name, v.Number, err)
			}
			insts[key] = append(insts[key], in.ID)
		}
	}
	w, ok := r.opts.Provider.(readyWaiter)
	if !ok {
		return keys, insts, nil // the watch adds the instances once the provider reports them ready
	}
	for key, ids := range insts {
		for _, id := range ids {
			wctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
			in, err := w.WaitReady(wctx, id)
			cancel()
			if err == nil && !r.has(key, in.ID) { // the watch may have added it already
				if err = r.g.AddInstance(ctx, key, batcher.Instance{ID: in.ID, Addr: in.Addr}); err != nil && r.has(key, in.ID) {
					err = nil
				}
			}
			if err != nil {
				return keys, insts, fmt.Errorf("load %s: instance of %s: %w", scan.Name, key, err)
			}
		}
	}
	return keys, insts, nil
}

func (r *Repository) has(key, id string) bool {
	ids, _ := r.g.Instances(key)
	return slices.Contains(ids, id)
}

// retire removes a generation's batchers (their requests answered first), then terminates
// its instances, in parallel.
func (r *Repository) retire(ctx context.Context, keys map[string]string, insts map[string][]string) {
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.g.RemoveModel(ctx, key); err != nil && !errors.Is(err, oip.ErrModelNotFound) {
				r.log.Warn("model repository: removing a version", "model", key, "err", err)
			}
			os.Remove(filepath.Join(r.opts.Stage, key+".onnx"))
		}()
	}
	wg.Wait()
	for key, ids := range insts {
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.opts.Provider.Terminate(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
					r.log.Warn("model repository: terminating an instance", "model", key, "instance", id, "err", err)
				}
			}()
		}
	}
	wg.Wait()
}

// unload unpublishes m and retires its generation. Called with mu held.
func (r *Repository) unload(ctx context.Context, name string, m *repoModel, reason string) error {
	defer r.snap()
	keys, insts := m.loaded, m.insts
	m.loaded, m.insts, m.state, m.reason = nil, nil, oip.StateUnavailable, reason
	r.publish()
	r.retire(ctx, keys, insts)
	r.log.Info("model repository: model unloaded", "model", name, "reason", reason)
	return ctx.Err()
}

// hide makes key internal before its batcher is added (Host.Hide). Called with mu held.
func (r *Repository) hide(key string) { r.g.Hide(key) }

// publish routes the loaded models (Host.Publish). Called with mu held.
func (r *Repository) publish() {
	loaded := map[string]map[string]string{}
	for name, m := range r.models {
		if m.loaded != nil {
			loaded[name] = maps.Clone(m.loaded)
		}
	}
	r.g.Publish(loaded)
}

// Step rescans the repository and applies it: models not loaded are loaded (except those
// unloaded on request whose files did not change, and broken ones already reported), changed
// ones reloaded, removed ones unloaded. It returns the errors of the models it could not load.
// With settle, a new or changed model is loaded only when a previous Step (with settle) saw it
// the same: a model being copied or deleted is not loaded half-way.
func (r *Repository) Step(ctx context.Context, settle bool) error {
	scans, err := repository.Scan(r.opts.Dir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	seen := map[string]bool{}
	for _, s := range scans {
		seen[s.Name] = true
		m, known := r.models[s.Name]
		switch {
		case !known:
		case m.scan.Stamp == s.Stamp && (m.loaded != nil || m.unloaded || m.state == oip.StateUnavailable):
			delete(r.seen, s.Name)
			continue // unchanged
		}
		if settle && r.seen[s.Name] != s.Stamp {
			r.seen[s.Name] = s.Stamp // changed since the previous poll: wait until it settles
			continue
		}
		delete(r.seen, s.Name)
		if err := r.load(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	for name := range r.seen {
		if !seen[name] {
			delete(r.seen, name)
		}
	}
	for name, m := range r.models {
		if seen[name] {
			continue
		}
		if m.loaded != nil {
			if err := r.unload(ctx, name, m, "removed from the repository"); err != nil {
				errs = append(errs, err)
			}
		}
		delete(r.models, name)
	}
	r.snap()
	return errors.Join(errs...)
}

// Run calls Step every interval (a change is applied once two polls saw it the same) and
// whenever reload receives (applied at once), until ctx ends. Polling the
// files' modification times, rather than inotify, works for every file system (NFS, volumes
// mounted into containers, ConfigMap symlink swaps) at the cost of one directory walk per
// interval.
func (r *Repository) Run(ctx context.Context, every time.Duration, reload <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		settle := true
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-reload:
			r.log.Info("model repository: rescanning on request")
			settle = false
		}
		if err := r.Step(ctx, settle); err != nil && ctx.Err() == nil {
			r.log.Warn("model repository: rescan", "err", err)
		}
	}
}

// indexRow is one model's state as Index reports it.
type indexRow struct {
	name, state, reason string
	versions            []string          // loaded versions, ascending
	loaded              map[string]string // version -> batcher key
}

// snap publishes the models' states for Index, which does not wait for a load in progress.
// Called with mu held, after every state change.
func (r *Repository) snap() {
	rows := make([]indexRow, 0, len(r.models))
	for name, m := range r.models {
		row := indexRow{name: name, state: m.state, reason: m.reason, loaded: maps.Clone(m.loaded)}
		for _, v := range m.scan.Versions {
			if vs := strconv.FormatInt(v.Number, 10); m.loaded[vs] != "" {
				row.versions = append(row.versions, vs)
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b indexRow) int { return strings.Compare(a.name, b.name) })
	r.index.Store(&rows)
}

// Index lists the repository's models as Triton's repository index does: one entry per
// version of a loaded model (READY while it has an instance taking batches, else
// UNAVAILABLE), and one entry for a model loading, unloaded or broken, with the reason.
func (r *Repository) Index(ctx context.Context) []oip.RepositoryIndexEntry {
	rows := r.index.Load()
	if rows == nil {
		return nil
	}
	var out []oip.RepositoryIndexEntry
	for _, rw := range *rows {
		if rw.loaded == nil {
			out = append(out, oip.RepositoryIndexEntry{Name: rw.name, State: rw.state, Reason: rw.reason})
			continue
		}
		for _, vs := range rw.versions {
			e := oip.RepositoryIndexEntry{Name: rw.name, Version: vs, State: oip.StateReady}
			if ids, err := r.g.Instances(rw.loaded[vs]); err != nil || len(ids) == 0 {
				e.State, e.Reason = oip.StateUnavailable, "no instance is ready"
			}
			out = append(out, e)
		}
	}
	return out
}

// Close waits for the retirements of replaced generations (bounded by ctx).
func (r *Repository) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stageFile puts a version's model file in the stage as a hard link (a copy across file
// systems): the generation's workers, restarted or not, read the file as it was when loaded,
// whatever happens to the repository meanwhile (a file rewritten in place, a model removed).
func stageFile(src, dst string) error {
	os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
