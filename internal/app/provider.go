package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
	"github.com/sloserve/sloserve/internal/provider/local"
)

// newProvider builds and starts the provider cfg.Provider.Kind names. The result implements
// io.Closer (Stack.Close closes it).
// localConfig is the local provider's configuration of cfg's workers.
func localConfig(cfg config.Config, opts StackOptions) local.Config {
	w := cfg.Workers
	args := append([]string{"--runtime", w.Runtime}, w.Args...)
	if w.ONNXRuntimeLib != "" {
		args = append(args, "--onnxruntime-lib", w.ONNXRuntimeLib)
	}
	return local.Config{Binary: w.Binary, Args: args, Env: opts.Env, StartTimeout: w.StartTimeout,
		HealthInterval: w.HealthInterval, StopTimeout: w.StopTimeout, StateDir: cmp.Or(w.StateDir, local.DefaultStateDir())}
}

func newProvider(ctx context.Context, cfg config.Config, opts StackOptions, log *slog.Logger) (provider.Provider, error) {
	if len(opts.Attach) > 0 {
		return &staticProvider{insts: slices.Clone(opts.Attach)}, nil
	}
	switch kind := cfg.Provider.Kind; kind {
	case config.ProviderLocal, "":
		lc := localConfig(cfg, opts)
		// Each worker enforces its own concurrency — the models' slots — so that gateway
		// replicas sharing it never overload it (internal/batcher/busy.go); workers.args may
		// override it (the last --max-in-flight wins). A repository's models set their slots
		// in their own config.yaml, unknown here: their workers run without a limit.
		if cfg.ModelRepository == "" {
			lc.Args = append([]string{"--max-in-flight", strconv.Itoa(maxSlots(cfg.Models))}, lc.Args...)
		}
		if cfg.Controller.PlacesInstances() {
			// INFless places each instance's ⟨c, g⟩ on a server; the provider accounts for them.
			cl := cfg.Controller.Cluster
			lc.Servers = slices.Repeat([]cluster.Resources{{CPU: cl.Threads(), GPU: cl.GPU}}, cl.Servers)
		}
		return local.New(lc, log)
	case config.ProviderKubernetes:
		k := cfg.Provider.Kubernetes
		client, err := kubeClient(cfg, opts)
		if err != nil {
			return nil, err
		}
		kc := KubernetesConfig(k)
		if cfg.ModelRepository == "" { // a repository's models set their slots in their own config
			kc.MaxInFlight = slotsByModel(cfg.Models)
		}
		p, err := kubernetes.New(client, kc, log.With("provider", kind))
		if err != nil {
			return nil, fmt.Errorf("provider.kubernetes: %w", err)
		}
		sctx, cancel := context.WithTimeout(ctx, k.StartTimeout)
		defer cancel()
		if err := p.Start(sctx); err != nil {
			return nil, fmt.Errorf("provider.kubernetes: %w", err)
		}
		return p, nil
	default:
		return nil, fmt.Errorf("provider.kind: unknown provider %q", kind)
	}
}

// maxSlots is the largest slots of the models (at least 1): the batches one local worker takes at
// once.
func maxSlots(ms []config.Model) int {
	n := 1
	for _, m := range ms {
		n = max(n, m.Slots)
	}
	return n
}

// slotsByModel maps each model to its slots: the --max-in-flight of its Kubernetes workers
// (one model per pod).
func slotsByModel(ms []config.Model) map[string]int {
	out := make(map[string]int, len(ms))
	for _, m := range ms {
		out[m.Name] = max(1, m.Slots)
	}
	return out
}

// KubernetesConfig converts the file's provider.kubernetes section to the provider's Config:
// kubernetes.DefaultConfig with every field the file sets, the namespace resolved
// (Kubernetes.EffectiveNamespace) and the instance types of the cost catalog extended by
// provider.kubernetes.types.
func KubernetesConfig(k config.Kubernetes) kubernetes.Config {
	c := kubernetes.DefaultConfig()
	c.Namespace = k.EffectiveNamespace()
	c.Image = k.Image
	c.ImagePullPolicy = corev1.PullPolicy(k.ImagePullPolicy)
	c.Command = slices.Clone(k.Command)
	c.Args = slices.Clone(k.Args)
	c.Port = k.WorkerPort
	c.ServiceAccountName = k.ServiceAccount
	c.StopTimeout = k.StopTimeout
	c.Types = kubernetes.ResourcesFromCatalog(cost.DefaultCatalog())
	for n, r := range k.Types {
		c.Types[n] = kubernetes.Resources{MilliCPU: r.MilliCPU, MemoryMiB: r.MemoryMiB, GPUs: r.GPUs}
	}
	c.OnDemandNodeSelector = maps.Clone(map[string]string(k.OnDemandNodeSelector))
	c.SpotNodeSelector = maps.Clone(map[string]string(k.SpotNodeSelector))
	c.SpotTolerations = nil
	for _, t := range k.SpotTolerations {
		c.SpotTolerations = append(c.SpotTolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	c.WatchNodes = k.WatchNodes
	c.InterruptionTaints = slices.Clone(k.InterruptionTaints)
	c.InterruptionConditions = nil
	for _, cond := range k.InterruptionConditions {
		c.InterruptionConditions = append(c.InterruptionConditions, corev1.NodeConditionType(cond))
	}
	c.ReplaceInterrupted = k.ReplaceInterrupted
	c.InterruptionGrace = k.InterruptionGrace
	return c
}

// readyWaiter is a provider that can wait for one instance (local.Provider).
type readyWaiter interface {
	WaitReady(ctx context.Context, id string) (provider.Instance, error)
}

// launchFleet launches, per model, the instances that bring its running fleet (launching or
// ready instances of its instance type, e.g. pods a previous serve left in the namespace) up to
// the model's instances, and waits until they are ready. A provider with WaitReady (local) is
// waited on per launched instance, each within workers.start_timeout; any other (kubernetes) is
// polled until every model has its instances ready, within provider.kubernetes.start_timeout.
func launchFleet(ctx context.Context, cfg config.Config, prov provider.Provider, log *slog.Logger) error {
	have, err := prov.Instances(ctx)
	if err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	var ids []string
	for _, m := range cfg.Models {
		spec := provider.Spec{Model: m.Name, Type: m.InstanceType.Name, Tier: provider.TierVM}
		running := 0
		for _, in := range have {
			if in.Spec.Model == m.Name && in.Spec.Type == spec.Type && (in.State == provider.StateLaunching || in.State == provider.StateReady) {
				running++
			}
		}
		if running > 0 {
			log.Info("adopting running instances", "model", m.Name, "type", spec.Type, "instances", running)
		}
		for range m.Instances - running {
			if cfg.Controller.PlacesInstances() {
				// INFless sizes and places every instance: the first ones are b = 1 on one
				// thread (what Alg. 1 picks for a trickle), first fit on the provider's servers.
				if err := placeFirst(prov, &spec, m.SLO.Spec().Threshold); err != nil {
					return fmt.Errorf("start workers: %s: %w", m.Name, err)
				}
			}
			in, err := prov.Launch(ctx, spec)
			if err != nil {
				return err
			}
			ids = append(ids, in.ID)
		}
	}
	if w, ok := prov.(readyWaiter); ok {
		for _, id := range ids {
			wctx, cancel := context.WithTimeout(ctx, cfg.Workers.StartTimeout)
			_, err := w.WaitReady(wctx, id)
			cancel()
			if err != nil {
				return fmt.Errorf("start workers: %w", err)
			}
		}
		return nil
	}
	return waitFleet(ctx, cfg, prov, cfg.Provider.Kubernetes.StartTimeout, readyPoll)
}

// placeFirst gives spec INFless's smallest configuration — b = 1 on controller.INFlessThreads
// threads, no GPU — on the first server of prov (a controller.Placer) with room for it. Its
// batch timeout is the SLO threshold: a b = 1 instance takes each request at once anyway.
func placeFirst(prov provider.Provider, spec *provider.Spec, slo time.Duration) error {
	pl, ok := prov.(controller.Placer)
	if !ok {
		return errors.New("controller.policy infless: the provider places no instances")
	}
	c := pl.Cluster()
	if c == nil {
		return errors.New("controller.policy infless: the provider has no servers")
	}
	r := cluster.Resources{CPU: controller.INFlessThreads}
	j, ok := c.FirstFit(r)
	if !ok {
		return fmt.Errorf("no server has room for %+v: %w", r, provider.ErrNoRoom)
	}
	spec.Resources, spec.Server, spec.MaxBatch, spec.MaxWait = r, j, 1, slo
	return nil
}

// readyPoll is how often waitFleet polls a provider's instances (the kubernetes provider reads
// an informer cache, so a poll costs no API call).
const readyPoll = 100 * time.Millisecond

// waitFleet polls prov until every model of cfg has at least its configured number of ready
// instances of its instance type, or within has passed.
func waitFleet(ctx context.Context, cfg config.Config, prov provider.Provider, within, every time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		insts, err := prov.Instances(ctx)
		var short []string
		for _, m := range cfg.Models {
			ready, states := 0, map[provider.State]int{}
			for _, in := range insts {
				if in.Spec.Model == m.Name && in.Spec.Type == m.InstanceType.Name {
					states[in.State]++
					if in.State == provider.StateReady {
						ready++
					}
				}
			}
			if ready < m.Instances {
				short = append(short, fmt.Sprintf("%s: %d of %d ready (%s)", m.Name, ready, m.Instances, stateCounts(states)))
			}
		}
		if err == nil && len(short) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%s", strings.Join(short, "; "))
			}
			return fmt.Errorf("start workers: not ready within %v: %w", within, err)
		case <-t.C:
		}
	}
}

func stateCounts(m map[provider.State]int) string {
	if len(m) == 0 {
		return "no instances"
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[s], s))
	}
	return strings.Join(parts, ", ")
}

// closeProvider closes prov when it holds resources (worker processes, informers).
func closeProvider(prov provider.Provider) error {
	if c, ok := prov.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// stageRepository makes the workers' model directory of a configuration with a model
// repository, and adds it to their arguments. It returns "" without a repository.
func stageRepository(cfg *config.Config) (string, error) {
	if cfg.ModelRepository == "" {
		return "", nil
	}
	if st, err := os.Stat(cfg.ModelRepository); err != nil || !st.IsDir() {
		return "", fmt.Errorf("model_repository: %q is not a directory", cfg.ModelRepository)
	}
	stage, err := os.MkdirTemp("", "sloserve-repository-")
	if err != nil {
		return "", fmt.Errorf("model_repository: %w", err)
	}
	cfg.Workers.Args = append(slices.Clone(cfg.Workers.Args), "--model-dir", stage)
	return stage, nil
}

func removeStage(stage string) {
	if stage != "" {
		os.RemoveAll(stage)
	}
}
