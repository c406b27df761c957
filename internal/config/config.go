package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// Config is the serving configuration of `sloserve serve`.
type Config struct {
	// Gateway configures the HTTP front end.
	Gateway Gateway `yaml:"gateway"`
	// Provider selects what runs the instances: local worker processes or Kubernetes pods.
	Provider Provider `yaml:"provider"`
	// Workers configures the local provider that runs `sloserve worker` processes.
	Workers Workers `yaml:"workers"`
	// Models lists the served models; at least one unless ModelRepository is set.
	Models []Model `yaml:"models"`
	// ModelRepository is a Triton-style model repository directory (path): every
	// <dir>/<model>/<version>/model.onnx is served (ONNX through the workers' runtime), each
	// model with the settings of its optional <dir>/<model>/config.yaml (a models[] entry without
	// name). "" serves no repository. The gateway rescans it on SIGHUP and every
	// RepositoryPoll.
	ModelRepository string `yaml:"model_repository"`
	// RepositoryPoll is how often the model repository's files are checked for changes
	// (duration); changed models are reloaded, new ones loaded, removed ones unloaded.
	RepositoryPoll time.Duration `yaml:"model_repository_poll"`
	// Ensembles lists Cocktail ensembles over the models, each addressed like a model.
	Ensembles []Ensemble `yaml:"ensembles"`
	// Controller sizes each model's fleet.
	Controller Controller `yaml:"controller"`
	// Serverless configures the live function tier (off by default).
	Serverless Serverless `yaml:"serverless"`
	// Policies holds policy options keyed by registered policy name, in the same schema as a
	// sim config's policies section (docs/config.md, "One options schema"): the one for
	// controller.policy applies, over the live preset.
	Policies policy.Sections `yaml:"policies"`
}

// Gateway configures the gateway's listener, timeouts and limits.
type Gateway struct {
	// Addr is the listen address, host:port (loopback by default).
	Addr string `yaml:"addr"`
	// GRPCAddr is the listen address of the OIP v2 gRPC endpoint (the same gateway core),
	// host:port; "" serves no gRPC.
	GRPCAddr string `yaml:"grpc_addr"`
	// ReadHeaderTimeout bounds reading request headers (duration, e.g. "5s").
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request (duration).
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds answering a request after its headers (duration).
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout bounds an idle keep-alive connection (duration).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds request headers (bytes).
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxBodyBytes bounds a request body (bytes).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxConnections bounds the gateway's open client connections, REST and gRPC together
	// (connections). At the bound a new connection closes the oldest idle one (a keep-alive
	// connection between requests, a gRPC connection with no stream, or one that has sent
	// nothing for a second) and takes its place; when none is idle, REST still serves health
	// probes on a few reserved connections and any other connection is closed at once. The
	// bound is lowered, with a warning, to fit the process's descriptor limit (which `sloserve
	// serve` raises to its hard limit) less a reserve for worker connections and files.
	// 0 means sized from the descriptor limit alone.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient bounds the open connections from one client IP address
	// (connections); beyond it new connections from that address are closed at once. 0 means
	// no per-client bound.
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// GRPCMaxConcurrentStreams bounds the concurrent streams (RPCs) of one gRPC connection
	// (streams).
	GRPCMaxConcurrentStreams int `yaml:"grpc_max_concurrent_streams"`
	// GRPCMaxConnectionAge bounds a gRPC connection's life (duration): the server then asks the
	// client to reconnect (GOAWAY) and closes it after write_timeout more. A gRPC connection
	// with no stream for idle_timeout is closed likewise.
	GRPCMaxConnectionAge time.Duration `yaml:"grpc_max_connection_age"`
	// MaxInflightBodyBytes bounds the request bytes the gateway holds at once, over all REST
	// and gRPC requests (bytes). A REST body costs three times its size (the raw body the
	// gateway may forward, the decoder's copy and the decoded tensors): its Content-Length is reserved before it is read, a chunked body reserves as it
	// is read; a gRPC request reserves three times its message size once
	// received. Past the bound requests
	// are answered 503 (gRPC UNAVAILABLE) with Retry-After. Must be at least three times
	// max_body_bytes.
	MaxInflightBodyBytes int64 `yaml:"max_inflight_body_bytes"`
	// BackendTimeout bounds one batch's round trip to an instance (duration).
	BackendTimeout time.Duration `yaml:"backend_timeout"`
	// RetryAfter is the Retry-After hint of 429 and 503 answers (duration, whole seconds sent).
	RetryAfter time.Duration `yaml:"retry_after"`
	// SyncInterval is how often the gateway reconciles its instances with the provider (duration).
	SyncInterval time.Duration `yaml:"sync_interval"`
	// ShutdownGrace bounds a graceful shutdown on SIGTERM or SIGINT (duration): readiness fails
	// (/v2/health/ready answers 400), after shutdown_delay the listeners close, and the requests the gateway holds (being
	// read, queued or in a batch) are finished; whatever is left when the grace ends is failed
	// and the process exits. Keep it below the pod's terminationGracePeriodSeconds. 0 means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// ShutdownDelay is how long a shutting-down gateway keeps accepting connections after its
	// readiness started failing (duration), so that load balancers (a Kubernetes Service's
	// endpoints) stop sending it new ones first; 0 (the default) closes the listeners at once,
	// which clients of a set of replicas see as a refused connection to retry elsewhere.
	ShutdownDelay time.Duration `yaml:"shutdown_delay"`
	// Dispatch names the pick that chooses the instance for each batch (internal/dispatch:
	// least-outstanding, weighted-least-outstanding or round-robin).
	Dispatch string `yaml:"dispatch"`
	// AdminToken, when not empty, is the bearer token ("Authorization: Bearer <token>") that the
	// admin endpoints require: ensemble label feedback and the dashboard's data. "" leaves them
	// open, which is safe only on a loopback address; `sloserve serve` reads
	// $SLOSERVE_ADMIN_TOKEN when this is empty.
	AdminToken string `yaml:"admin_token"`
	// TLSCert and TLSKey are the paths of a PEM certificate (chain) and its private key; when
	// both are set the gateway's HTTP listener serves HTTPS. Both or neither.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// LogFormat is the format of `sloserve serve`'s log on stderr: "text" (key=value) or "json"
	// (one JSON object per line); --log-format overrides it.
	LogFormat string `yaml:"log_format"`
	// AccessLogSample is the fraction of HTTP requests answered below 500 that are written to
	// the access log (ratio in [0, 1]; one line per request: method, route, model, status,
	// duration, bytes, request id). Answers of 500 and above are always logged. 0, the default,
	// logs only those: at thousands of requests per second a line per request costs more CPU
	// and log volume than it is worth, and the metrics already count every request.
	AccessLogSample float64 `yaml:"access_log_sample"`
	// AdminAddr is the listen address (host:port, loopback only) of the admin server serving
	// Go's pprof profiles under /debug/pprof/; "" (the default) serves none.
	AdminAddr string `yaml:"admin_addr"`
	// OTLPEndpoint is the URL of an OpenTelemetry collector's OTLP/HTTP endpoint (e.g.
	// "http://127.0.0.1:4318") to which the gateway and its local workers export trace spans;
	// "" uses $OTEL_EXPORTER_OTLP_ENDPOINT, and when both are empty nothing is exported (the
	// clients' W3C traceparent is still passed on to the workers).
	OTLPEndpoint string `yaml:"otlp_endpoint"`
}

// DefaultShutdownGrace is gateway.shutdown_grace's default: 25 s, within Kubernetes' default
// terminationGracePeriodSeconds of 30.
const DefaultShutdownGrace = 25 * time.Second

// EffectiveShutdownGrace is ShutdownGrace, or DefaultShutdownGrace when 0.
func (g Gateway) EffectiveShutdownGrace() time.Duration {
	if g.ShutdownGrace > 0 {
		return g.ShutdownGrace
	}
	return DefaultShutdownGrace
}

// Workers configures the local provider.
type Workers struct {
	// Binary is the sloserve executable run as `Binary worker ...`; "" means this executable.
	Binary string `yaml:"binary"`
	// Runtime is the workers' model runtime: "native" (pure Go) or "onnxruntime".
	Runtime string `yaml:"runtime"`
	// ONNXRuntimeLib is the path of libonnxruntime.so for the onnxruntime runtime; "" means the
	// worker's default ($ONNXRUNTIME_LIB, then .cache/onnxruntime).
	ONNXRuntimeLib string `yaml:"onnxruntime_lib"`
	// Args are extra worker arguments.
	Args []string `yaml:"args"`
	// StartTimeout bounds a worker's start until ready (duration).
	StartTimeout time.Duration `yaml:"start_timeout"`
	// HealthInterval is the period of a worker's health checks (duration).
	HealthInterval time.Duration `yaml:"health_interval"`
	// StopTimeout is the time between SIGTERM and SIGKILL when stopping a worker (duration).
	StopTimeout time.Duration `yaml:"stop_timeout"`
	// StateDir is the directory where running workers are recorded (pidfiles), so that a
	// restarted serve kills the workers of one that crashed; "" means the local provider's
	// default ($XDG_RUNTIME_DIR/sloserve/workers or <tmp>/sloserve-<uid>/workers).
	StateDir string `yaml:"state_dir"`
}

// Model is one served model.
type Model struct {
	// Name is the model's name (a bundled model, or one the workers' --model-dir holds).
	Name string `yaml:"name"`
	// SLO is the model's latency objective.
	SLO SLO `yaml:"slo"`
	// Instances is the number of worker processes serving the model (instances).
	Instances int `yaml:"instances"`
	// Slots is the number of batches one instance takes at once (batches).
	Slots int `yaml:"slots"`
	// QueueLimit is the largest number of requests waiting for dispatch (requests); beyond it
	// requests are refused with 429.
	QueueLimit int `yaml:"queue_limit"`
	// MaxRows is the most rows one request may carry (rows); more is refused with 400. 0 means
	// no bound beyond gateway.max_body_bytes.
	MaxRows int64 `yaml:"max_rows"`
	// MaxBatchBytes is the most tensor data one batch sends to a worker (bytes): a batch closes
	// before a request that would take it past this, and a larger request goes alone. 0 means
	// 16 MiB (a quarter of the workers' default body limit).
	MaxBatchBytes int64 `yaml:"max_batch_bytes"`
	// Batching selects the batching policy and its parameters; its slo is filled from SLO.
	Batching batching.Config `yaml:"batching"`
	// InstanceType is what the model's workers run as: name, price, capacity, per-instance batch.
	InstanceType InstanceType `yaml:"instance_type"`
}

// SLO is a latency objective as written in the file.
type SLO struct {
	// Threshold is the latency bound (duration); a request's deadline is arrival + it. The same
	// field, name and unit as a sim config's slo.threshold; when set it replaces threshold_ms.
	Threshold time.Duration `yaml:"threshold"`
	// ThresholdMS is the latency bound in milliseconds (the older spelling of threshold).
	ThresholdMS float64 `yaml:"threshold_ms"`
	// Target is the fraction of requests, in (0, 1], that must meet the threshold.
	Target float64 `yaml:"target"`
}

// normalize makes threshold, when set, the threshold in milliseconds too.
func (s *SLO) normalize() {
	if s.Threshold > 0 {
		s.ThresholdMS = float64(s.Threshold) / float64(time.Millisecond)
	}
}

// Spec converts s to an slo.Spec.
func (s SLO) Spec() slo.Spec {
	return slo.Spec{Threshold: time.Duration(s.ThresholdMS * float64(time.Millisecond)), Target: s.Target}
}

// Defaults (not from papers unless they say so).
const (
	// DefaultAddr is where `sloserve serve` listens: loopback only.
	DefaultAddr = "127.0.0.1:8080"
	// DefaultRepositoryPoll checks the model repository for changes every 2 s.
	DefaultRepositoryPoll = 2 * time.Second
	// DefaultInstances is one worker per model.
	DefaultInstances = 1
	// DefaultSlots is one batch at a time per instance: a worker computes one batch per core.
	DefaultSlots = 1
	// DefaultQueueLimit bounds a model's queue at 1024 requests.
	DefaultQueueLimit = 1024
	// DefaultMaxConnections bounds the gateway's client connections: a quarter of the usual
	// 20 000-descriptor hard limit leaves room for worker connections and files.
	DefaultMaxConnections = 5000
	// DefaultMaxConnectionsPerClient lets one client address hold a fifth of the connections.
	DefaultMaxConnectionsPerClient = 1024
	// DefaultGRPCMaxConcurrentStreams bounds the RPCs of one gRPC connection.
	DefaultGRPCMaxConcurrentStreams = 128
	// DefaultGRPCMaxConnectionAge makes gRPC clients reconnect every 30 minutes, so that
	// connections rebalance and none lives forever.
	DefaultGRPCMaxConnectionAge = 30 * time.Minute
	// DefaultMaxInflightBodyBytes lets two REST bodies of the default 64 MiB limit (three
	// times their size each) be held at once.
	DefaultMaxInflightBodyBytes = 384 << 20
	// DefaultRuntime is the pure-Go model runtime, which needs no native library.
	DefaultRuntime = "native"
)

// DefaultModel returns a model entry with the default SLO (MArk §5.1: 98 % within 200 ms), one
// instance and the default batching configuration.
func DefaultModel(name string) Model {
	s := slo.DefaultSpec()
	b := batching.DefaultConfig()
	b.SLO = s.Threshold
	return Model{
		Name:         name,
		SLO:          SLO{ThresholdMS: float64(s.Threshold) / float64(time.Millisecond), Target: s.Target},
		Instances:    DefaultInstances,
		Slots:        DefaultSlots,
		QueueLimit:   DefaultQueueLimit,
		Batching:     b,
		InstanceType: DefaultInstanceType(),
	}
}

// Default returns the configuration of `sloserve serve` without --config: the gateway on
// 127.0.0.1:8080 and no models (the command adds the bundled ones).
func Default() Config {
	return Config{
		RepositoryPoll: DefaultRepositoryPoll,
		Gateway: Gateway{
			Addr:                     DefaultAddr,
			ReadHeaderTimeout:        5 * time.Second,
			ReadTimeout:              30 * time.Second,
			WriteTimeout:             60 * time.Second,
			IdleTimeout:              120 * time.Second,
			MaxHeaderBytes:           64 << 10,
			MaxBodyBytes:             64 << 20,
			MaxConnections:           DefaultMaxConnections,
			MaxConnectionsPerClient:  DefaultMaxConnectionsPerClient,
			GRPCMaxConcurrentStreams: DefaultGRPCMaxConcurrentStreams,
			GRPCMaxConnectionAge:     DefaultGRPCMaxConnectionAge,
			MaxInflightBodyBytes:     DefaultMaxInflightBodyBytes,
			BackendTimeout:           30 * time.Second,
			RetryAfter:               time.Second,
			SyncInterval:             500 * time.Millisecond,
			ShutdownGrace:            DefaultShutdownGrace,
			Dispatch:                 dispatch.DefaultName,
			LogFormat:                "text",
		},
		Workers: Workers{
			Runtime:        DefaultRuntime,
			StartTimeout:   30 * time.Second,
			HealthInterval: time.Second,
			StopTimeout:    5 * time.Second,
		},
		Provider:   DefaultProvider(),
		Controller: DefaultController(),
	}
}

// Validate reports the first field that is out of range, naming it and its value.
func (c Config) Validate() error {
	g := c.Gateway
	if _, _, err := net.SplitHostPort(g.Addr); err != nil {
		return fmt.Errorf("gateway.addr: %q is not host:port", g.Addr)
	}
	if _, _, err := net.SplitHostPort(g.GRPCAddr); g.GRPCAddr != "" && err != nil {
		return fmt.Errorf("gateway.grpc_addr: %q is not host:port", g.GRPCAddr)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"gateway.read_header_timeout", g.ReadHeaderTimeout}, {"gateway.read_timeout", g.ReadTimeout},
		{"gateway.write_timeout", g.WriteTimeout}, {"gateway.idle_timeout", g.IdleTimeout},
		{"gateway.backend_timeout", g.BackendTimeout}, {"gateway.retry_after", g.RetryAfter},
		{"gateway.sync_interval", g.SyncInterval}, {"gateway.grpc_max_connection_age", g.GRPCMaxConnectionAge},
		{"workers.start_timeout", c.Workers.StartTimeout},
		{"workers.health_interval", c.Workers.HealthInterval}, {"workers.stop_timeout", c.Workers.StopTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s: must be > 0, got %v", d.name, d.v)
		}
	}
	if g.MaxHeaderBytes <= 0 {
		return fmt.Errorf("gateway.max_header_bytes: must be > 0, got %d", g.MaxHeaderBytes)
	}
	if g.ShutdownGrace < 0 || g.ShutdownDelay < 0 || (g.ShutdownDelay > 0 && g.ShutdownDelay >= g.EffectiveShutdownGrace()) {
		return fmt.Errorf("gateway.shutdown_grace and gateway.shutdown_delay: must be ≥ 0 and the delay below the grace, got %v and %v", g.ShutdownGrace, g.ShutdownDelay)
	}
	if (g.TLSCert == "") != (g.TLSKey == "") {
		return fmt.Errorf("gateway.tls_cert and gateway.tls_key: set both or neither, got %q and %q", g.TLSCert, g.TLSKey)
	}
	if g.LogFormat != "" && g.LogFormat != "text" && g.LogFormat != "json" {
		return fmt.Errorf("gateway.log_format: must be text or json, got %q", g.LogFormat)
	}
	if !(g.AccessLogSample >= 0 && g.AccessLogSample <= 1) {
		return fmt.Errorf("gateway.access_log_sample: must be in [0, 1], got %v", g.AccessLogSample)
	}
	if u, err := url.Parse(g.OTLPEndpoint); g.OTLPEndpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("gateway.otlp_endpoint: %q is not an http(s)://host:port URL", g.OTLPEndpoint)
	}
	if err := telemetry.ValidateAdminAddr(g.AdminAddr); err != nil {
		return fmt.Errorf("gateway.admin_addr: %w", err)
	}
	if strings.ContainsAny(g.AdminToken, " \t\r\n") {
		return errors.New("gateway.admin_token: must not contain white space")
	}
	if g.MaxConnections < 0 {
		return fmt.Errorf("gateway.max_connections: must be ≥ 0, got %d", g.MaxConnections)
	}
	if g.MaxConnectionsPerClient < 0 {
		return fmt.Errorf("gateway.max_connections_per_client: must be ≥ 0, got %d", g.MaxConnectionsPerClient)
	}
	if g.GRPCMaxConcurrentStreams < 1 {
		return fmt.Errorf("gateway.grpc_max_concurrent_streams: must be ≥ 1, got %d", g.GRPCMaxConcurrentStreams)
	}
	if g.MaxBodyBytes <= 0 {
		return fmt.Errorf("gateway.max_body_bytes: must be > 0, got %d", g.MaxBodyBytes)
	}
	if g.MaxInflightBodyBytes < 3*g.MaxBodyBytes {
		return fmt.Errorf("gateway.max_inflight_body_bytes: must be ≥ three times gateway.max_body_bytes (%d), got %d", 3*g.MaxBodyBytes, g.MaxInflightBodyBytes)
	}
	if _, err := dispatch.New(g.Dispatch); err != nil {
		return fmt.Errorf("gateway.dispatch: %q is not one of %v", g.Dispatch, dispatch.Names())
	}
	switch c.Workers.Runtime {
	case "native", "onnxruntime":
	default:
		return fmt.Errorf("workers.runtime: must be native or onnxruntime, got %q", c.Workers.Runtime)
	}
	if err := c.Policies.Check(policy.PortModel, policy.PortCluster); err != nil {
		return err
	}
	if err := c.Controller.Validate(); err != nil {
		return err
	}
	if err := c.Serverless.Validate(); err != nil {
		return err
	}
	if c.Provider.Kind == ProviderKubernetes && c.Controller.PlacesInstances() {
		return fmt.Errorf("controller.policy: %s places instances on controller.cluster's servers, which only provider.kind local accounts for", c.Controller.Policy)
	}
	if err := c.validateReplicas(); err != nil {
		return err
	}
	if len(c.Models) == 0 && c.ModelRepository == "" {
		return errors.New("models: at least one model is required (or a model_repository)")
	}
	if c.ModelRepository != "" {
		if !(c.RepositoryPoll > 0) {
			return fmt.Errorf("model_repository_poll: must be > 0, got %v", c.RepositoryPoll)
		}
		if c.Provider.Kind != ProviderLocal && c.Provider.Kind != "" {
			return fmt.Errorf("model_repository: needs provider.kind local (its workers read the files), got %q", c.Provider.Kind)
		}
		for _, a := range c.Workers.Args {
			if a == "--model-dir" || a == "-model-dir" || strings.HasPrefix(a, "--model-dir=") || strings.HasPrefix(a, "-model-dir=") {
				return errors.New("model_repository: workers.args must not set --model-dir (the gateway gives the workers the repository's versions)")
			}
		}
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		p := fmt.Sprintf("models[%d]", i)
		switch {
		case m.Name == "":
			return fmt.Errorf("%s.name: must not be empty", p)
		case seen[m.Name]:
			return fmt.Errorf("%s.name: %q appears twice", p, m.Name)
		}
		seen[m.Name] = true
		if err := m.validate(p); err != nil {
			return err
		}
	}
	if err := c.Provider.validate(c.Models); err != nil {
		return err
	}
	return validateEnsembles(c.Models, c.Ensembles)
}

// validate checks a model's settings other than its name; p prefixes the field names.
func (m Model) validate(p string) error {
	switch {
	case m.SLO.Threshold < 0:
		return fmt.Errorf("%s.slo.threshold: must be > 0, got %v", p, m.SLO.Threshold)
	case !(m.SLO.ThresholdMS > 0):
		return fmt.Errorf("%s.slo.threshold_ms: must be > 0, got %v", p, m.SLO.ThresholdMS)
	case !(m.SLO.Target > 0 && m.SLO.Target <= 1):
		return fmt.Errorf("%s.slo.target: must be in (0, 1], got %v", p, m.SLO.Target)
	case m.Instances < 0:
		return fmt.Errorf("%s.instances: must be ≥ 0, got %d", p, m.Instances)
	case m.Slots < 1:
		return fmt.Errorf("%s.slots: must be ≥ 1, got %d", p, m.Slots)
	case m.QueueLimit < 1:
		return fmt.Errorf("%s.queue_limit: must be ≥ 1, got %d", p, m.QueueLimit)
	case m.MaxRows < 0:
		return fmt.Errorf("%s.max_rows: must be ≥ 0, got %d", p, m.MaxRows)
	case m.MaxBatchBytes < 0:
		return fmt.Errorf("%s.max_batch_bytes: must be ≥ 0, got %d", p, m.MaxBatchBytes)
	}
	if err := m.InstanceType.validate(p); err != nil {
		return err
	}
	if err := m.Batching.Validate(); err != nil {
		return fmt.Errorf("%s.%w", p, err)
	}
	return nil
}

// DecodeModel reads one model's settings — a models[] entry, as in a model repository's
// <model>/config.yaml — strictly over DefaultModel(name), fills batching.slo from
// slo.threshold_ms and validates it. A name in the data must equal name. Errors name the field.
func DecodeModel(data []byte, name string) (Model, error) {
	if len(data) > 1<<20 {
		return Model{}, errors.New("larger than 1 MiB")
	}
	m := DefaultModel(name)
	m.Batching.SLO = 0
	if err := strictDecode(data, &m); err != nil {
		return Model{}, err
	}
	m.SLO.normalize()
	if m.Name != name {
		return Model{}, fmt.Errorf("name: %q differs from the model's directory %q", m.Name, name)
	}
	if m.Batching.SLO == 0 {
		m.Batching.SLO = m.SLO.Spec().Threshold
	}
	if err := m.validate("model"); err != nil {
		return Model{}, err
	}
	return m, nil
}

// Decode reads a YAML configuration strictly (unknown fields are errors) over Default(); each
// model entry starts from DefaultModel, and its batching.slo is set from its slo.threshold_ms.
// The result is validated.
func Decode(r io.Reader) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	if len(data) > 1<<20 {
		return Config{}, errors.New("read config: larger than 1 MiB")
	}
	// yaml.v3 decodes a sequence into a fresh slice, so each model entry is decoded on its own,
	// strictly, over DefaultModel.
	c := Default()
	raw := struct {
		Gateway    *Gateway         `yaml:"gateway"`
		Provider   *Provider        `yaml:"provider"`
		Workers    *Workers         `yaml:"workers"`
		Models     []yaml.Node      `yaml:"models"`
		Ensembles  []yaml.Node      `yaml:"ensembles"`
		Controller *Controller      `yaml:"controller"`
		Repository *string          `yaml:"model_repository"`
		Poll       *time.Duration   `yaml:"model_repository_poll"`
		Policies   *policy.Sections `yaml:"policies"`
	}{Gateway: &c.Gateway, Provider: &c.Provider, Workers: &c.Workers, Controller: &c.Controller, Repository: &c.ModelRepository,
		Poll: &c.RepositoryPoll, Policies: &c.Policies}
	if err := movedControllerKeys(data); err != nil {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	if err := strictDecode(data, &raw); err != nil {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	for i := range raw.Models {
		m := DefaultModel("")
		m.Batching.SLO = 0
		b, err := yaml.Marshal(&raw.Models[i])
		if err == nil {
			err = strictDecode(b, &m)
		}
		if err != nil {
			return Config{}, fmt.Errorf("parse config: models[%d]: %w", i, err)
		}
		m.SLO.normalize()
		c.Models = append(c.Models, m)
	}
	if c.Ensembles, err = decodeEnsembles(raw.Ensembles); err != nil {
		return Config{}, err
	}
	for i := range c.Models {
		m := &c.Models[i]
		if m.Batching.SLO == 0 {
			m.Batching.SLO = m.SLO.Spec().Threshold
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// Load reads and validates the configuration file at path.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	c, err := Decode(f)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func strictDecode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// movedKeys are the controller keys that moved to a policy's options (one schema with the
// simulator), with their new place.
var movedKeys = map[string]string{
	"window":       "policies.<policy>.window (mark; sloserve: policies.sloserve.mark.window)",
	"lookahead":    "policies.<policy>.lookahead (mark; sloserve: policies.sloserve.mark.lookahead)",
	"headroom":     "policies.<policy>.headroom (mark; sloserve: policies.sloserve.mark.headroom)",
	"cool_down":    "policies.<policy>: mark.cool_down, sagemaker.tracking.scale_in_cooldown, infless.scale_down_after",
	"forecaster":   "policies.<policy>.forecaster (mark; sloserve: policies.sloserve.mark.forecaster)",
	"slo_window":   "policies.<policy>.slo_monitor.window (mark; sloserve: policies.sloserve.mark.slo_monitor.window)",
	"batch_budget": "policies.<policy>.batch_budget (mark; sloserve: policies.sloserve.mark.batch_budget)",
}

// movedControllerKeys names a controller key that moved to policies.<policy>, with where it went.
func movedControllerKeys(data []byte) error {
	var doc struct {
		Controller map[string]yaml.Node `yaml:"controller"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return nil // the strict decode reports it
	}
	for k := range doc.Controller {
		if to, ok := movedKeys[k]; ok {
			return fmt.Errorf("controller.%s: moved to %s (docs/config.md, \"One options schema\")", k, to)
		}
	}
	return nil
}

// needsServers reports whether a registered policy needs a cluster of servers (its Needs flag).
func needsServers(port policy.Port, name string) bool {
	s, ok := policy.Lookup(port, name)
	return ok && s.Needs&policy.NeedsServers != 0
}
