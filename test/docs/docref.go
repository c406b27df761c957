// Package docs generates docs/config.md, the configuration reference, from the configuration
// structs themselves: field names from their yaml tags (by reflection), types from the Go types,
// defaults from the packages' own Default functions (or, for simulator policies, from the options
// value each policy factory builds before it decodes its section), and descriptions from the
// fields' doc comments (parsed from the source). Its tests fail when the committed reference is
// out of date or misses a field; `go run ./test/docs/gen` (or `go test ./test/docs -update`)
// rewrites it.
package docs

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/experiment"
	"github.com/sloserve/sloserve/internal/sim"
)

// ModulePath is the Go module whose packages' sources hold the doc comments.
const ModulePath = "github.com/sloserve/sloserve"

// ConfigDoc is the path of the generated reference, relative to the repository root.
const ConfigDoc = "docs/config.md"

// Section is one configuration file (or one part of it) documented as a table.
type Section struct {
	// Title is the section's heading.
	Title string
	// Intro is the Markdown paragraph under the heading.
	Intro string
	// Prefix is the yaml path of the section's root within its file ("" for the file's root).
	Prefix string
	// Default is the value whose fields are documented; its field values are the defaults.
	Default any
	// Elems holds, per yaml path of a list field, the default value of a new list element.
	Elems map[string]any
}

// Row is one documented field.
type Row struct {
	// Path is the field's dotted yaml path; list elements are written path[].field.
	Path string
	// Type is a short description of the YAML value the field takes.
	Type string
	// Default is the default, formatted for the table ("—" when unset or not applicable).
	Default string
	// Doc is the field's doc comment on one line.
	Doc string
}

// errCaptured stops a policy factory after its options have been captured.
var errCaptured = errors.New("options captured")

// policyOptions returns, per registered simulator policy, the options value its factory fills
// with defaults before decoding the config's policies.<name> section (nil for a policy that reads
// no options).
func policyOptions() (map[string]any, error) {
	cat := cost.DefaultCatalog()
	out := map[string]any{}
	for _, name := range sim.Names() {
		var captured any
		env := sim.Env{
			Catalog: &cat,
			Model:   sim.DefaultModel(),
			SLO:     sim.DefaultConfig().SLO,
			Load:    sim.LoadStats{MeanRPS: 10, PeakRPS: 20},
			Decode: func(v any) error {
				rv := reflect.ValueOf(v)
				if rv.Kind() != reflect.Pointer || rv.IsNil() {
					return fmt.Errorf("decode target %T is not a pointer", v)
				}
				cp := reflect.New(rv.Elem().Type())
				cp.Elem().Set(rv.Elem())
				captured = cp.Elem().Interface()
				return errCaptured
			},
		}
		_, err := sim.New(name, env)
		switch {
		case captured != nil:
			out[name] = captured
		case err == nil, errors.Is(err, sim.ErrNotImplemented):
			out[name] = nil
		default:
			return nil, fmt.Errorf("policy %s: %w", name, err)
		}
	}
	return out, nil
}

// fileConfigDefaults is an experiment.FileConfig holding the values the simulator uses when the file
// leaves a field out.
func fileConfigDefaults() experiment.FileConfig {
	d := sim.DefaultConfig()
	seed, cv := d.Seed, d.NoiseCV
	return experiment.FileConfig{
		SLO:            &experiment.SLOConfig{Threshold: d.SLO.Threshold, Target: d.SLO.Target},
		Seed:           &seed,
		NoiseCV:        &cv,
		RequestTimeout: d.RequestTimeout,
		// SpotStep's default is applied in FileConfig.Apply (5 min, Cocktail's spot.csv step).
		SpotStep: 5 * time.Minute,
	}
}

// Sections returns every documented section, in the order of the reference.
func Sections() ([]Section, error) {
	pols, err := policyOptions()
	if err != nil {
		return nil, err
	}
	serve := config.Default()
	secs := []Section{
		{
			Title: "Serve configuration (`sloserve serve --config`)",
			Intro: "Package `internal/config` (`config.Config`; example `examples/serve.yaml`). Decoding is strict " +
				"(an unknown field is an error) over `config.Default()`; each `models[]` entry starts from " +
				"`config.DefaultModel`, and its `batching.slo` defaults to its `slo.threshold_ms`. " +
				"Without `--config`, `serve` serves every bundled model with these defaults and `mlproxy` batching.",
			Default: serve,
			Elems:   map[string]any{"models": config.DefaultModel("")},
		},
		{
			Title: "Simulator configuration (`sloserve sim --config`)",
			Intro: "Package `internal/experiment` (`experiment.FileConfig`; examples `examples/sim-mlproxy-toxic.yaml`, " +
				"`docs/mark-sim.yaml`). Every field is optional; relative paths are relative to the file's " +
				"directory; unknown fields are errors. Command-line flags (`--slo-ms`, `--slo-target`, `--seed`) " +
				"override the file. Without `model`, the model is `sim.DefaultModel()` (Inception on c5 VMs and Lambda). " +
				"Each `policies.<name>` section is documented [below](#policy-options-policiesname).",
			Default: fileConfigDefaults(),
		},
		{
			Title: "Instance catalog (`catalog:` of a sim config)",
			Intro: "Package `internal/cost` (`cost.Catalog`, read by `cost.Load`; the default is `cost.DefaultCatalog()`, " +
				"written out as `examples/catalog.yaml`). Fields left out keep the default's `billing`, `serverless` " +
				"and `spot` values; a `types` list replaces the default list as a whole, so list entries have no " +
				"per-field defaults (see `examples/catalog.yaml` for the default types). Spot variants of a type are " +
				"named `<type>/spot`.",
			Default: cost.DefaultCatalog(),
		},
	}
	names := make([]string, 0, len(pols))
	for n := range pols {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := pols[n]
		s := Section{
			Title:  "`policies." + n + "`",
			Prefix: "policies." + n,
			Intro:  sim.Summary(n) + ".",
		}
		if o == nil {
			s.Intro += " Reads no options on this engine."
		} else {
			s.Default = o
			s.Intro += fmt.Sprintf(" Options type `%s` (package `%s`); the defaults are what the policy's "+
				"factory sets before decoding the section, with the default SLO (200 ms at 98 %%) and model.",
				reflect.TypeOf(o).String(), strings.TrimPrefix(reflect.TypeOf(o).PkgPath(), "github.com/sloserve/sloserve/"))
		}
		secs = append(secs, s)
	}
	return secs, nil
}

// Root returns the repository root: the nearest directory above the working directory that holds
// go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = up
	}
}

// comments finds the doc comments of struct fields in the module's package sources.
type comments struct {
	root  string
	fset  *token.FileSet
	types map[string]map[string]*ast.StructType // package path → type name → struct
}

func newComments(root string) *comments {
	return &comments{root: root, fset: token.NewFileSet(), types: map[string]map[string]*ast.StructType{}}
}

// structOf returns the AST of the named struct type t, or nil when its source is not in the module.
func (c *comments) structOf(t reflect.Type) (*ast.StructType, error) {
	pkg := t.PkgPath()
	if pkg != ModulePath && !strings.HasPrefix(pkg, ModulePath+"/") {
		return nil, nil
	}
	m, ok := c.types[pkg]
	if !ok {
		m = map[string]*ast.StructType{}
		dir := filepath.Join(c.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, ModulePath), "/")))
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(c.fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if ts, ok := n.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						m[ts.Name.Name] = st
					}
				}
				return true
			})
		}
		c.types[pkg] = m
	}
	return m[t.Name()], nil
}

// fieldDocs maps each field name of st to its doc comment on one line; a field without a comment
// inherits the previous field's (Go groups related fields under one comment). It also returns the
// AST of each field's inline struct type, if any.
func fieldDocs(st *ast.StructType) (map[string]string, map[string]*ast.StructType) {
	docs, inline := map[string]string{}, map[string]*ast.StructType{}
	if st == nil {
		return docs, inline
	}
	prev := ""
	for _, f := range st.Fields.List {
		d := ""
		if f.Doc != nil {
			d = f.Doc.Text()
		} else if f.Comment != nil {
			d = f.Comment.Text()
		}
		d = strings.Join(strings.Fields(d), " ")
		if d == "" {
			d = prev
		}
		prev = d
		ty := f.Type
		for {
			switch x := ty.(type) {
			case *ast.StarExpr:
				ty = x.X
				continue
			case *ast.ArrayType:
				ty = x.Elt
				continue
			case *ast.MapType:
				ty = x.Value
				continue
			}
			break
		}
		for _, n := range f.Names {
			docs[n.Name] = d
			if s, ok := ty.(*ast.StructType); ok {
				inline[n.Name] = s
			}
		}
	}
	return docs, inline
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// yamlName returns the field's yaml key, or "" when the field is not in the YAML.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	switch name {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return name
}

// typeName describes the YAML value a field of type t takes.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "duration"
	case t == nodeType:
		return "mapping"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct:
		return "mapping"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Struct && t.Elem() != durationType {
			return "list of mappings"
		}
		return "list of " + typeName(t.Elem()) + "s"
	case reflect.Map:
		return "mapping of " + typeName(t.Key()) + " → " + typeName(t.Elem())
	}
	return t.Kind().String()
}

// formatDuration writes d as a YAML duration without trailing zero units ("1m", "1h30m", "500ms").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatDefault formats a leaf value for the table.
func formatDefault(v reflect.Value) string {
	if !v.IsValid() {
		return "—"
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "—"
		}
		v = v.Elem()
	}
	if v.Type() == durationType {
		return "`" + formatDuration(time.Duration(v.Int())) + "`"
	}
	switch v.Kind() {
	case reflect.String:
		return "`" + strconv.Quote(v.String()) + "`"
	case reflect.Bool:
		return "`" + strconv.FormatBool(v.Bool()) + "`"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "`" + strconv.FormatInt(v.Int(), 10) + "`"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "`" + strconv.FormatUint(v.Uint(), 10) + "`"
	case reflect.Float32, reflect.Float64:
		exact := strconv.FormatFloat(v.Float(), 'g', -1, 64)
		if short := strconv.FormatFloat(v.Float(), 'g', 6, 64); short != exact {
			return "≈ `" + short + "`"
		}
		return "`" + exact + "`"
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return "`[]`"
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			return fmt.Sprintf("%d entries", v.Len())
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = strings.Trim(formatDefault(v.Index(i)), "`")
		}
		return "`[" + strings.Join(parts, ", ") + "]`"
	case reflect.Map:
		if v.Len() == 0 {
			return "—"
		}
		return fmt.Sprintf("%d entries", v.Len())
	case reflect.Struct:
		return ""
	}
	return fmt.Sprint(v.Interface())
}

// Rows walks a section's value and returns one row per yaml field, depth first in field order.
func Rows(root string, s Section) ([]Row, error) {
	if s.Default == nil {
		return nil, nil
	}
	c := newComments(root)
	var rows []Row
	var walk func(prefix string, t reflect.Type, v reflect.Value, st *ast.StructType) error
	walk = func(prefix string, t reflect.Type, v reflect.Value, st *ast.StructType) error {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for v.IsValid() && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.Value{}
			} else {
				v = v.Elem()
			}
		}
		if st == nil && t.Name() != "" {
			var err error
			if st, err = c.structOf(t); err != nil {
				return err
			}
		}
		docs, inline := fieldDocs(st)
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlName(f)
			if name == "" {
				continue
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			ft := f.Type
			doc := docs[f.Name]
			if doc == "" {
				doc = Supplements[genericPath(path)]
			}
			if n := Notes[genericPath(path)]; n != "" {
				doc += " " + n
			}
			rows = append(rows, Row{Path: path, Type: typeName(ft), Default: formatDefault(fv), Doc: strings.TrimSpace(doc)})
			if rows[len(rows)-1].Default == "" {
				rows[len(rows)-1].Default = "—"
			}
			base := ft
			for base.Kind() == reflect.Pointer {
				base = base.Elem()
			}
			switch {
			case base == durationType || base == nodeType:
			case base.Kind() == reflect.Struct:
				if err := walk(path, base, fv, inline[f.Name]); err != nil {
					return err
				}
			case base.Kind() == reflect.Slice && base.Elem().Kind() == reflect.Struct:
				var ev reflect.Value
				if e, ok := s.Elems[path]; ok {
					ev = reflect.ValueOf(e)
				}
				if err := walk(path+"[]", base.Elem(), ev, inline[f.Name]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(s.Prefix, reflect.TypeOf(s.Default), reflect.ValueOf(s.Default), nil); err != nil {
		return nil, err
	}
	return rows, nil
}

// Supplements describes fields whose struct has no doc comment to copy (the anonymous structs of
// experiment.ModelConfig), keyed by generic path (see genericPath). The owners of those structs may
// document the fields instead; a struct comment always wins.
var Supplements = map[string]string{
	"model.inferall.file":   "File is the path of InferAll's inferall-lambda-vm-latency.json.",
	"model.inferall.model":  "Model is the model's name in that file.",
	"model.mlproxy.file":    "File is the path of an MLProxy batch_profile_*.csv.",
	"model.mlproxy.service": "Service is the profiled service's name in the file (default: the first row's).",
	"model.mlproxy.cpu_m":   "CPUm selects the rows of this container CPU limit, in millicores.",
	"model.mlproxy.type":    "Type is the catalog instance type the container runs as (required).",
	"model.infless.file":    "File is the path of an INFless profile.",
	"model.infless.cpu":     "CPU selects the profile's points with this many CPU threads.",
	"model.infless.gpu":     "GPU selects the profile's points with this GPU SM share, in percent.",
	"model.infless.type":    "Type is the catalog instance type (required).",
	"model.worker.file":     "File is the path of a `sloserve profile --json` output.",
	"model.worker.type":     "Type is the catalog instance type (default: the file's instance_type).",
	"model.mark.file":       "File is the path of MArk's mark-constants.json.",
	"model.mark.model":      "Model is one of the file's models: tf, kr, mx or nmt.",
	"model.batch.file":      "File is the path of BATCH's batch-lambda-polynomials.json.",
	"model.batch.model":     "Model is one of the file's models: TF-resnetV2, TF-inceptionV4 or mxnet-resnet50.",
}

// Notes adds, to a field's doc comment, what the reference must say about a default that is
// derived at run time rather than fixed, keyed by generic path.
var Notes = map[string]string{
	"models[].batching.slo":                           "Default: the model's `slo.threshold_ms`.",
	"models[].batching.policy":                        "(`serve` without `--config`: `mlproxy`.)",
	"policies.*.batching.slo":                         "Default: the run's SLO threshold.",
	"policies.mark.slo_monitor.target":                "Default: the run's SLO target.",
	"policies.sagemaker.tracking.target_per_instance": "0 (the default) derives it: one instance's capacity per period / `over_provisioning`.",
}

// genericPath replaces the policy name of a policies.<name>.… path by * when the rest of the path
// is shared by several policies' options (knative and mlproxy share sim.MLProxyOptions).
func genericPath(path string) string {
	if rest, ok := strings.CutPrefix(path, "policies."); ok {
		if _, tail, ok := strings.Cut(rest, "."); ok && strings.HasPrefix(tail, "batching.") {
			return "policies.*." + tail
		}
	}
	return path
}

// header is the hand-written top of docs/config.md.
const header = `# Configuration reference

<!-- Generated by ` + "`go run ./test/docs/gen`" + ` from the configuration structs; do not edit by hand.
     ` + "`go test ./test/docs`" + ` fails when this file is out of date or misses a field. -->

Every field of every configuration file sloserve reads, with its YAML type, its default and its
doc comment (which names the unit). Types: *duration* is a Go duration string (` + "`500ms`, `30s`, `5m`, `1h`" + `);
*number* a decimal; a path ` + "`a[].b`" + ` is field ` + "`b`" + ` of every entry of list ` + "`a`" + `. "—" means unset (the
description says what applies then) or, for list entries, no per-entry default. Every decoder is
strict: an unknown field is an error naming it, and a value out of range is an error naming the field
and the value.

Files: [serve](#serve-configuration-sloserve-serve---config) ·
[sim](#simulator-configuration-sloserve-sim---config) ·
[catalog](#instance-catalog-catalog-of-a-sim-config) ·
[policy options](#policy-options-policiesname)
`

// policiesIntro opens the policy options: one schema for serve and sim, and the live preset.
const policiesIntro = "\n## Policy options (`policies.<name>`)\n\n" +
	"### One options schema\n\n" +
	"Each registered policy reads its own section, `policies.<name>`, of a sim config and of a serve config " +
	"alike: the same Options struct, the same field names and units, decoded strictly (an unknown policy " +
	"name or field is an error naming it). `sloserve serve` builds `controller.policy` through the same " +
	"registry as `sloserve sim` (`controller.NewModel`), and `test/livesim` checks that one policy decides " +
	"the same driven by either. How each policy decides: [decide/](README.md#how-sloserve-decides).\n\n" +
	"### The live preset\n\n" +
	"The defaults below are the papers' (cloud VMs that launch in minutes, a one-minute planning unit). " +
	"Live, local workers start in seconds, so `serve` applies a preset before the config's own section, " +
	"derived from `controller.unit` (default 5 s, standing for the papers' minute) and the model's facts " +
	"(`internal/controller/live.go`): MArk's P_s = `controller.sample_interval`, P_u = unit, P_w = one " +
	"minute of units, τ = one unit, cool-down six units, SLO monitor over 500 requests with a two-unit " +
	"quiet period, the instance type as the only candidate and `controller.max_instances` as the plan's " +
	"bound (`mark`, `sloserve.mark`); `sloserve.min_instances` = `controller.min_instances` and LSTH on " +
	"the unit's clock; target tracking's period and scale-out cool-down one unit, scale-in six units, at " +
	"EC2 pricing (`sagemaker`); Knative's target half an instance's capacity within the SLO, ticking at " +
	"the sample interval (`knative`); `fixed` at the model's `instances`; INFless without lending or " +
	"spares, its case (iii) hold six units (`infless`). The live world has no serverless tier: a policy " +
	"sees that as a fact (MArk's Bouncer keeps every request on the fleet; sloserve keeps " +
	"`min_instances`), and a policy with no VM fleet (`lambda`, `batch`) is refused.\n"

// Render returns the Markdown of docs/config.md.
func Render(root string) (string, error) {
	secs, err := Sections()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(header)
	policies := false
	for _, s := range secs {
		level := "##"
		if s.Prefix != "" {
			if !policies {
				b.WriteString(policiesIntro)
				policies = true
			}
			level = "###"
		}
		fmt.Fprintf(&b, "\n%s %s\n\n%s\n", level, s.Title, s.Intro)
		rows, err := Rows(root, s)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Title, err)
		}
		if len(rows) == 0 {
			continue
		}
		b.WriteString("\n| field | type | default | description |\n| --- | --- | --- | --- |\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Path, r.Type, r.Default, strings.ReplaceAll(r.Doc, "|", `\|`))
		}
	}
	return b.String(), nil
}
