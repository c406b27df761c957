package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
)

// FileConfig is the YAML file `sloserve sim --config` reads (examples/sim.yaml). Every field is
// optional; relative paths are relative to the file's directory.
type FileConfig struct {
	// SLO is the latency objective (default 200 ms at 98 %, MArk §5.1).
	SLO *SLOConfig `yaml:"slo"`
	// Seed seeds arrivals, noise, launch delays and interruptions.
	Seed *uint64 `yaml:"seed"`
	// NoiseCV is the service-time coefficient of variation (default 0.05).
	NoiseCV *float64 `yaml:"noise_cv"`
	// RequestTimeout is the longest a request waits in a queue before failing (default 30 s).
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// Catalog is a catalog YAML file (default: cost.DefaultCatalog, examples/catalog.yaml).
	Catalog string `yaml:"catalog"`
	// SpotPrices is a spot price table in Cocktail's spot.csv form; SpotStep its step (default 5 min).
	SpotPrices string        `yaml:"spot_prices"`
	SpotStep   time.Duration `yaml:"spot_step"`
	// Model says where the model's profiles come from (default: sim.DefaultModel).
	Model *ModelConfig `yaml:"model"`
	// Policies holds each policy's options, keyed by policy name.
	Policies map[string]yaml.Node `yaml:"policies"`

	dir string
}

// SLOConfig is the SLO section of a FileConfig.
type SLOConfig struct {
	// Threshold is the latency bound; Target the fraction of requests that must meet it.
	Threshold time.Duration `yaml:"threshold"`
	Target    float64       `yaml:"target"`
}

// ModelConfig names the profile files of the served model. VM backends come from every VM source
// given (inferall, mlproxy, infless, worker, mark); the serverless curves from batch or inferall.
type ModelConfig struct {
	// Name names the model (default: the first source's model name).
	Name string `yaml:"name"`
	// InferAll reads inferall-lambda-vm-latency.json: VMs c5.large/xlarge/2xlarge and Lambda.
	InferAll *struct {
		File  string `yaml:"file"`
		Model string `yaml:"model"`
	} `yaml:"inferall"`
	// MLProxy reads a batch_profile_*.csv for a container type.
	MLProxy *struct {
		File    string `yaml:"file"`
		Service string `yaml:"service"`
		CPUm    int    `yaml:"cpu_m"`
		Type    string `yaml:"type"`
	} `yaml:"mlproxy"`
	// INFless reads an INFless profile for cpu threads and GPU SM percent on a type.
	INFless *struct {
		File string `yaml:"file"`
		CPU  int    `yaml:"cpu"`
		GPU  int    `yaml:"gpu"`
		Type string `yaml:"type"`
	} `yaml:"infless"`
	// Worker reads a `sloserve profile --json` file for a type (default: its instance_type).
	Worker *struct {
		File string `yaml:"file"`
		Type string `yaml:"type"`
	} `yaml:"worker"`
	// MArk reads mark-constants.json capacities of one of its models (tf, kr, mx, nmt).
	MArk *struct {
		File  string `yaml:"file"`
		Model string `yaml:"model"`
	} `yaml:"mark"`
	// Batch reads batch-lambda-polynomials.json for the serverless tier.
	Batch *struct {
		File  string `yaml:"file"`
		Model string `yaml:"model"`
	} `yaml:"batch"`
}

// LoadFileConfig reads and checks a FileConfig.
func LoadFileConfig(path string) (*FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read sim config: %w", err)
	}
	c, err := ParseFileConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	return c, nil
}

// ParseFileConfig decodes a FileConfig, rejecting unknown fields.
func ParseFileConfig(r io.Reader) (*FileConfig, error) {
	var c FileConfig
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse sim config: %w", err)
	}
	for name := range c.Policies {
		if _, ok := policy.Lookup(policy.PortModel, name); !ok {
			return nil, fmt.Errorf("policies.%s: %w (have %v)", name, sim.ErrUnknownPolicy, sim.Names())
		}
	}
	return &c, nil
}

func (c *FileConfig) path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// Apply sets cfg's fields the file sets.
func (c *FileConfig) Apply(cfg *sim.Config) error {
	if c.SLO != nil {
		cfg.SLO = slo.Spec{Threshold: c.SLO.Threshold, Target: c.SLO.Target}
	}
	if c.Seed != nil {
		cfg.Seed = *c.Seed
	}
	if c.NoiseCV != nil {
		cfg.NoiseCV = *c.NoiseCV
	}
	if c.RequestTimeout != 0 {
		cfg.RequestTimeout = c.RequestTimeout
	}
	if c.SpotPrices != "" {
		f, err := os.Open(c.path(c.SpotPrices))
		if err != nil {
			return fmt.Errorf("spot_prices: %w", err)
		}
		defer f.Close()
		step := c.SpotStep
		if step == 0 {
			step = 5 * time.Minute
		}
		cols, err := cost.ReadSpotPrices(f, step)
		if err != nil {
			return fmt.Errorf("spot_prices: %w", err)
		}
		cfg.SpotPrices = map[string]cost.PriceSeries{}
		for col, s := range cols {
			name := col
			if t, ok := cost.CocktailSpotColumns[col]; ok {
				name = t
			}
			cfg.SpotPrices[name] = s
		}
	}
	return cfg.Validate()
}

// LoadCatalog returns the configured catalog (the default when none is named).
func (c *FileConfig) LoadCatalog() (cost.Catalog, error) {
	if c == nil || c.Catalog == "" {
		return cost.DefaultCatalog(), nil
	}
	f, err := os.Open(c.path(c.Catalog))
	if err != nil {
		return cost.Catalog{}, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	return cost.Load(f)
}

// Decoder returns the Env.Decode function for a policy's options.
func (c *FileConfig) Decoder(name string) func(v any) error {
	if c == nil {
		return func(any) error { return nil }
	}
	return policy.Sections(c.Policies).Decoder(name, c.path)
}

// LoadModel builds the model profile the file describes (sim.DefaultModel when it names none).
func (c *FileConfig) LoadModel() (profile.Model, error) {
	if c == nil || c.Model == nil {
		return sim.DefaultModel(), nil
	}
	mc := c.Model
	m := profile.Model{Name: mc.Name, VM: map[string]profile.Backend{}}
	open := func(field, p string) (*os.File, error) {
		if p == "" {
			return nil, fmt.Errorf("model.%s.file: must be set", field)
		}
		f, err := os.Open(c.path(p))
		if err != nil {
			return nil, fmt.Errorf("model.%s: %w", field, err)
		}
		return f, nil
	}
	setName := func(n string) {
		if m.Name == "" {
			m.Name = n
		}
	}
	if s := mc.InferAll; s != nil {
		f, err := open("inferall", s.File)
		if err != nil {
			return m, err
		}
		ia, err := profile.ReadInferAll(f)
		f.Close()
		if err != nil {
			return m, err
		}
		im, err := ia.Model(s.Model)
		if err != nil {
			return m, fmt.Errorf("model.inferall: %w", err)
		}
		setName(im.Name)
		for t, b := range im.VM {
			m.VM[t] = b
		}
		m.Serverless = im.Serverless
	}
	if s := mc.MLProxy; s != nil {
		f, err := open("mlproxy", s.File)
		if err != nil {
			return m, err
		}
		rows, err := profile.ReadMLProxy(f)
		f.Close()
		if err != nil {
			return m, err
		}
		if s.Service == "" {
			s.Service = rows[0].Service
		}
		cv, err := profile.MLProxyCurve(rows, s.Service, s.CPUm)
		if err != nil {
			return m, fmt.Errorf("model.mlproxy: %w", err)
		}
		if s.Type == "" {
			return m, fmt.Errorf("model.mlproxy.type: must name the container's instance type")
		}
		setName(s.Service)
		m.VM[s.Type] = profile.Backend{Curve: cv, Slots: 1}
	}
	if s := mc.INFless; s != nil {
		f, err := open("infless", s.File)
		if err != nil {
			return m, err
		}
		p, err := profile.ReadINFless(f)
		f.Close()
		if err != nil {
			return m, err
		}
		cv, err := p.Curve(s.CPU, s.GPU)
		if err != nil {
			return m, fmt.Errorf("model.infless: %w", err)
		}
		if s.Type == "" {
			return m, fmt.Errorf("model.infless.type: must name the instance type")
		}
		setName(p.Model)
		m.VM[s.Type] = profile.Backend{Curve: cv, Slots: 1}
	}
	if s := mc.Worker; s != nil {
		f, err := open("worker", s.File)
		if err != nil {
			return m, err
		}
		p, err := profile.ReadWorkerProfile(f)
		f.Close()
		if err != nil {
			return m, err
		}
		b, _ := p.Backend()
		t := s.Type
		if t == "" {
			t = p.InstanceType
		}
		if t == "" {
			return m, fmt.Errorf("model.worker.type: must name the instance type")
		}
		setName(p.Model)
		m.VM[t] = b
	}
	if s := mc.MArk; s != nil {
		f, err := open("mark", s.File)
		if err != nil {
			return m, err
		}
		caps, err := profile.ReadMArk(f)
		f.Close()
		if err != nil {
			return m, err
		}
		cs, ok := caps[s.Model]
		if !ok {
			return m, fmt.Errorf("model.mark.model: unknown %q", s.Model)
		}
		setName(s.Model)
		for _, c := range cs {
			m.VM[c.Type] = profile.Backend{Curve: c.Curve(), Slots: 1}
		}
	}
	if s := mc.Batch; s != nil {
		f, err := open("batch", s.File)
		if err != nil {
			return m, err
		}
		ps, err := profile.ReadBatchPolynomials(f)
		f.Close()
		if err != nil {
			return m, err
		}
		p, ok := ps[s.Model]
		if !ok {
			return m, fmt.Errorf("model.batch.model: unknown %q", s.Model)
		}
		setName(s.Model)
		m.Serverless = p
	}
	if len(m.VM) == 0 && m.Serverless == nil {
		return m, fmt.Errorf("model: no profile source given")
	}
	return m, nil
}
